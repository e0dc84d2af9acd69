"""The node's kernel log around a run, collected without root.

Order of attempts: ``/dev/kmsg`` (what ``dmesg`` reads; exact microsecond stamps, no
subprocess), the ``dmesg`` command (for containers that lack /dev/kmsg but allow
syslog(2)), then ``journalctl -k`` (readable by members of adm/systemd-journal where
dmesg_restrict=1). Only records from ``since`` on are kept, so an Xid from last week never
becomes today's root cause. Lines are written as ``2026-11-29T14:01:01.123456+00:00 HOST
kernel: MESSAGE``, a form the readers recognise as a kernel log with its host and time.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime

MAX_LINES = 20000
TIMEOUT = 10.0
MARGIN = 120.0  # seconds before the run's start still worth seeing (a fault that preceded the crash)
_DMESG_RAW = re.compile(r"^\[\s*(\d+)\.(\d+)\] ?(.*)$")
_JOURNAL = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")


@dataclass
class KernelLog:
    source: str | None                       # "/dev/kmsg", "dmesg", "journalctl -k", or None
    lines: list[str] = field(default_factory=list)
    tried: list[str] = field(default_factory=list)  # why each attempt gave nothing


def boot_time() -> float:
    """Wall-clock time of boot, for turning kernel stamps (seconds since boot) into times."""
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


def _stamp(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).isoformat(timespec="microseconds")


def collect(since: float, host: str) -> KernelLog:
    """Kernel records since the wall-clock time ``since`` (minus a margin); never raises."""
    result = KernelLog(source=None)
    start = since - MARGIN
    for name, attempt in (("/dev/kmsg", _kmsg), ("dmesg", _dmesg), ("journalctl -k", _journal)):
        try:
            lines = attempt(start, host)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            result.tried.append(f"{name}: {getattr(exc, 'strerror', None) or exc}")
            continue
        if lines is None:
            result.tried.append(f"{name}: not permitted or empty")
            continue
        result.source = name
        result.lines = lines[-MAX_LINES:]
        return result
    return result


def _kmsg(start: float, host: str) -> list[str] | None:
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    base = boot_time()
    out: list[str] = []
    try:
        while True:
            try:
                rec = os.read(fd, 8192)
            except BlockingIOError:
                break
            except BrokenPipeError:  # the record under our cursor was overwritten; the next read moves on
                continue
            if not rec:
                break
            head, _, body = rec.decode("utf-8", errors="replace").partition(";")
            parts = head.split(",")
            if len(parts) < 3:
                continue
            wall = base + int(parts[2]) / 1e6
            if wall < start:
                continue
            msg = body.split("\n", 1)[0]  # continuation lines (" KEY=value") are metadata
            out.append(f"{_stamp(wall)} {host} kernel: {_unescape(msg)}")
    finally:
        with contextlib.suppress(OSError):
            os.close(fd)
    return out


def _unescape(msg: str) -> str:
    """/dev/kmsg writes non-printable bytes as ``\\xNN``; dmesg shows them decoded."""
    if "\\x" not in msg:
        return msg
    return re.sub(r"\\x([0-9a-fA-F]{2})", lambda m: chr(int(m.group(1), 16)) if m.group(1) != "0a" else " ", msg)


def _dmesg(start: float, host: str) -> list[str] | None:
    proc = subprocess.run(["dmesg"], capture_output=True, timeout=TIMEOUT, check=False,
                          stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C"})
    if proc.returncode != 0 or not proc.stdout:
        return None
    base = boot_time()
    out: list[str] = []
    for line in proc.stdout.decode("utf-8", errors="replace").splitlines():
        m = _DMESG_RAW.match(line)
        if not m:
            continue
        wall = base + float(f"{m.group(1)}.{m.group(2)}")
        if wall >= start:
            out.append(f"{_stamp(wall)} {host} kernel: {m.group(3)}")
    return out


def _journal(start: float, host: str) -> list[str] | None:
    proc = subprocess.run(["journalctl", "-k", "--no-pager", "-q", "-o", "short-iso-precise",
                           "--since", f"@{int(start)}"], capture_output=True, timeout=TIMEOUT, check=False,
                          stdin=subprocess.DEVNULL, env={**os.environ, "LC_ALL": "C", "SYSTEMD_COLORS": "0"})
    lines = [ln for ln in proc.stdout.decode("utf-8", errors="replace").splitlines() if _JOURNAL.match(ln)]
    if proc.returncode != 0 and not lines:
        return None
    return lines
