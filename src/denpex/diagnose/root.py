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
from collections.abc import Callable
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
        pick = _most_telling(failures)
        earlier = _earlier_cause(pick, failures)
        if earlier is not None:
            cause, rule = earlier
            return RootChoice(cause, rule.reason, [(rule.name, [cause, pick])])
        detail = _detail_of(pick, failures)
        if detail is not None:
            return RootChoice(detail, DETAIL_REASON, [("detail_follows", [pick, detail])])
        return RootChoice(pick, "only cascade or symptom lines: the most telling, earliest one stands in")
    first = _earliest(roots)
    t0 = absolute_time(first.event)
    if all(c.sig.family in NODE_FAMILIES for c in roots):
        # Node evidence alone (a kernel log, nvidia-smi -q) spans days of unrelated events:
        # what an operator needs first is the most severe one, not the oldest.
        return RootChoice(_most_telling(roots), "node evidence only: the most severe finding, then the earliest")
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
    earlier = _earlier_cause(pick, failures)
    if earlier is not None:
        cause, rule = earlier
        return RootChoice(cause, rule.reason, [*fired, (rule.name, [cause, pick])])
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


def _most_telling(cands: list[Finding]) -> Finding:
    """The highest-priority finding, the earliest of those."""
    best = max(f.priority for f in cands)
    return _earliest([f for f in cands if f.priority == best])


@dataclass(frozen=True)
class YieldRule:
    """A line that reports how a job ended, and the earlier failure that says why, which it yields to.

    ``applies`` tells whether the picked line is such a report; ``explains`` which failures
    printed before it can be its cause; with ``any_source`` they may come from another file
    (untimed, or at most WINDOW_S before it), otherwise only from above it in its own.
    """

    name: str
    reason: str
    applies: Callable[[Finding], bool]
    explains: Callable[[Finding], bool]
    any_source: bool


YIELD_RULES = {
    # A cancel with no reason in its banner is someone's reaction (scancel by the owner, a
    # workflow tool, srun ending a step whose task failed): the error above it is what it reacted to.
    "job_cancelled": YieldRule(
        "reaction_follows_error",
        "a cancel with no reason came after an error in the same output: the error is what it reacted to",
        applies=lambda pick: True,
        explains=lambda f: f.role == "symptom" and f.sig.category != "job_cancelled",
        any_source=False),
    # A launcher's report that a worker exited with status 1 (torchrun's "failed (exitcode: 1)
    # local_rank: 0") says a Python exception ended it: that exception, however generic.
    "worker_exit": YieldRule(
        "exception_behind_exit",
        "the worker exited with status 1 after this exception: the exception is what ended it",
        applies=lambda pick: pick.event.fields.get("exit_code") == "1",
        explains=lambda f: (f.sig.family == "python" and f.role == "symptom") or (f.raised and f.role != "root"),
        any_source=True),
}
RULE_REASONS = {rule.name: rule.reason for rule in YIELD_RULES.values()}


def _earlier_cause(pick: Finding, failures: list[Finding]) -> tuple[Finding, YieldRule] | None:
    """The most telling failure printed before a line that only reports how the job ended."""
    rule = YIELD_RULES.get(pick.sig.category)
    if rule is None or not rule.applies(pick):
        return None
    ev = pick.event
    before: list[Finding] = []
    for f in failures:
        if f is pick or not rule.explains(f):
            continue
        if f.event.source_index == ev.source_index:
            if f.event.line_no < ev.line_no:
                before.append(f)
        elif rule.any_source:
            secs = seconds_between(f.event, ev)
            if secs is None or 0 <= secs <= WINDOW_S:
                before.append(f)
    return (_most_telling(before), rule) if before else None


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
