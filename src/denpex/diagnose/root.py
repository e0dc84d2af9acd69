"""Choose the root: the first real failure, not the loudest cascade.

Candidates are findings whose signature can start a failure (role ``root``). Among those that
happened within ``WINDOW_S`` of the earliest one (or carry no time), the highest priority
wins, then the earliest. The window exists because the line that explains a failure is often
logged a moment after the line that reports it (a kernel Xid a second after the CUDA error it
caused). When no root candidate exists, the earliest cascade/symptom line stands in and the
owner is usually ``unknown``.

Node evidence joined to a failing rank's GPU (same PCI bus id, or a single-host kernel log in
the same window) gets a boost, so the Xid behind a rank's CUDA error outranks the error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from denpex.diagnose.findings import Finding
from denpex.diagnose.timeline import absolute_time, ordered, seconds_between

WINDOW_S = 300.0
OTHER_HOST_WINDOW_S = 60.0  # a later failure on another node must be this close to count as the cause
NODE_BOOST = 15
NODE_FAMILIES = ("xid", "sxid", "driver", "ecc", "kernel", "dcgm")


@dataclass
class RootChoice:
    root: Finding | None
    reason: str
    fired: list[tuple[str, list[Finding]]] = field(default_factory=list)
    competing: list[Finding] = field(default_factory=list)


def _earliest(cands: list[Finding]) -> Finding:
    evs = ordered([c.event for c in cands])
    first = evs[0]
    return next(c for c in cands if c.event is first)


def choose_root(failures: list[Finding]) -> RootChoice:
    if not failures:
        return RootChoice(None, "no failure found")
    roots = [f for f in failures if f.role == "root"]
    fired: list[tuple[str, list[Finding]]] = []
    if not roots:
        # The most telling cascade or symptom line (priority), then the earliest of those.
        best = max(f.priority for f in failures)
        pick = _earliest([f for f in failures if f.priority == best])
        cause = _cause_before_reaction(pick, failures)
        if cause is not None:
            return RootChoice(cause, REACTION_REASON, [("reaction_follows_error", [cause, pick])])
        detail = _detail_of(pick, failures)
        if detail is not None:
            return RootChoice(detail, DETAIL_REASON, [("detail_follows", [pick, detail])])
        return RootChoice(pick, "only cascade or symptom lines: the most telling, earliest one stands in")
    first = _earliest(roots)
    t0 = absolute_time(first.event)
    if all(c.sig.family in NODE_FAMILIES for c in roots):
        # Node evidence alone (a kernel log, nvidia-smi -q) spans days of unrelated events:
        # what an operator needs first is the most severe one, not the oldest.
        best = max(c.priority for c in roots)
        pick = _earliest([c for c in roots if c.priority == best])
        return RootChoice(pick, "node evidence only: the most severe finding, then the earliest")
    window: list[Finding] = []
    for c in roots:
        t = absolute_time(c.event)
        if t0 is None or t is None:
            window.append(c)
            continue
        other_host = bool(c.event.host and first.event.host and c.event.host != first.event.host)
        if (t - t0).total_seconds() <= (OTHER_HOST_WINDOW_S if other_host else WINDOW_S):
            window.append(c)
    app = [c for c in window if c.sig.family not in NODE_FAMILIES]
    for c in window:
        if c.sig.family in NODE_FAMILIES and c.sig.owner not in ("unknown",) and _joined(c, app):
            c.priority = c.sig.priority + NODE_BOOST
            fired.append(("node_evidence_joined", [c]))
    best = max(c.priority for c in window)
    top = [c for c in window if c.priority == best]
    # The same failure reported first as a warning ("WARNING: failed to allocate pinned
    # memory: CUDA driver version is insufficient") and then as the error that ended the run:
    # the error is the line to point at.
    errors = [c for c in top if not _WARNING_LINE.match(c.event.text)]
    pick = _earliest(errors or top)
    raised = _exception_behind_exit(pick, failures)
    if raised is not None:
        return RootChoice(raised, EXIT_REASON, [*fired, ("exception_behind_exit", [raised, pick])])
    detail = _detail_of(pick, failures)
    if detail is not None:
        fired.append(("detail_follows", [pick, detail]))
        pick = detail
    competing = [c for c in window if c is not pick and c.priority >= best - 10 and c.sig.owner != pick.sig.owner]
    reason = "highest-priority failure within the first failure's window"
    if pick is first:
        reason = "first failure in time"
    if detail is not None:
        reason = DETAIL_REASON
    return RootChoice(pick, reason, fired, competing)


# Symptoms that are someone's reaction to the job, not a fault of their own: a cancel with no
# reason in its banner (scancel by the owner, a workflow tool, srun ending a step whose task
# failed).
REACTION_CATEGORIES = frozenset({"job_cancelled"})
REACTION_REASON = "the cancel came after an error in the same output: the error is what it reacted to"


def _cause_before_reaction(pick: Finding, failures: list[Finding]) -> Finding | None:
    """The most telling error printed above a reaction line in the same source, if any."""
    if pick.sig.category not in REACTION_CATEGORIES:
        return None
    ev = pick.event
    before = [f for f in failures if f.event.source_index == ev.source_index and f.event.line_no < ev.line_no
              and f.role == "symptom" and f.sig.category not in REACTION_CATEGORIES]
    if not before:
        return None
    best = max(f.priority for f in before)
    return min((f for f in before if f.priority == best), key=lambda f: f.event.line_no)


# A launcher's report that a worker exited with status 1 (torchrun's "failed (exitcode: 1)
# local_rank: 0") says a Python exception ended it; the exception, printed before it, is the
# line to point at, however generic.
EXIT_CATEGORIES = frozenset({"worker_exit"})
EXIT_REASON = "the worker exited with status 1 after this exception: the exception is what ended it"


def _exception_behind_exit(pick: Finding, failures: list[Finding]) -> Finding | None:
    """The most telling Python exception printed before a launcher's exit-status-1 report."""
    if pick.sig.category not in EXIT_CATEGORIES or pick.event.fields.get("exit_code") != "1":
        return None
    ev = pick.event
    before: list[Finding] = []
    for f in failures:
        if f.sig.family != "python" or f.role != "symptom":
            continue
        if f.event.source_index == ev.source_index:
            if f.event.line_no < ev.line_no:
                before.append(f)
            continue
        secs = seconds_between(f.event, ev)
        if secs is None or 0 <= secs <= WINDOW_S:
            before.append(f)
    if not before:
        return None
    best = max(f.priority for f in before)
    return _earliest([f for f in before if f.priority == best])


DETAIL_LINES = 2  # how far below an announcing line its detail may be
DETAIL_REASON = "the line below spells out the error the failure line announces"


def _detail_of(pick: Finding, failures: list[Finding]) -> Finding | None:
    """The failure spelled out on the line(s) just below a line that only announces it."""
    if not pick.sig.detail_follows:
        return None
    ev = pick.event
    below = [f for f in failures
             if f.event.source_index == ev.source_index and 0 < f.event.line_no - ev.line_no <= DETAIL_LINES
             and f.role in ("root", "symptom") and not f.sig.detail_follows]
    return min(below, key=lambda f: f.event.line_no) if below else None


_WARNING_LINE = re.compile(r"^\W{0,4}(?:WARNING|Warning|WARN)\b|^W\d{4} \d\d:\d\d:\d\d")


def _joined(node: Finding, app: list[Finding]) -> bool:
    """Whether node evidence plausibly concerns the GPU of a failing application rank."""
    for a in app:
        if node.event.pci_bus_id and a.event.pci_bus_id and node.event.pci_bus_id == a.event.pci_bus_id:
            return True
        secs = seconds_between(node.event, a.event)
        if secs is not None and abs(secs) <= WINDOW_S:
            return True
    return not app
