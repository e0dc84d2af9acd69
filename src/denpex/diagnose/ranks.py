"""Which rank started it, when the failing line itself does not say.

Signals used, strongest first:
1. the root line's own rank (launcher prefix, or a rank the message names);
2. node evidence joined to the job: the kernel's PCI bus id mapped to a rank through NCCL's
   ``comm ... rank R ... busId B`` lines (and the host where the log says it);
3. torchelastic's ``Root Cause (first observed failure)`` block, ``MPI_ABORT was invoked on
   rank N``, srun's ``task N`` lines;
4. for a pure cascade (only timeouts): the rank whose ``last completed NCCL work`` is lowest,
   or the only known rank that reported no timeout at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from denpex.diagnose.findings import Finding


@dataclass
class RankVerdict:
    rank: int | None
    reason: str
    evidence: list[Finding] = field(default_factory=list)


def gpu_rank_map(findings: list[Finding]) -> dict[tuple[str | None, str], int]:
    """(host, pci_bus_id) -> rank, from context lines that tie a rank to its GPU."""
    out: dict[tuple[str | None, str], int] = {}
    for f in findings:
        ev = f.event
        bus = ev.fields.get("pci_bus_id") or ev.pci_bus_id
        if f.role != "context" or bus is None or f.rank is None:
            continue
        from denpex.collect.lineinfo import normalize_pci

        bus = normalize_pci(bus)
        out.setdefault((ev.host, bus), f.rank)
        out.setdefault((None, bus), f.rank)
    return out


def rank_for_gpu(f: Finding, gmap: dict[tuple[str | None, str], int]) -> int | None:
    bus = f.event.pci_bus_id
    if bus is None:
        return None
    if (f.event.host, bus) in gmap:
        return gmap[(f.event.host, bus)]
    hosts = {h for h, _ in gmap if h is not None}
    if f.event.host is None and len(hosts) <= 1:
        return gmap.get((None, bus))
    return None


def rank_from_launchers(findings: list[Finding]) -> RankVerdict | None:
    """torchelastic root-cause block, MPI_ABORT, mpirun/srun task lines: the earliest named rank.

    Signatures mark such lines by extracting a ``failed_rank`` field. A signature that names
    several ranks (srun: task 0 and task 2 both crashed) says the failure was shared: which
    one the launcher noticed first is chance, so its lines name no initiating rank.
    """
    named: dict[str, set[str]] = {}
    for f in findings:
        val = f.event.fields.get("failed_rank")
        if val is not None and val.isdigit():
            named.setdefault(f.sig.id, set()).add(val)
    for f in findings:
        val = f.event.fields.get("failed_rank")
        if val is not None and val.isdigit() and len(named[f.sig.id]) == 1:
            return RankVerdict(int(val), f"named as the failed rank by {f.sig.id}", [f])
    return None


def rank_from_root_cause_block(findings: list[Finding]) -> RankVerdict | None:
    """torchelastic's 'Root Cause (first observed failure):' header: the rank in the record under it."""
    for head in findings:
        if "root_cause_block" not in head.event.fields:
            continue
        for f in findings:
            ev = f.event
            if (ev.source_index == head.event.source_index and 0 < ev.line_no - head.event.line_no <= 8
                    and f.role == "context" and "rank" in ev.fields):
                return RankVerdict(int(ev.fields["rank"]), "torchelastic's root-cause record names it", [f])
    return None


def rank_from_single_node(findings: list[Finding], hosts: set[str]) -> RankVerdict | None:
    """On one node, the launcher's local rank of the first failed worker is its global rank."""
    if len(hosts) > 1:
        return None
    for f in findings:
        lr = f.event.fields.get("local_rank")
        if lr is not None and lr.isdigit() and f.sig.is_failure and f.role in ("root", "symptom"):
            return RankVerdict(int(lr), "single node: the failed worker's local rank is its global rank", [f])
    return None


def rank_from_cascade(findings: list[Finding], known_ranks: set[int],
                      world: int | None = None) -> RankVerdict | None:
    completed: dict[int, int] = {}
    ev_for: dict[int, Finding] = {}
    for f in findings:
        lc = f.event.fields.get("last_completed")
        if lc is None or f.rank is None:
            continue
        try:
            val = int(lc)
        except ValueError:
            continue
        if f.rank not in completed or val < completed[f.rank]:
            completed[f.rank] = val
            ev_for[f.rank] = f
    if len(completed) >= 2:
        low = min(completed.values())
        lows = [r for r, v in completed.items() if v == low]
        if len(lows) == 1 and any(v > low for v in completed.values()):
            r = lows[0]
            return RankVerdict(r, f"rank {r} completed the fewest NCCL works ({low})", [ev_for[r]])
    hung = [f for f in findings if "hung_ranks" in f.event.fields]
    if hung:
        ranks = [int(x) for x in hung[0].event.fields["hung_ranks"].replace(",", " ").split() if x.isdigit()]
        if len(ranks) == 1:
            return RankVerdict(ranks[0], "the only rank that missed the monitored barrier", [hung[0]])
    timed_out = {f.rank for f in findings if f.sig.category in ("nccl_timeout",) and f.rank is not None}
    # "The only rank that did not time out" holds only when every rank's output is present:
    # a pasted excerpt that lost one rank's lines would otherwise name an innocent one.
    if world is not None and len(known_ranks) == world >= 2 and len(timed_out) >= 1:
        silent = sorted(known_ranks - timed_out)
        if len(silent) == 1 and len(timed_out) == len(known_ranks) - 1:
            return RankVerdict(silent[0], f"rank {silent[0]} is the only rank that reported no timeout")
    return None
