"""Open whatever the user points at and stream it as text chunks of whole lines.

Inputs are recognised by content (gzip and zstd magic, binary junk), never trusted by name.
Nothing is ever read whole: files stream in blocks, an over-long line is cut for matching,
and a decompression bomb stops at a size limit. Every problem becomes a one-line warning
attached to its source; a bad file never stops the others from being read.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import re
import stat
import sys
import zlib
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

BLOCK = 4 * 1024 * 1024
MAX_LINE = 1024 * 1024  # longer lines are cut to this many bytes for matching
MAX_DECOMPRESSED = int(os.environ.get("DENPEX_MAX_DECOMPRESSED", str(8 * 1024**3)))
SKIP_DIRS = {".git", "__pycache__", ".venv", "node_modules", ".denpex"}
_ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


class InputError(Exception):
    """The input as a whole cannot be read (missing path, nothing to read)."""


@dataclass
class Source:
    display: str
    path: Path | None  # None: standard input
    index: int = 0
    warnings: list[str] = field(default_factory=list)
    compression: str | None = None
    bytes_read: int = 0


@dataclass
class Block:
    """Whole lines as normalised bytes (UTF-8 as written), each ending in a newline (the last one too)."""

    data: bytes

    @property
    def n_lines(self) -> int:
        return self.data.count(b"\n")


def expand_paths(args: list[str]) -> tuple[list[Source], list[str]]:
    """Sources in a stable order, plus errors for arguments that could not be read at all."""
    sources: list[Source] = []
    errors: list[str] = []
    for arg in args:
        if arg == "-":
            sources.append(Source(display="<stdin>", path=None))
            continue
        p = Path(arg)
        if p.is_dir():
            files = sorted(_walk(p))
            if not files:
                errors.append(f"{arg}: folder holds no files")
            for f in files:
                rel = f.relative_to(p).as_posix()
                display = rel if len(args) == 1 else f"{arg.rstrip('/')}/{rel}"
                sources.append(Source(display=display, path=f))
        elif p.exists():
            sources.append(Source(display=arg, path=p))
        else:
            errors.append(f"{arg}: no such file or folder")
    for i, s in enumerate(sources):
        s.index = i
    return sources, errors


def _walk(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS)
        for name in filenames:
            yield Path(dirpath) / name


def _open_raw(src: Source) -> BinaryIO:
    if src.path is None:
        return sys.stdin.buffer
    return src.path.open("rb")


def _peek(fh: BinaryIO, n: int) -> tuple[bytes, BinaryIO]:
    """The first ``n`` bytes, and a stream that still yields them.

    A file goes back to where it was, so every block is one read from the kernel; a pipe gets
    the bytes replayed (which costs a copy of its first block).
    """
    start = None
    with contextlib.suppress(OSError, ValueError):
        start = fh.tell() if fh.seekable() else None
    head = fh.read(n)
    if start is not None:
        with contextlib.suppress(OSError, ValueError):
            fh.seek(start)
            return head, fh
    return head, _Prepend(head, fh)  # type: ignore[return-value]


class _Prepend(io.RawIOBase):
    """A stream that replays bytes already read, so non-seekable stdin can be sniffed."""

    def __init__(self, head: bytes, rest: BinaryIO) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def readinto(self, b: bytearray) -> int:  # type: ignore[override]
        if self._head:
            n = min(len(b), len(self._head))
            b[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        data = self._rest.read(len(b))
        n = len(data)
        b[:n] = data
        return n

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            out = self._head + self._rest.read()
            self._head = b""
            return out
        if self._head:
            out = self._head[:size]
            self._head = self._head[size:]
            if len(out) < size:
                out += self._rest.read(size - len(out))
            return out
        return self._rest.read(size)

    def close(self) -> None:
        try:
            self._rest.close()
        finally:
            super().close()


def _decompressor(src: Source, head: bytes, fh: BinaryIO) -> BinaryIO:
    if head[:2] == b"\x1f\x8b":
        src.compression = "gzip"
        return gzip.GzipFile(fileobj=fh, mode="rb")  # type: ignore[return-value]
    if head[:4] == b"\x28\xb5\x2f\xfd":
        src.compression = "zstd"
        try:
            import zstandard  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raise _SkipSource("zstd-compressed; install the 'zstd' extra "
                              "(pip install 'denpex[zstd]') to read it") from None
        return zstandard.ZstdDecompressor().stream_reader(fh)  # type: ignore[no-any-return,unused-ignore]
    return fh


class _SkipSource(Exception):
    pass


_TEXT_BYTES = bytes([b for b in range(256) if b >= 0x20 or b in (9, 10, 13, 12, 27)])
_HIGH_BYTES = bytes(range(0x80, 0x100))


def is_binary(sample: bytes) -> bool:
    """Binary junk: NUL bytes or mostly non-text bytes in the first block."""
    if not sample:
        return False
    if sample.count(b"\x00") > max(8, len(sample) // 100):
        return True
    text_bytes = len(sample) - len(sample.translate(None, _TEXT_BYTES))
    if text_bytes / len(sample) < 0.85:
        return True
    try:
        sample.decode("utf-8")
        return False
    except UnicodeDecodeError as exc:
        if exc.start >= len(sample) - 4:
            return False  # a multi-byte character cut by the sample's end
        bad = len(sample) - len(sample.translate(None, _HIGH_BYTES))
        decoded = sample.decode("utf-8", errors="replace")
        return decoded.count("\ufffd") > max(64, bad // 2) and decoded.count("\ufffd") > len(sample) // 20


def read_blocks(src: Source, part: tuple[int, int | None] | None = None) -> Generator[Block, None, None]:
    """Stream a source as blocks of whole lines; problems go to ``src.warnings``.

    Blocks fall at fixed places: block k holds the lines whose newline lies in the k-th
    BLOCK-sized stretch of the input. So ``part`` = (start, stop), two split points from
    ``split_points``, reads exactly the blocks a whole-file read would give for that stretch,
    and a file scanned in parts by several processes gives what one process would.
    """
    try:
        raw = _open_raw(src)
    except OSError as exc:
        src.warnings.append(f"cannot read: {exc.strerror or exc}")
        return
    try:
        if part is not None and part[0] > 0:
            start, stop = part
            raw.seek(start - SPLIT_SEARCH)
            before = raw.read(SPLIT_SEARCH)
            pending = before[before.rfind(b"\n") + 1:]
            yield from _blocks_from_stream(src, raw, pending=pending, stop=stop, base=start)
            return
        head, raw = _peek(raw, 8)
        try:
            stream = _decompressor(src, head, raw)
        except _SkipSource as exc:
            src.warnings.append(str(exc))
            return
        yield from _blocks_from_stream(src, stream, stop=part[1] if part else None)
    except OSError as exc:
        src.warnings.append(f"read error: {exc.strerror or exc}")
    finally:
        with contextlib.suppress(OSError):
            raw.close()


SPLIT_SEARCH = 64 * 1024  # a split point needs a newline this close before it


def split_points(path: Path, size: int, parts: int) -> list[int]:
    """Block-aligned offsets that cut a plain file into about ``parts`` stretches.

    A point is used only where a newline lies within SPLIT_SEARCH bytes before it, so no
    stretch starts inside an over-long line; the list starts with 0 and ends with the size.
    """
    step = max(1, -(-size // max(1, parts) // BLOCK)) * BLOCK
    points = [0]
    with path.open("rb") as fh:
        for at in range(step, size, step):
            fh.seek(at - SPLIT_SEARCH)
            if b"\n" in fh.read(SPLIT_SEARCH):
                points.append(at)
    return [*points, size]


def _blocks_from_stream(src: Source, stream: BinaryIO, pending: bytes = b"", stop: int | None = None,
                        base: int = 0) -> Iterator[Block]:
    """Blocks from ``stream``, which is at offset ``base`` of the input; stop at offset ``stop``."""
    cut_lines = 0
    skipping_long = False
    total = 0
    broken: list[str] = []
    while True:
        block = b"" if broken else _read_block(stream, BLOCK, src, total, broken)
        if base == 0 and total == 0 and is_binary(block[:8192]):
            src.warnings.append("binary data, not a text log; skipped")
            return
        if not block:
            break
        total += len(block)
        if src.compression and total > MAX_DECOMPRESSED:
            src.warnings.append(f"decompressed size passed {MAX_DECOMPRESSED} bytes; stopped reading "
                                "(set DENPEX_MAX_DECOMPRESSED to raise the limit)")
            break
        # pending never holds a newline: the block's last newline ends the body. The body is
        # built with one copy (a 4 MiB concatenation and then a slice of it would be two).
        cut = block.rfind(b"\n")
        if cut >= 0:
            if skipping_long:
                body = block[block.find(b"\n") + 1:cut + 1]
                skipping_long = False
            elif pending:
                body = b"".join((pending, memoryview(block)[:cut + 1]))
            else:
                body = block if cut + 1 == len(block) else block[:cut + 1]
            pending = block[cut + 1:]
            if body:
                body, extra_cut = _cap_long_lines(body)
                cut_lines += extra_cut
                yield _block(body)
        else:
            data = pending + block
            if skipping_long:
                pending = b""
            elif len(data) > MAX_LINE:
                # An over-long line: keep its head for matching, drop the rest of it.
                cut_lines += 1
                yield _block(data[:MAX_LINE] + b"\n")
                skipping_long = True
                pending = b""
            else:
                pending = data
        if stop is not None and base + total >= stop:
            pending = b""  # the lines after the last newline belong to the next stretch
            break
    if pending and not skipping_long:
        if len(pending) > MAX_LINE:
            cut_lines += 1
        yield _block(pending[:MAX_LINE] + b"\n")
    src.bytes_read += total
    if cut_lines:
        src.warnings.append(f"{cut_lines} line(s) longer than {MAX_LINE} bytes were cut to that length for matching")


def _read_block(stream: BinaryIO, size: int, src: Source, total: int, broken: list[str]) -> bytes:
    """Up to ``size`` bytes; a corrupt or truncated stream ends the block early, keeping what came."""
    parts: list[bytes] = []
    have = 0
    # Compressed streams are read in small steps (read1), so a truncated tail loses
    # only the last step rather than the whole block.
    reader = getattr(stream, "read1", None) if src.compression else None
    left = None if reader else _bytes_left(stream)
    while have < size:
        # A plain file is asked for no more than it holds (a step more, should it be growing):
        # a read of a whole block from a small file allocates the block and shrinks it again.
        want = size - have if left is None else min(size - have, max(left - have, _GROWTH_STEP))
        try:
            data = reader(min(65536, size - have)) if reader else stream.read(want)
        except (EOFError, zlib.error, gzip.BadGzipFile, OSError, ValueError) as exc:
            broken.append(exc.__class__.__name__)
            src.warnings.append(f"truncated or corrupt {src.compression or 'stream'} after "
                                f"{total + have} bytes ({exc.__class__.__name__}); diagnosed what was readable")
            break
        except Exception as exc:  # zstandard raises its own error type
            broken.append(exc.__class__.__name__)
            src.warnings.append(f"corrupt {src.compression or 'stream'} after {total + have} bytes ({exc}); "
                                "diagnosed what was readable")
            break
        if not data:
            break
        parts.append(data)
        have += len(data)
    return b"".join(parts)


_GROWTH_STEP = 65536


def _bytes_left(stream: BinaryIO) -> int | None:
    """Bytes from the position of a regular file to its end; None for pipes and wrappers."""
    try:
        st = os.fstat(stream.fileno())
        return max(0, st.st_size - stream.tell()) if stat.S_ISREG(st.st_mode) else None
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        return None


def _cap_long_lines(body: bytes) -> tuple[bytes, int]:
    if len(body) <= MAX_LINE:
        return body, 0
    # Every window of MAX_LINE/2 bytes holding a newline proves no line is longer than
    # MAX_LINE: a few C-level finds instead of splitting the block into lines.
    half = max(1, MAX_LINE // 2)
    if all(body.find(b"\n", pos, pos + half) >= 0 for pos in range(0, len(body) - half, half)):
        return body, 0
    parts = body.split(b"\n")
    cut = 0
    for i, p in enumerate(parts):
        if len(p) > MAX_LINE:
            parts[i] = p[:MAX_LINE]
            cut += 1
    return (b"\n".join(parts) if cut else body), cut


def normalize_block(body: bytes) -> bytes:
    """Normalise whole lines: Windows line ends, colour codes and NUL bytes go.

    A lone carriage return (a progress bar redrawing itself) stays inside its line: every
    engine treats it as white space, and events show it as a space. Bytes that are not UTF-8
    stay as they are: matched lines are decoded with replacement characters, and every engine
    treats such bytes as it treats the characters they become.
    """
    if _has_crlf(body):
        body = body.replace(b"\r\n", b"\n")
    if b"\x1b" in body:
        body = _ANSI.sub(b"", body)
    if b"\x00" in body:
        body = body.replace(b"\x00", b"")
    return body


_CRLF = re.compile(rb"\r\n")


def _has_crlf(body: bytes) -> bool:
    """Whether some line ends with CR LF, in a few one-byte searches.

    A two-byte search runs at a thirtieth of memory speed; carriage returns are rare outside
    progress bars, and a line holding some is looked at once, at its end, however many it holds.
    """
    find = body.find
    pos = find(b"\r")
    for _ in range(256):
        if pos < 0:
            return False
        end = find(b"\n", pos)
        if end < 0:
            return False
        if body[end - 1] == 13:
            return True
        pos = find(b"\r", end)
    return pos >= 0 and _CRLF.search(body, pos) is not None


def _block(body: bytes) -> Block:
    return Block(normalize_block(body))
