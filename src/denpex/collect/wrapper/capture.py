"""A bounded copy of the job's output: the first M bytes, then a ring of the last N bytes.

The head keeps what a failure is explained by but printed early (NCCL ``comm ... busId``
lines, the config, the world size); the tail keeps the death itself. The ring lives on disk
as a few append-only segment files next to the head, so a wrapper killed with SIGKILL still
leaves ordered, readable files behind; on a clean finish they are joined into one file with
a marker line saying how much was left out.

Every write is fail-open: the first OSError (disk full, quota, RLIMIT_FSIZE, a vanished
folder) stops capturing, reports once through ``warn``, and the relay carries on.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

MIN_SEGMENT = 64 * 1024
BUFFER = 256 * 1024   # while the head fills: output gathered in memory before one write
BUFFER_AGE = 0.2      # output waits in memory at most this long (seconds), so a killed wrapper loses little
COPY_BLOCK = 1024 * 1024
_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC


@dataclass
class CaptureStats:
    path: str
    total_bytes: int      # everything the child wrote
    kept_bytes: int       # what the capture file holds
    skipped_bytes: int    # left out between head and tail
    failed: str | None    # why capturing stopped early, if it did


class Capture:
    def __init__(self, path: Path, head_bytes: int, tail_bytes: int, warn: Callable[[str], None]) -> None:
        self.path = path
        self.head_left = head_bytes
        self.tail_bytes = tail_bytes
        self.segment_size = max(tail_bytes // 4, MIN_SEGMENT)
        self.keep_segments = tail_bytes // self.segment_size + 1
        self.total = 0
        self.kept_head = 0
        self.failed: str | None = None
        self._warn = warn
        self._head_fd = -1
        self._seg_fd = -1
        self._seg_fill = 0
        self._seg_no = 0
        self._segments: list[tuple[Path, int]] = []  # (path, bytes) oldest first
        self._dropped_segments = 0
        self._head_last = b"\n"
        self._buf = bytearray()
        self._buf_since = 0.0
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._head_fd = os.open(path, _FLAGS, 0o644)
        except OSError as exc:
            self._fail(exc)

    @property
    def active(self) -> bool:
        return self.failed is None

    @property
    def pending(self) -> bool:
        return bool(self._buf)

    def write(self, data: bytes | memoryview) -> None:
        """Keep ``data`` (buffered: one disk write per BUFFER bytes); never raises.

        The first output is written at once, so an unwritable capture is reported at the start
        of the job rather than minutes later.
        """
        first = self.total == 0
        self.total += len(data)
        if self.failed is not None:
            return
        if not self._buf:
            self._buf_since = time.monotonic()
        self._buf += data
        if first or (self.head_left > 0 and len(self._buf) >= BUFFER):
            self.flush()
        elif self.head_left <= 0 and len(self._buf) > 2 * max(self.tail_bytes, BUFFER):
            # Past the head only the last tail_bytes survive anyway: a fast producer's older
            # output is dropped here, in memory, instead of being written and rotated away.
            cut = len(self._buf) - max(self.tail_bytes, BUFFER)
            del self._buf[:cut]
            self._dropped_segments += cut

    def flush_if_stale(self, now: float) -> None:
        if self._buf and now - self._buf_since >= BUFFER_AGE:
            self.flush()

    def flush(self) -> None:
        if not self._buf or self.failed is not None:
            self._buf.clear()
            return
        with memoryview(self._buf) as data:
            self._store(data)
        self._buf.clear()

    def _store(self, data: bytes | memoryview) -> None:
        try:
            if self.head_left > 0:
                part = data[: self.head_left]
                _write_all(self._head_fd, part)
                self.head_left -= len(part)
                self.kept_head += len(part)
                self._head_last = bytes(part[-1:])
                data = data[len(part):]
                if not data:
                    return
            if self.tail_bytes > 0:
                self._write_tail(data)
        except OSError as exc:
            self._fail(exc)

    def _write_tail(self, data: bytes | memoryview) -> None:
        mv = memoryview(data)
        while mv:
            if self._seg_fd < 0 or self._seg_fill >= self.segment_size:
                self._next_segment()
            n = min(len(mv), self.segment_size - self._seg_fill)
            _write_all(self._seg_fd, mv[:n])
            self._seg_fill += n
            path, size = self._segments[-1]
            self._segments[-1] = (path, size + n)
            mv = mv[n:]

    def _next_segment(self) -> None:
        if self._seg_fd >= 0:
            os.close(self._seg_fd)
            self._seg_fd = -1
        self._seg_no += 1
        seg = self.path.with_name(f"{self.path.stem}.tail-{self._seg_no:06d}{self.path.suffix}")
        self._seg_fd = os.open(seg, _FLAGS, 0o644)
        self._seg_fill = 0
        self._segments.append((seg, 0))
        while len(self._segments) > self.keep_segments:
            old, size = self._segments.pop(0)
            self._dropped_segments += size
            with contextlib.suppress(OSError):
                old.unlink()

    def _fail(self, exc: OSError) -> None:
        if self.failed is None:
            self.failed = exc.strerror or str(exc)
            self._warn(f"capture to {self.path} stopped ({self.failed}); the job runs on unaffected")

    def close(self) -> CaptureStats:
        """Join head, marker and tail into the capture file; on failure leave the pieces as they are."""
        self.flush()
        if self._seg_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._seg_fd)
            self._seg_fd = -1
        tail_kept = sum(size for _, size in self._segments)
        skipped = self._dropped_segments
        if self.failed is None and self._head_fd >= 0 and self._segments:
            try:
                if skipped:
                    lead = b"" if self._head_last == b"\n" else b"\n"
                    _write_all(self._head_fd, lead + f"[denpex: {skipped} bytes of output not kept here; "
                                                      f"first {self.kept_head} and last {tail_kept} bytes "
                                                      "kept]\n".encode())
                for seg, _ in self._segments:
                    _append_file(self._head_fd, seg)
                    seg.unlink()
                self._segments = []
            except OSError as exc:
                self._fail(exc)
        if self._head_fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._head_fd)
            self._head_fd = -1
        return CaptureStats(path=str(self.path), total_bytes=self.total, kept_bytes=self.kept_head + tail_kept,
                            skipped_bytes=self.total - self.kept_head - tail_kept, failed=self.failed)


def _write_all(fd: int, data: bytes | memoryview) -> None:
    mv = memoryview(data)
    while mv:
        n = os.write(fd, mv)
        mv = mv[n:]


def _append_file(dst_fd: int, src: Path) -> None:
    fd = os.open(src, os.O_RDONLY | os.O_CLOEXEC)
    try:
        while True:
            block = os.read(fd, COPY_BLOCK)
            if not block:
                return
            _write_all(dst_fd, block)
    finally:
        os.close(fd)
