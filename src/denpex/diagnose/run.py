"""From sources to an incident: the whole diagnosis, deterministic and stdlib-only.

scan (``denpex.scan``) -> findings -> recovered filter -> root choice -> initiating rank ->
owner rules (``owner.py``) -> RMA, impact, secondary -> the incident document (``incident.py``).
"""

from __future__ import annotations

from denpex.catalog.loader import Catalog
from denpex.collect.inputs import Source
from denpex.diagnose.findings import Finding, build_findings, mark_ptx_covered, mark_recovered
from denpex.diagnose.impact import compute_impact
from denpex.diagnose.model import Diagnosis
from denpex.diagnose.owner import decide_owner
from denpex.diagnose.ranks import (
    RankVerdict,
    gpu_rank_map,
    rank_for_gpu,
    rank_from_cascade,
    rank_from_launchers,
    rank_from_root_cause_block,
    rank_from_single_node,
)
from denpex.diagnose.root import NODE_FAMILIES, RULE_REASONS, WINDOW_S, RootChoice, choose_root
from denpex.diagnose.timeline import ordered, seconds_between
from denpex.scan.engine import Engine
from denpex.scan.progress import Progress
from denpex.scan.scanner import SourceResult, scan_all


def diagnose_paths(catalog: Catalog, sources: list[Source], engine: Engine | None = None,
                   progress: Progress | None = None) -> Diagnosis:
    return diagnose_results(catalog, scan_all(catalog, sources, engine, progress=progress))


def diagnose_results(catalog: Catalog, results: list[SourceResult]) -> Diagnosis:
    _assign_node_hosts(results)
    events = [ev for r in results for ev in r.events]
    findings = build_findings(ordered(events), catalog.by_id)
    fired: list[tuple[str, str, list[Finding]]] = []
    covered = mark_ptx_covered(findings)
    if covered:
        fired.append(("ptx_covers_gpu", "the build's PTX for the GPU's generation runs on it: the "
                      "'not compatible' warning is harmless", covered[:5]))
    recovered = mark_recovered(findings)
    if recovered:
        fired.append(("recovered_after_progress",
                      "errors followed by training progress in the same output are treated as recovered",
                      recovered[:5]))
    failures = [f for f in findings if f.is_failure]
    known_ranks: set[int] = set().union(*(r.ranks for r in results)) if results else set()
    known_ranks |= {f.rank for f in findings if f.rank is not None}
    choice = choose_root(failures)
    cause = _cause_named_by_warning(choice, findings)
    owner_from: Finding | None = None
    if cause is not None and choice.root is not None:
        if cause.sig.severity != "warning":
            # The warning and the failure tell of the same fault ("sm_86 is not compatible with
            # the current PyTorch installation", then "no kernel image"): the failure stays the
            # line to quote, the warning says whose it is.
            fired.append(("warning_names_owner",
                          f"the process warned of {cause.sig.id} before {choice.root.sig.id}, the same fault: "
                          f"owner {cause.sig.owner}", [cause, choice.root]))
            owner_from = cause
        else:
            fired.append(("warning_names_cause",
                          f"the process warned of {cause.sig.id} before its unexplained failure "
                          f"({choice.root.sig.id}): the warning is the cause", [cause, choice.root]))
            choice.root = cause
    for name, fs in choice.fired:
        fired.append((name, _CHOICE_REASONS.get(name, name), fs))
    diag = Diagnosis(catalog=catalog, results=results, findings=findings, failures=failures, choice=choice,
                     owner="none", rank=None, fired=fired, known_ranks=known_ranks)
    root = choice.root
    if root is None:
        diag.missing = _missing_for_healthy(results)
        return diag
    fired.insert(0, ("root_selection", choice.reason, [root]))
    diag.owner = (owner_from or root).sig.owner
    odd = _odd_collective(root, failures)
    if odd is not None:
        fired.append(("collectives_differ_at_same_seq",
                      f"ranks timed out in different collectives at the same sequence number "
                      f"({odd.event.fields['op']} on rank {odd.rank} vs the others): the ranks took different code "
                      f"paths; owner {diag.owner} -> user_code", [odd]))
        choice.root = root = odd
        diag.owner = "user_code"
        diag.rank = (RankVerdict(odd.rank, f"rank {odd.rank} is the one rank in another collective", [odd])
                     if odd.rank is not None else None)
    else:
        diag.rank = _initiating_rank(root, findings, failures, known_ranks)
    root = _root_on_initiating_rank(diag)
    if diag.rank is not None and diag.rank.rank is not None:
        fired.append(("initiating_rank", diag.rank.reason, diag.rank.evidence or [root]))
    decide_owner(diag)
    _rma(diag)
    diag.impact = compute_impact(findings, root, known_ranks)
    diag.secondary = _secondary(diag)
    diag.missing = _missing(diag)
    return diag


