"""Progress on stderr for long diagnoses: only on a terminal, only after the first second.

A person waiting on 10 GB of logs wants to know it is moving; a script reading stdout or a
log file wants nothing extra. So nothing is printed unless stderr is a TTY, and nothing before
one second has passed; the line is rewritten in place and erased at the end.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import TextIO


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


class Progress:
    DELAY_S = 1.0
    INTERVAL_S = 0.1

    def __init__(self, total_files: int, total_bytes: int, stream: TextIO | None = None,
                 enabled: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.total_files = total_files
        self.total_bytes = total_bytes
        self.files = 0
        self.bytes = 0
        self.start = time.monotonic()
        self._last = 0.0
        self._shown = False

    def add_bytes(self, n: int) -> None:
        self.bytes += n
        self._maybe_show()

    def file_done(self) -> None:
        self.files += 1
        self._maybe_show()

    def _maybe_show(self) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        elapsed = now - self.start
        if elapsed < self.DELAY_S or now - self._last < self.INTERVAL_S:
            return
        self._last = now
        rate = self.bytes / elapsed if elapsed else 0.0
        eta = ""
        if rate > 0 and self.total_bytes > self.bytes:
            eta = f", ETA {int((self.total_bytes - self.bytes) / rate)} s"
        line = (f"denpex: {self.files}/{self.total_files} files, {_human(self.bytes)}"
                f"{' of ' + _human(self.total_bytes) if self.total_bytes else ''}, {_human(rate)}/s{eta}")
        self.stream.write("\r" + line[:200] + "\x1b[K")
        self.stream.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def total_size(paths: list[os.PathLike[str] | str]) -> int:
    total = 0
    for p in paths:
        with contextlib.suppress(OSError):
            total += os.stat(p).st_size
    return total
