"""The hang notice: a job that printed nothing for ``--stall-timeout`` is reported, not killed.

Silence alone proves nothing (a long evaluation, a slow checkpoint), so the notice carries
what lets a person judge: the last lines printed, and what every process of the job is doing
according to /proc (state, kernel wait channel, CPU time). A rank stuck in a collective
shows as ``S`` in ``futex_wait_queue`` with flat CPU time; a rank in the ``D`` state is stuck
in the kernel (a hung filesystem, a GPU driver call).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_PROCS = 32
LAST_LINES = 10


@dataclass
class ProcState:
    pid: int
    name: str
    state: str
    wchan: str
    cpu_seconds: float
    threads: int


def proc_tree(pid: int, proc: Path = Path("/proc")) -> list[ProcState]:
    """``pid`` and its descendants (breadth first, at most MAX_PROCS), from /proc; [] where /proc is absent."""
    children: dict[int, list[int]] = {}
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return []
    for entry in entries:
        st = _stat(proc / entry)
        if st is not None:
            children.setdefault(int(st[3]), []).append(int(entry))
    out: list[ProcState] = []
    queue = [pid]
    while queue and len(out) < MAX_PROCS:
        p = queue.pop(0)
        state = read_state(p, proc)
        if state is not None:
            out.append(state)
        queue.extend(sorted(children.get(p, [])))
    return out


def read_state(pid: int, proc: Path = Path("/proc")) -> ProcState | None:
    base = proc / str(pid)
    st = _stat(base)
    if st is None:
        return None
    try:
        wchan = (base / "wchan").read_text().strip() or "-"
    except OSError:
        wchan = "?"
    ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        cpu = (int(st[13]) + int(st[14])) / ticks
        threads = int(st[19])
    except (IndexError, ValueError):
        cpu, threads = 0.0, 0
    return ProcState(pid=pid, name=st[1], state=st[2], wchan=wchan if wchan != "0" else "-",
                     cpu_seconds=cpu, threads=threads)


def _stat(base: Path) -> list[str] | None:
    """Fields of /proc/PID/stat with the command name (which may hold spaces) as one field."""
    try:
        raw = (base / "stat").read_text()
    except OSError:
        return None
    lpar, rpar = raw.find("("), raw.rfind(")")
    if lpar < 0 or rpar < 0:
        return None
    return [raw[:lpar].strip(), raw[lpar + 1:rpar], *raw[rpar + 1:].split()]


def last_lines(recent: bytes, n: int = LAST_LINES) -> list[str]:
    text = recent.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    return [ln for ln in text.split("\n") if ln.strip()][-n:]


@dataclass
class StallWatch:
    """The cheap timer the relay calls between reads; the only Denpex work while the child runs."""

    timeout: float
    action: str                                  # "report" or "kill"
    kill_grace: float
    pid: int
    last_output: Callable[[], float]
    recent: Callable[[], bytes]
    send: Callable[[int], bool]
    emit: Callable[[str], None]
    started: float = field(default_factory=time.monotonic)
    notices: list[dict[str, Any]] = field(default_factory=list)
    _reported_for: float = -1.0
    _kill_at: float | None = None

    def tick(self, now: float) -> float | None:
        """Check for silence; return seconds until the next check."""
        if self._kill_at is not None and now >= self._kill_at:
            self._kill_at = None
            if self.send(signal.SIGKILL):
                self.emit(f"denpex: the job ignored SIGTERM for {self.kill_grace:g}s; sent SIGKILL")
        last = max(self.last_output(), self.started)
        silent = now - last
        if silent >= self.timeout and self._reported_for != last:
            self._reported_for = last
            self._notice(silent)
        wait = self.timeout - silent if self._reported_for != last else self.timeout
        if self._kill_at is not None:
            wait = min(wait, self._kill_at - now)
        return max(wait, 0.01)

    def _notice(self, silent: float) -> None:
        procs = proc_tree(self.pid)
        lines = last_lines(self.recent())
        record: dict[str, Any] = {
            "at": time.time(), "silent_seconds": round(silent, 1), "last_lines": lines,
            "processes": [vars(p) for p in procs], "action": self.action,
        }
        self.notices.append(record)
        out = [f"denpex: suspected hang: no output for {_human(silent)} (--stall-timeout {_human(self.timeout)})"]
        for p in procs:
            out.append(f"denpex:   pid {p.pid} {p.name}: state {p.state}, waiting in {p.wchan}, "
                       f"cpu {p.cpu_seconds:.1f}s, {p.threads} thread(s)")
        if lines:
            out.append("denpex:   last lines:")
            out.extend(f"denpex:   | {ln[:200]}" for ln in lines)
        if self.action == "kill":
            self.send(signal.SIGTERM)
            self._kill_at = time.monotonic() + self.kill_grace
            out.append(f"denpex:   --on-stall kill: sent SIGTERM; SIGKILL in {self.kill_grace:g}s if still running")
        else:
            out.append("denpex:   the job keeps running (--on-stall kill would stop it)")
        self.emit("\n".join(out))


def _human(seconds: float) -> str:
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{seconds:.0f}s"