_CHOICE_REASONS = {
    "node_evidence_joined": "node evidence in the same window as a failing rank outranks the rank's own error",
    "detail_follows": "the failure line only announces an error; the line below it spells the error out",
    **RULE_REASONS,
}

# Failures of what every rank shares (the job's configuration, the installed software, the
# node's setup): whichever rank printed first is chance, as with one error on many ranks. A
# fabric completion error is seen by one end of a connection; the fault may be at the other.
JOB_WIDE_CATEGORIES = frozenset({
    "config", "parallel_config", "device_selection", "import_error", "install_mismatch", "arch_mismatch",
    "arch_unsupported", "checkpoint_mismatch", "cuda_library_missing", "driver_version_mismatch", "fabric_manager",
    "gpu_p2p", "shm_full", "shm_exhausted", "distributed_tensor", "ib_completion_error", "efa_completion_error",
    "efa_connect", "nccl_connect",
})

SAME_FAILURE_RANKS = 3  # this many ranks with the root's own error: a shared cause, not one rank's
SAME_FAILURE_S = 10.0


def _same_failure_on_many_ranks(root: Finding, failures: list[Finding]) -> bool:
    """Whether several ranks failed with the root's error within seconds of each other.

    A duplicate-GPU error, a bad collective argument or an unreachable peer printed by every
    rank at once has one cause shared by all of them; the rank whose line happens to come
    first is not the one that started anything.
    """
    ranks = {root.rank}
    for f in failures:
        if f.sig.id != root.sig.id or f.rank is None:
            continue
        secs = seconds_between(root.event, f.event)
        if secs is None or abs(secs) <= SAME_FAILURE_S:
            ranks.add(f.rank)
    ranks.discard(None)
    return len(ranks) >= SAME_FAILURE_RANKS


def _initiating_rank(root: Finding, findings: list[Finding], failures: list[Finding],
                     known: set[int]) -> RankVerdict | None:
    multi = len(known) > 1 or any(f.rank not in (None, 0) for f in failures)
    if not multi and (_world_size(findings) or 1) == 1 and root.rank in (0, None) and not _several_workers(findings):
        # One process, rank 0 of one (a single-GPU run under torchrun or accelerate still
        # prints "[rank0]:", torchrun's failure record says "local_rank: 0"): no other rank
        # exists to have started anything.
        verdict = _named_rank(root, findings, failures, known, multi)
        return None if verdict is None or verdict.rank == 0 else verdict
    return _named_rank(root, findings, failures, known, multi)


