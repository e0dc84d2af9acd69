"""Events paired with their signatures, and the data-driven filters applied before ranking.

Filters (each recorded as a fired rule when it changes something):
- recovered: an ``error`` (not ``fatal``) hit followed, in the same file and for the same rank,
  by training progress. Caught exceptions, OOM retries with a smaller batch and retried
  connections are not the failure.
- duplicates: the same line text reported by several signatures keeps each signature, but
  ranking sees the line once per signature.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from denpex.catalog.model import Signature
from denpex.diagnose.timeline import seconds_between
from denpex.evidence import Event

PROGRESS_FIELDS = frozenset({"step", "epoch", "checkpoint", "completed", "served"})


@dataclass
class Finding:
    event: Event
    sig: Signature
    priority: int
    recovered: bool = False
    rank: int | None = None
    # The line is a Python exception a specific signature read ("DistBackendError: ... store->get
    # got error"): what a launcher's "exitcode: 1" can be put down to, as a generic one would be.
    raised: bool = False

    @property
    def is_failure(self) -> bool:
        return self.sig.is_failure and not self.recovered

    @property
    def role(self) -> str:
        return self.sig.role


def rank_of(ev: Event) -> int | None:
    """The rank a line speaks for: the launcher prefix first, then what the message says."""
    if ev.rank is not None:
        return ev.rank
    for key in ("rank", "failed_rank", "global_rank"):
        val = ev.fields.get(key)
        if val is not None and val.isdigit():
            return int(val)
    return None


RECORD_SPAN = 3  # lines of a multi-line record (torchelastic's failure list) that share one rank


# A Python traceback quotes source lines ("    raise AssertionError('Torch not compiled ...')"):
# code that could raise the message is not the message. The exception line follows it.
_TRACEBACK_CODE = re.compile(r"(?:^|\s{2})\s*(?:raise [\w.]+(?:\(|$)|assert )")


HARMLESS = "harmless"  # category of signatures that mark a line as known noise


def build_findings(events: list[Event], sigs: dict[str, Signature]) -> list[Finding]:
    # A line the catalog knows as harmless noise (a shutdown traceback of Python's resource
    # tracker) is no failure, whatever generic signature it also matches.
    harmless = {(ev.source_index, ev.line_no) for ev in events
                if (s := sigs.get(ev.signature_id or "")) is not None and s.category == HARMLESS}
    harmless |= _cleared(events, sigs)
    out = []
    for ev in events:
        sig = sigs.get(ev.signature_id or "")
        if sig is None:
            continue
        # A cut traceback's line is a frame's code on purpose: the output ended there.
        if sig.is_failure and ((ev.source_index, ev.line_no) in harmless
                               or (not sig.end_of_source and _TRACEBACK_CODE.search(ev.text))):
            continue
        out.append(Finding(ev, sig, sig.priority, rank=rank_of(ev)))
    # A generic exception ("RuntimeError: NCCL error in: ..., unhandled system error") says no
    # more than the specific failure found on the same line; that one alone stands for it.
    specific = {(f.event.source_index, f.event.line_no) for f in out if f.sig.is_failure and not _generic(f.sig)}
    raised = {(f.event.source_index, f.event.line_no) for f in out if _generic(f.sig) and f.sig.is_failure}
    out = [f for f in out if not (_generic(f.sig) and (f.event.source_index, f.event.line_no) in specific)]
    for f in out:
        f.raised = f.sig.is_failure and not _generic(f.sig) and (f.event.source_index, f.event.line_no) in raised
    _inherit_record_ranks(out)
    _ranks_from_process_map(out)
    return out


def _generic(sig: Signature) -> bool:
    """An exception class matched by name whose owner comes from the raising frame (RuntimeError, ...)."""
    return sig.frame_owner and sig.category == "python_exception"


CLEARS_NEXT_LINES = 20  # how far below an announcing harmless line the traceback it announces may end
CLEARS_PRIOR_LINES = 3  # how far above a line that says "survived" the failure it speaks of may be


def _cleared(events: list[Event], sigs: dict[str, Signature]) -> set[tuple[int, int]]:
    """(source, line) of failures that a line next to them says the process survived.

    Below a line that announces a survivable traceback, its first failure (and that failure
    repeated on the lines right after it); above a line that
    says the failure just before it was survived, every failure within CLEARS_PRIOR_LINES; a
    line whose own failure match is not a failure (``clears_line``), that failure.
    """
    by_source: dict[int, list[tuple[int, Signature]]] = {}
    for ev in events:
        sig = sigs.get(ev.signature_id or "")
        if sig is not None and (sig.clears_next_failure or sig.clears_prior_failure or sig.clears_line
                                or sig.is_failure):
            by_source.setdefault(ev.source_index, []).append((ev.line_no, sig))
    out: set[tuple[int, int]] = set()
    for source, found in by_source.items():
        found.sort(key=lambda item: item[0])
        # ``found`` is in line order: both walks stop at the end of their window.
        for i, (line, sig) in enumerate(found):
            j = i + 1  # below: the first failure, and the same failure reported again at once
            while sig.clears_next_failure and j < len(found) and found[j][0] - line <= CLEARS_NEXT_LINES:
                if found[j][1].is_failure and found[j][0] > line:
                    out.add((source, found[j][0]))
                    # The next layer often reports the same failure on the following line (a
                    # start script, then systemd): that repeat is the same harmless exit.
                    k = j + 1
                    while (k < len(found) and found[k][1] is found[j][1]
                           and found[k][0] - found[k - 1][0] <= 1):
                        out.add((source, found[k][0]))
                        k += 1
                    break
                j += 1
            j = i - 1  # above: every failure in the window
            while sig.clears_prior_failure and j >= 0 and line - found[j][0] <= CLEARS_PRIOR_LINES:
                if found[j][1].is_failure and found[j][0] < line:
                    out.add((source, found[j][0]))
                j -= 1
            if sig.clears_line:
                # Only the entries of its own line, on either side of it (a server log can hold
                # thousands of such lines: no walk over the whole source for each).
                j = i - 1
                while j >= 0 and found[j][0] == line and not found[j][1].is_failure:
                    j -= 1
                k = i + 1
                while k < len(found) and found[k][0] == line and not found[k][1].is_failure:
                    k += 1
                if (j >= 0 and found[j][0] == line) or (k < len(found) and found[k][0] == line):
                    out.add((source, line))
    return out


def _ranks_from_process_map(findings: list[Finding]) -> None:
    """NCCL lines carry host:pid; a line that tied that process to a rank names the rank of the rest."""
    by_proc: dict[tuple[str | None, int], int] = {}
    for f in findings:
        if f.role == "context" and f.rank is not None and f.event.pid is not None:
            by_proc.setdefault((f.event.host, f.event.pid), f.rank)
    if not by_proc:
        return
    for f in findings:
        if f.rank is None and f.event.pid is not None:
            f.rank = by_proc.get((f.event.host, f.event.pid))


def _inherit_record_ranks(findings: list[Finding]) -> None:
    """A line of a multi-line record ("exitcode : 1 (pid: ...)") belongs to the rank its record named."""
    last: dict[int, Finding] = {}
    for f in sorted(findings, key=lambda x: (x.event.source_index, x.event.line_no)):
        src = f.event.source_index
        prev = last.get(src)
        if (f.rank is None and prev is not None and prev.role == "context" and "rank" in prev.event.fields
                and 0 < f.event.line_no - prev.event.line_no <= RECORD_SPAN):
            f.rank = prev.rank
        if f.role == "context" and "rank" in f.event.fields:
            last[src] = f


PTX_SPAN = 3  # lines after a "not compatible" warning where PyTorch prints its arch list


def mark_ptx_covered(findings: list[Finding]) -> list[Finding]:
    """Clear "sm_XY is not compatible" warnings whose build carries PTX the driver can run on that GPU.

    PyTorch prints the warning whenever the GPU's exact architecture is missing from the
    build, and then the list it has. PTX for compute_PQ is compiled by the driver for any GPU
    of the same major generation P at or above Q (a T4, sm_75, runs compute_70), so the job
    works; only without such PTX does the first kernel fail. Returns the findings cleared.
    """
    lists = {(f.event.source_index, f.event.line_no): f.event.fields["ptx_arch"] for f in findings
             if "ptx_arch" in f.event.fields and f.event.fields["ptx_arch"].isdigit()}
    if not lists:
        return []
    cleared = []
    for f in findings:
        sm = f.event.fields.get("sm", "")
        if not f.sig.is_failure or not sm.startswith("sm_") or not sm[3:].isdigit():
            continue
        for k in range(1, PTX_SPAN + 1):
            ptx = lists.get((f.event.source_index, f.event.line_no + k))
            if ptx is not None and ptx[:-1] == sm[3:-1] and int(ptx) <= int(sm[3:]):
                f.recovered = True
                cleared.append(f)
                break
    return cleared


RECOVERY_PROGRESS = 2  # progress lines needed after an error before it counts as recovered
# How far below a "the run finished" line its shutdown may go: farther down, an output that
# several runs were appended to holds the next run, whose failures count.
AFTER_COMPLETION_LINES = 400
# A time limit that strikes this long after the run said it finished did not cut a shutdown
# short: the process hung on its way out (an exit hang), and the job ended as a timeout.
EXIT_HANG_S = 300.0


def exit_hang_after(f: Finding, completions: list[Event]) -> Event | None:
    """The completion line a time-limit kill came EXIT_HANG_S or more after, if any.

    "[after training is done] 14:45:03" then "CANCELLED AT 14:53:02 DUE TO TIME LIMIT": the
    work was done, the process never exited, and the scheduler ended the allocation.
    """
    if f.sig.category != "time_limit":
        return None
    for ev in completions:
        if ev.line_no > f.event.line_no:
            continue
        secs = seconds_between(ev, f.event)
        if secs is not None and secs >= EXIT_HANG_S:
            return ev
    return None


def mark_recovered(findings: list[Finding]) -> list[Finding]:
    """Mark ``error`` findings that progress followed, and any failure a completed run followed; return them.

    Conservative on purpose: stdout is block-buffered when piped, so progress printed before a
    crash can land after its traceback when the process exits. An error counts as recovered
    only when at least RECOVERY_PROGRESS progress lines of the same rank follow it in the same
    file and no fatal failure follows it there. A line saying the run finished is stronger:
    a process that died does not print it afterwards; and a scheduler's kill or a teardown
    cascade after it ended nothing the run still had to do.
    """
    progress: dict[int, list[tuple[int, int | None]]] = {}
    last_fatal: dict[int, int] = {}
    # Where a run said it finished ("Training completed", MLPerf's run_stop with status
    # success): every failure above it in the same output, fatal ones too, did not stop it.
    # Said by rank 0 or a line with no rank, it speaks for the whole run; by another rank, for that rank.
    completed: dict[int, list[tuple[int | None, Event]]] = {}
    # A progress line that itself reports a failure ("{'loss': nan, ..., 'epoch': 0.5}") is
    # not progress past it: a run of NaN steps must not recover its own first NaN.
    failing_lines = {(f.event.source_index, f.event.line_no) for f in findings if f.sig.is_failure}
    for f in findings:
        src = f.event.source_index
        if (f.role == "context" and not PROGRESS_FIELDS.isdisjoint(f.event.fields)
                and (src, f.event.line_no) not in failing_lines):
            progress.setdefault(src, []).append((f.event.line_no, f.rank))
            if "completed" in f.event.fields:
                completed.setdefault(src, []).append((f.rank, f.event))
        elif f.sig.is_failure and f.sig.severity == "fatal":
            last_fatal[src] = max(last_fatal.get(src, 0), f.event.line_no)
    marked = []
    for f in findings:
        if not f.sig.is_failure:
            continue
        src = f.event.source_index
        done = [ev for rank, ev in completed.get(src, []) if rank in (None, 0, f.rank)]
        before = any(ev.line_no > f.event.line_no for ev in done)
        # After it, a scheduler's kill (a time limit reached while the job shut down), a
        # cascade of the teardown or an error that names no owner ended nothing the run still
        # had to do; a failure with an owner of its own (a save that ran out of disk) still counts.
        ended_after = (f.sig.owner in ("scheduler", "unknown") or f.role == "cascade") and any(
            0 <= f.event.line_no - ev.line_no <= AFTER_COMPLETION_LINES for ev in done)
        if ended_after and exit_hang_after(f, done) is not None:
            ended_after = False  # the run finished long before the time limit: it hung on exit
        if before or ended_after:
            f.recovered = True
            marked.append(f)
            continue
        if f.sig.severity != "error":
            continue
        if last_fatal.get(src, 0) > f.event.line_no:
            continue
        after = sum(1 for line_no, rank in progress.get(src, [])
                    if line_no > f.event.line_no and rank == f.rank)
        if after >= RECOVERY_PROGRESS:
            f.recovered = True
            marked.append(f)
    return marked
