"""Masking as a byte stream: any input, bounded memory, nothing skipped.

Masking differs from diagnosis in what it may drop: nothing. Binary junk, invalid UTF-8 and a
50 MB line are masked, not skipped, because a secret inside them must not leave either. Lines
are decoded with ``surrogateescape`` so undecodable bytes come out exactly as they went in.
An over-long line is masked in segments cut at whitespace outside any match; a whitespace-free
run longer than half a segment cannot be a log message and becomes ``<blob>``.
"""

from __future__ import annotations

import gzip
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from denpex.minimize.masker import LineMasker, Masker

BLOCK = 1024 * 1024
SEGMENT = 1024 * 1024  # longest piece of one line masked at once
SPAN_MARGIN = 8192  # no detector match is longer than this (regex bounds), except private keys
ENC = "utf-8"
ERRORS = "surrogateescape"

Observer = Callable[[str], None]


class MaskInputError(OSError):
    """The input cannot be opened or decompressed."""


@dataclass
class StreamStats:
    lines: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    segmented_lines: int = 0
    blobs: int = 0


def open_input(path: str) -> BinaryIO:
    """A file, or '-' for stdin; gzip and zstd are decompressed (masking must see the text)."""
    try:
        raw: BinaryIO = sys.stdin.buffer if path == "-" else Path(path).open("rb")  # noqa: SIM115 (returned open)
    except OSError as exc:
        raise MaskInputError(f"{path}: {exc.strerror or exc}") from None
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if head[:2] == b"\x1f\x8b":
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]
    if head[:4] == b"\x28\xb5\x2f\xfd":
        try:
            import zstandard  # type: ignore[import-not-found,unused-ignore]
        except ImportError:
            raw.close()
            raise MaskInputError(f"{path}: zstd-compressed; install the 'zstd' extra to read it") from None
        return zstandard.ZstdDecompressor().stream_reader(raw)  # type: ignore[no-any-return,unused-ignore]
    return raw


def _blocks(fin: BinaryIO, stats: StreamStats) -> Iterator[bytes]:
    while True:
        try:
            block = fin.read(BLOCK)
        except (OSError, EOFError) as exc:
            raise MaskInputError(f"read error after {stats.bytes_in} bytes: {exc}") from None
        if not block:
            return
        stats.bytes_in += len(block)
        yield block


def mask_stream(fin: BinaryIO, fout: BinaryIO, masker: Masker, observe: Observer | None = None) -> StreamStats:
    """Copy ``fin`` to ``fout`` masked, line by line, in bounded memory."""
    stats = StreamStats()
    lm = LineMasker(masker)
    pending = b""
    in_long = False  # inside an over-long line whose head was already written
    in_blob = False  # inside a whitespace-free run being dropped

    def emit(lines: list[str], last_open: bool = False) -> None:
        data = "\n".join(lines).encode(ENC, ERRORS)
        if lines and not last_open:
            data += b"\n"
        fout.write(data)
        stats.bytes_out += len(data)

    for block in _blocks(fin, stats):
        data = pending + block
        cut = data.rfind(b"\n")
        if cut < 0:
            pending, in_long, in_blob = _long_line(data, fout, masker, stats, in_long, in_blob, observe)
            continue
        body, pending = data[:cut], data[cut + 1:]
        lines = body.split(b"\n")
        if in_long or in_blob:
            head = lines.pop(0)
            tail = _finish_long(head, masker, in_blob, stats)
            fout.write(tail + b"\n")
            stats.bytes_out += len(tail) + 1
            stats.lines += 1
            in_long = in_blob = False
        out: list[str] = []
        for raw_line in lines:
            text = raw_line.decode(ENC, ERRORS)
            if observe is not None:
                observe(text)
            out.extend(lm.push(text))
        stats.lines += len(lines)
        if out:
            emit(out)
    if in_long or in_blob:
        tail = _finish_long(pending, masker, in_blob, stats)
        fout.write(tail)
        stats.bytes_out += len(tail)
        stats.lines += 1
        pending = b""
    rest = lm.finish()
    if pending:
        text = pending.decode(ENC, ERRORS)
        if observe is not None:
            observe(text)
        rest = lm.push(text) + lm.finish()
        stats.lines += 1
        emit(rest, last_open=True)
    elif rest:
        emit(rest)
    return stats


def _long_line(data: bytes, fout: BinaryIO, masker: Masker, stats: StreamStats, in_long: bool, in_blob: bool,
               observe: Observer | None) -> tuple[bytes, bool, bool]:
    """Write the masked head of an over-long line; keep what may still belong to a match."""
    while len(data) > SEGMENT:
        text = data[:SEGMENT].decode(ENC, ERRORS)
        if in_blob:
            ws = _first_space(text)
            if ws < 0:
                data = data[SEGMENT:]
                continue
            in_blob = False
            data = text[ws:].encode(ENC, ERRORS) + data[SEGMENT:]
            continue
        if not in_long:
            stats.segmented_lines += 1
            if observe is not None:
                observe(text[:4096])
        in_long = True
        cut = _safe_cut(masker, text)
        if cut is None:  # no whitespace in the back half: a blob, not a message
            start = _run_start(text)
            head = masker.mask_text(text[:start]) + "<blob>"
            stats.blobs += 1
            out = head.encode(ENC, ERRORS)
            in_blob = True
            data = data[SEGMENT:]
        else:
            out = masker.mask_text(text[:cut]).encode(ENC, ERRORS)
            data = text[cut:].encode(ENC, ERRORS) + data[SEGMENT:]
        fout.write(out)
        stats.bytes_out += len(out)
    return data, in_long, in_blob


def _finish_long(tail: bytes, masker: Masker, in_blob: bool, stats: StreamStats) -> bytes:
    text = tail.decode(ENC, ERRORS)
    if in_blob:
        ws = _first_space(text)
        if ws < 0:
            return b""
        text = text[ws:]
    return masker.mask_text(text).encode(ENC, ERRORS)


def _safe_cut(masker: Masker, text: str) -> int | None:
    """The last whitespace in the back half that no match spans (every match is < SPAN_MARGIN)."""
    lo = len(text) // 2
    hi = len(text) - SPAN_MARGIN
    spans = [(s.start, s.end) for s in masker.spans(text)]
    i = hi
    while i > lo:
        i = max(text.rfind(" ", lo, i), text.rfind("\t", lo, i))
        if i < 0:
            return None
        if not any(s <= i < e for s, e in spans):
            return i + 1
    return None


def _first_space(text: str) -> int:
    idx = [i for i in (text.find(" "), text.find("\t")) if i >= 0]
    return min(idx) if idx else -1


def _run_start(text: str) -> int:
    return max(text.rfind(" "), text.rfind("\t")) + 1


def learn_stream(fin: BinaryIO, masker: Masker) -> None:
    """A first pass that only learns host names, so a host is masked even before its NCCL line."""
    pending = b""
    stats = StreamStats()
    for block in _blocks(fin, stats):
        data = pending + block
        cut = data.rfind(b"\n")
        if cut < 0:
            pending = data[-SEGMENT:] if len(data) > SEGMENT else data
            continue
        for raw_line in data[:cut].split(b"\n"):
            masker.learn(raw_line[:SEGMENT].decode(ENC, ERRORS))
        pending = data[cut + 1:]
    if pending:
        masker.learn(pending[:SEGMENT].decode(ENC, ERRORS))