def _named_rank(root: Finding, findings: list[Finding], failures: list[Finding], known: set[int],
                multi: bool) -> RankVerdict | None:
    if root.role == "root" and _same_failure_on_many_ranks(root, failures):
        return None  # every rank hit the same error at once: which printed first is chance
    if root.role == "root" and root.sig.category in JOB_WIDE_CATEGORIES:
        return None  # all ranks share what failed: the one that printed it started nothing
    # A timeout's own rank is the one that waited, never the one that failed.
    if root.rank is not None and (root.role == "root" or (not multi and root.role != "cascade")):
        return RankVerdict(root.rank, "the root line names its rank", [root])
    gmap = gpu_rank_map(findings)
    r = rank_for_gpu(root, gmap)
    if r is not None:
        return RankVerdict(r, f"the GPU {root.event.pci_bus_id} of the root line belongs to rank {r}", [root])
    launcher = (rank_from_launchers(failures + [f for f in findings if f.role == "context"])
                or rank_from_root_cause_block(findings))
    if launcher is not None and launcher.rank is not None:
        return launcher
    if root.role != "root":
        cascade = rank_from_cascade(findings, known, _world_size(findings))
        if cascade is not None:
            return cascade
    hosts = {f.event.host for f in findings if f.event.host}
    if root.role == "cascade":
        if root.sig.category == "worker_exit" and not any(f.rank is not None for f in failures):
            # Only the launcher's record of which worker died first (exit -6), no rank's own
            # word of a timeout or error: on one node that worker is the lead there is.
            local = root.event.fields.get("local_rank", "")
            if len(hosts) <= 1 and local.isdigit():
                return RankVerdict(int(local), "single node, no rank's own error: the launcher's first dead worker",
                                   [root])
        return None  # the first rank to time out noticed the failure; it did not cause it
    if root.rank is not None:
        return RankVerdict(root.rank, "the earliest failing line names its rank", [root])
    single = rank_from_single_node(failures, hosts)
    if single is not None and (root.role != "root" or "local_rank" in root.event.fields):
        return single
    if root.role == "root":
        # The first rank to fail among those that say who they are, close to the root.
        for f in failures:
            if f.rank is not None and f.role == "root":
                secs = seconds_between(root.event, f.event)
                if secs is None or abs(secs) <= WINDOW_S:
                    return RankVerdict(f.rank, f"rank {f.rank} is the first rank with a failure", [f])
    return None


def _odd_collective(root: Finding, failures: list[Finding]) -> Finding | None:
    """The one rank whose timed-out collective differs from the others' at the same sequence number.

    Watchdog timeouts all at SeqNum N, one rank in REDUCE and the rest in _ALLGATHER_BASE, mean
    the ranks issued different collectives: a data-dependent branch (only rank 0 saves, an
    uneven last batch) in the job's code. Only when nothing but cascade lines explain the hang.
    """
    if root.role == "root":
        return None
    by_seq: dict[str, dict[str, list[Finding]]] = {}
    for f in failures:
        seq, op = f.event.fields.get("seq"), f.event.fields.get("op")
        if seq is not None and op is not None:
            by_seq.setdefault(seq, {}).setdefault(op, []).append(f)
    for ops in by_seq.values():
        ranks = {op: {f.rank for f in fs} for op, fs in ops.items()}
        if len(ops) != 2 or any(None in r for r in ranks.values()):
            continue
        (op_a, ranks_a), (op_b, ranks_b) = sorted(ranks.items())
        if ranks_a & ranks_b or len(ranks_a) == len(ranks_b):
            continue
        odd_op = op_a if len(ranks_a) < len(ranks_b) else op_b
        if len(ranks[odd_op]) == 1:
            return ops[odd_op][0]
    return None


# Failures that only say no kernel would take the inputs: a warning before them that one
# could not be loaded (an extension built for another PyTorch) is the cause.
WARNING_EXPLAINS = frozenset({"attention_kernel_unavailable", "cuda_build_mismatch"})


