"""What a user can set on ``denpex run``, and the parsers for human sizes and durations."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

MIB = 1024 * 1024
DEFAULT_HEAD = 4 * MIB
DEFAULT_TAIL = 16 * MIB
DEFAULT_DIAGNOSE_TIMEOUT = 120.0
STALL_ACTIONS = ("report", "kill")
DIAGNOSE_MODES = ("auto", "always", "never")

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": MIB, "g": 1024 * MIB, "t": 1024 * 1024 * MIB}
_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


@dataclass
class WrapperOptions:
    command: list[str]
    head_bytes: int = DEFAULT_HEAD
    tail_bytes: int = DEFAULT_TAIL
    run_dir: Path | None = None        # exact folder for this run's capture; None: derived from the env
    job_id: str | None = None          # groups ranks under one job folder; None: from Slurm/torchrun/MPI env
    stall_timeout: float | None = None  # seconds of silence before a hang notice
    on_stall: str = "report"
    kill_grace: float = 30.0           # SIGTERM, then SIGKILL this many seconds later (--on-stall kill)
    diagnose: str = "auto"
    diagnose_timeout: float = DEFAULT_DIAGNOSE_TIMEOUT
    capture: bool = True
    quiet: bool = False                # no report on stderr (the incident is still written)
    subreaper: bool = False            # collect orphaned descendants' exit status (always done as PID 1)


def parse_size(text: str) -> int:
    """``64M``, ``1.5G``, ``512k``, ``0`` (binary units); ValueError on anything else."""
    m = _SIZE.match(text)
    if not m:
        raise ValueError(f"not a size: {text!r} (examples: 0, 512K, 64M, 1G)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_duration(text: str) -> float:
    """``30m``, ``90s``, ``1h30m``, ``45`` (seconds); ValueError on anything else or on zero."""
    s = text.strip()
    pos = 0
    total = 0.0
    for m in _DURATION_PART.finditer(s):
        if m.start() != pos or not m.group(0):
            break
        total += float(m.group(1)) * _SECONDS[(m.group(2) or "s").lower()]
        pos = m.end()
        while pos < len(s) and s[pos] == " ":
            pos += 1
    if pos != len(s) or not s or total <= 0:
        raise ValueError(f"not a duration: {text!r} (examples: 90s, 30m, 1h30m)")
    return total
