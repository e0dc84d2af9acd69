"""What a source is, told from its content first and its name second.

The kind decides nothing about matching (every line meets every signature); it tells the
reader of an incident what evidence was present, and feeds ``coverage.missing`` (a verdict
without any kernel log says so).
"""

from __future__ import annotations

import re

_NAME_RANK = re.compile(r"(?:^|[^a-z])(?:rank|worker|proc)[_-]?(\d{1,5})(?:\D|$)", re.IGNORECASE)

KIND_RULES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    # (kind, what lines of that kind contain, how many sample lines must show it)
    ("nvidia_smi_q", re.compile(r"==+NVSMI LOG==+|^Attached GPUs\s+:", re.M), 1),
    ("dcgm_diag", re.compile(r"Diagnostic\s+\|\s+Result|^\|\s*(?:Deployment|Hardware|Integration|Stress)\s+\|"
                             r"|dcgmi (?:diag|health)|Health Monitor Report", re.M), 1),
    ("slurm_out", re.compile(r"^(?:slurmstepd|srun|sbatch|salloc): ", re.M), 1),
    ("kernel_log", re.compile(r"^(?:\[\s*\d+\.\d+\]|\[\w{3} \w{3} +\d+ [\d:]+ \d{4}\]|\w{3} +\d+ [\d:]+ \S+ kernel:"
                              r"|\d{4}-\d\d-\d\dT\S+ \S+ kernel:)", re.M), 3),
    ("nccl_debug", re.compile(r"^\S+:\d+:\d+ \[\d+\] NCCL (?:INFO|WARN)", re.M), 5),
)


# Text a sample must contain before a kind's regex is worth running on it: detection runs on
# every file of a 1,024-rank job, and most files are training logs that none of these fit.
# Every kind has hints; one that begins with a newline stands for a line start.
_HINTS: dict[str, tuple[str, ...]] = {
    "nvidia_smi_q": ("NVSMI LOG", "Attached GPUs"),
    "dcgm_diag": ("Diagnostic", "\n|", "dcgmi", "Health Monitor"),  # a table row starts with "|"
    "slurm_out": ("slurmstepd: ", "srun: ", "sbatch: ", "salloc: "),
    "kernel_log": ("\n[", " kernel:"),
    "nccl_debug": (" NCCL INFO", " NCCL WARN"),
}


def detect_kind(name: str, sample: str) -> str:
    for kind, rx, need in KIND_RULES:
        if _enough_lines(sample, rx, _HINTS[kind], need):
            if kind == "nccl_debug" and _mostly_training(sample):
                return "training_log"
            return kind
    lowered = name.lower()
    if re.search(r"slurm-\d+(?:_\d+)?\.(?:out|err)", lowered):
        return "slurm_out"
    if any(k in lowered for k in ("dmesg", "kern.log", "syslog", "journal")):
        return "kernel_log"
    return "training_log"


def _enough_lines(sample: str, rx: re.Pattern[str], hints: tuple[str, ...], need: int) -> bool:
    """Whether ``need`` lines of ``sample`` match ``rx``, looking only at lines that hold a hint.

    Every match holds one of its kind's hints, so the regex runs on those lines alone instead
    of at every position of the sample (a multi-line regex tries each one). A line reached only
    through a line-start hint is tried at its start alone: a match anywhere else on it would
    hold another hint, and the line would have been reached through that one too.
    """
    starts: set[int] = set()  # lines reached through a hint inside the line
    at_start: set[int] = set()  # lines reached through a line-start hint
    for hint in hints:
        into = at_start if hint[0] == "\n" else starts
        if hint[0] == "\n" and sample.startswith(hint[1:]):
            into.add(0)  # a line-start hint on the first line has no newline before it
        at = sample.find(hint)
        while at >= 0:
            into.add(at + 1 if hint[0] == "\n" else sample.rfind("\n", 0, at) + 1)
            at = sample.find(hint, at + 1)
    found = 0
    for ls in sorted(starts | at_start):
        le = sample.find("\n", ls)
        le = le if le >= 0 else len(sample)
        if ls in starts:
            found += sum(1 for _ in rx.finditer(sample, ls, le))
        elif rx.match(sample, ls, le) is not None:
            found += 1
        if found >= need:
            return True
    return False


def _mostly_training(sample: str) -> bool:
    lines = [ln for ln in sample.splitlines() if ln.strip()]
    nccl = sum(1 for ln in lines if " NCCL " in ln)
    return nccl < len(lines) * 0.5


def rank_from_name(name: str) -> int | None:
    found = _NAME_RANK.findall(name.rsplit("/", 1)[-1])
    return int(found[-1]) if found else None