def _cause_named_by_warning(choice: RootChoice, findings: list[Finding]) -> Finding | None:
    """The cause a process warned of before it died of an error that names no owner.

    A warning such as "xFormers can't load C++/CUDA extensions" is harmless while nothing
    fails; when the same process then dies of a generic error ("No operator found for
    memory_efficient_attention_forward"), the warning is what explains it: printed earlier by
    the same process, or in another untimed output of a single-process job (an environment
    report posted with the error). Node evidence is left to the node rules: a kernel warning
    is not the process's own word.
    """
    root = choice.root
    if root is None or root.sig.family in NODE_FAMILIES or root.sig.category == "external_kill":
        return None  # a signal from outside (Ctrl-C, a launcher's kill) is no warning's consequence
    if root.sig.owner != "unknown" and not root.sig.frame_owner and root.sig.category not in WARNING_EXPLAINS:
        # An error with an owner of its own keeps it; a generic exception's owner (frame_owner)
        # or a no-kernel error's is only a default that a named cause overrides.
        return None
    best: Finding | None = None
    for f in findings:
        if f.sig.role != "root" or f.sig.family in NODE_FAMILIES:
            continue
        if f.sig.severity != "warning" and not (root.sig.category in WARNING_EXPLAINS
                                                and f.sig.category == root.sig.category and f.sig.id != root.sig.id):
            # A warning names the cause; so does an earlier error of the same fault told otherwise.
            continue
        if root.rank is not None and f.rank not in (None, root.rank):
            # A line with no rank may speak for every rank; a failure with no rank (a launcher's
            # summary) may be any rank's.
            continue
        secs = seconds_between(f.event, root.event)
        if f.event.source_index == root.event.source_index:
            if f.event.line_no >= root.event.line_no:
                continue
        elif secs is not None or f.rank is not None:
            continue  # another file counts only as an untimed report of the same environment
        if secs is not None and not 0 <= secs <= WINDOW_S:
            continue
        if best is None or f.priority > best.priority:
            best = f
    return best


def _several_workers(findings: list[Finding]) -> bool:
    """Whether the launcher shows more than one worker process, when no line names another rank.

    torchrun's agent sends its closing signal to the workers that did not fail (a pid other
    than the failed one's), and a launch command asks for several processes per node.
    """
    failed = {f.event.fields.get("pid") for f in findings if "local_rank" in f.event.fields}
    for f in findings:
        fields = f.event.fields
        if f.sig.category == "launcher_teardown" and fields.get("pid") not in failed:
            return True
        if fields.get("nproc_per_node", "").isdigit() and int(fields["nproc_per_node"]) > 1:
            return True
    return False


def _world_size(findings: list[Finding]) -> int | None:
    sizes = [int(f.event.fields["world_size"]) for f in findings
             if f.event.fields.get("world_size", "").isdigit()]
    return max(sizes) if sizes else None


def _root_on_initiating_rank(diag: Diagnosis) -> Finding:
    """With only cascade/symptom lines, the line to quote is the initiating rank's own one."""
    root = diag.choice.root
    assert root is not None
    if root.role == "root" or diag.rank is None or diag.rank.rank is None or root.rank == diag.rank.rank:
        return root
    own = [f for f in diag.failures if f.rank == diag.rank.rank]
    if not own:
        return root
    best = max(f.priority for f in own)
    pick = next(f for f in diag.failures if f.rank == diag.rank.rank and f.priority == best)
    diag.choice.root = pick
    diag.owner = pick.sig.owner
    diag.fired.append(("root_on_initiating_rank", "the initiating rank's own failure line is quoted as the root",
                       [pick]))
    return pick


def _rma(diag: Diagnosis) -> None:
    root = diag.root
    if root is None or diag.owner != "gpu_hardware":
        return
    reasons = []
    if root.sig.rma == "candidate":
        reasons.append(f"{root.sig.title} ({root.sig.id}): {root.event.text.strip()[:200]}")
    for f in diag.failures:
        if f is not root and f.sig.rma == "candidate" and f.sig.owner == "gpu_hardware":
            line = f"{f.sig.title} ({f.sig.id}): {f.event.text.strip()[:200]}"
            if line not in reasons:
                reasons.append(line)
    if reasons:
        diag.rma_candidate = True
        diag.rma_reasons = reasons[:10]


def _secondary(diag: Diagnosis) -> list[list[Finding]]:
    """Other failures that are not the root's consequences: grouped per signature."""
    root = diag.root
    assert root is not None
    groups: dict[str, list[Finding]] = {}
    one_host = len({x.event.host for x in diag.findings if x.event.host}) <= 1
    for f in diag.failures:
        if f is root or f.role != "root" or f.sig.id == root.sig.id:
            continue
        if f.sig.owner == root.sig.owner and f.sig.category == root.sig.category:
            continue
        secs = seconds_between(root.event, f.event)
        root_rank = root.rank if root.rank is not None else (diag.rank.rank if diag.rank else None)
        local = f.event.fields.get("local_rank")
        same_place = ((f.rank is not None and f.rank == root_rank)
                      or (f.event.host is not None and f.event.host == root.event.host)
                      or (one_host and local is not None and local.isdigit() and int(local) == root_rank))
        if secs is not None and 0 <= secs <= WINDOW_S and same_place:
            continue  # a consequence on the same rank or host
        if same_place and f.sig.role == "root" and f.sig.priority < root.sig.priority and f.sig.owner == "unknown":
            continue  # a vaguer report of the same process's death (launcher exit codes)
        if secs is None and f.event.source_index == root.event.source_index and f.event.line_no > root.event.line_no:
            continue  # later in the same file, untimed: likely the same failure unwinding
        groups.setdefault(f.sig.id, []).append(f)
    return [groups[k] for k in sorted(groups, key=lambda k: (groups[k][0].event.source_index,
                                                              groups[k][0].event.line_no))][:10]


def _missing(diag: Diagnosis) -> list[str]:
    root = diag.root
    assert root is not None
    out: list[str] = list(diag.missing)
    kinds = {r.kind for r in diag.results}
    if diag.owner == "unknown" or root.role != "root":
        out.extend(root.sig.missing)
    asked_kernel = any("kernel log" in m.lower() or "dmesg" in m.lower() for m in out)
    if "kernel_log" not in kinds and not asked_kernel and (
            diag.owner in ("unknown", "gpu_hardware", "driver", "interconnect", "host") or root.role != "root"):
        out.append("kernel log (dmesg -T or journalctl -k) of the job's nodes from the time of the failure")
    world = diag.impact.get("world_size")
    if isinstance(world, int) and 1 < world <= 4096 and diag.known_ranks and len(diag.known_ranks) < world:
        absent = sorted(set(range(world)) - diag.known_ranks)
        shown = ", ".join(str(r) for r in absent[:16]) + (" ..." if len(absent) > 16 else "")
        out.append(f"output of ranks {shown} ({len(absent)} of {world} not seen)")
    seen: set[str] = set()
    return [m for m in out if not (m in seen or seen.add(m))]  # type: ignore[func-returns-value]


def _missing_for_healthy(results: list[SourceResult]) -> list[str]:
    out = []
    if not results or sum(r.lines for r in results) == 0:
        out.append("no evidence lines were read: a healthy verdict here means nothing")
    unreadable = [r.source.display for r in results if r.source.warnings and r.lines == 0]
    if unreadable:
        out.append("unreadable sources: " + ", ".join(unreadable[:10]))
    return out


def _assign_node_hosts(results: list[SourceResult]) -> None:
    """Give kernel-log lines without a host field the host their file belongs to.

    A dmesg capture names no host. When the file name names one of the job's hosts, or the
    job ran on exactly one host, its lines are that host's.
    """
    job_hosts = sorted({ev.host for r in results if r.kind != "kernel_log" for ev in r.events if ev.host})
    for r in results:
        if r.kind not in ("kernel_log", "nvidia_smi_q", "dcgm_diag"):
            continue
        if any(ev.host for ev in r.events):
            continue
        name = r.source.display.rsplit("/", 1)[-1]
        named = [h for h in job_hosts if h in name]
        host = named[0] if len(named) == 1 else (job_hosts[0] if len(job_hosts) == 1 else None)
        if host is None:
            continue
        for ev in r.events:
            ev.host = host
