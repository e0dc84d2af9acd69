"""Read every source, match every line, and keep only what diagnosis needs.

Output per source: the matched lines as ``Event``s with their time, rank, host and GPU
context, and a coverage record (kind, lines, ranks seen, warnings). Unmatched lines are
counted and forgotten, so memory stays bounded whatever the input size.

A source is scanned in one or more parts (stretches of whole blocks, see
``collect.inputs.read_blocks``); every part is scanned on its own and the parts are merged in
order. Part results carry just enough (hit ordinals, the first and last progress lines) that
the merge gives exactly what one sequential pass would, so a large file spread over all cores
gives the same incident as one process.
"""

from __future__ import annotations

import bisect
import contextlib
import functools
import itertools
import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denpex.catalog.loader import Catalog
from denpex.catalog.model import Signature
from denpex.collect.allocator import reuse_freed_blocks
from denpex.collect.inputs import BLOCK, Source, read_blocks, split_points
from denpex.collect.kinds import detect_kind, rank_from_name
from denpex.collect.lineinfo import host_prefixes, looks_mpi_tagged, looks_srun_labelled, normalize_pci, parse_line_info
from denpex.collect.timestamps import STAMP_BYTES, YEAR_UNKNOWN, Stamp, may_hold_stamp, parse_stamp
from denpex.evidence import Event
from denpex.scan.engine import Candidate, Engine, Limits, default_engine
from denpex.scan.frames import raising_frame
from denpex.scan.progress import Progress
from denpex.scan.source_end import cut_traceback_line

# Launcher prefixes at the start of a line. Each is searched as "newline + prefix" (re finds
# the newlines fast, where a multi-line "^" makes it try every byte) plus the block's first line.
_RANK_PREFIX = rb"(?:[\d\-:T.,/ ]{8,32} |\[\d+\] )?(?:\[default\d+\]:)?\[(rank|default)(\d+)\]:"
_SRUN_PREFIX = rb"[ \t]{0,4}(\d{1,5}): "
_MPI_PREFIX = rb"\[(?:\d+,)?(\d+)\]<std"
_PREFIXES = {name: (re.compile(b"\n" + rx), re.compile(rx))
             for name, rx in (("rank", _RANK_PREFIX), ("srun", _SRUN_PREFIX), ("mpi", _MPI_PREFIX))}


def _line_prefixes(name: str, data: bytes) -> list[Any]:
    later, first = _PREFIXES[name]
    found = later.findall(data)
    m = first.match(data)
    if m is not None:
        found.append(m.groups() if len(m.groups()) > 1 else m.group(1))
    return found


_RANK_TOKEN = rb"\[(rank|default)(\d+)\]:"
_MAX_RANK_TOKENS = 16  # more distinct tokens in one block: the plain line-by-line search
_MAX_TRIES = 64  # occurrences of one token looked at before the plain search takes over


def _rank_prefixes(data: bytes) -> set[tuple[bytes, bytes]]:
    """The set ``_line_prefixes("rank", data)`` gives, without a match attempt at every line.

    The prefix regex tried at every newline (a time stamp of up to 32 characters may come
    first) costs about as much as Hyperscan's whole pass when launcher prefixes are present.
    A block holds few distinct rank tokens ("[default3]:"), each on most of its lines: each is
    found once anywhere (a search that skips the tokens already found), then confirmed by the
    prefix regex at the start of a line it occurs on, which captures exactly that token.
    """
    tokens: list[tuple[bytes, bytes]] = []
    pos = 0
    while True:
        m = _token_search(frozenset(tokens)).search(data, pos)
        if m is None:
            break
        if len(tokens) == _MAX_RANK_TOKENS:
            return set(_line_prefixes("rank", data))
        tokens.append((m.group(1), m.group(2)))
        pos = m.start()
    line_rx = _PREFIXES["rank"][1]
    found: set[tuple[bytes, bytes]] = set()
    for kind, n in tokens:
        needle = b"[" + kind + n + b"]:"
        at = data.find(needle)
        for _ in range(_MAX_TRIES):
            if at < 0:
                break
            m = line_rx.match(data, data.rfind(b"\n", 0, at) + 1)
            if m is not None and m.groups() == (kind, n):
                found.add((kind, n))
                break
            line_end = data.find(b"\n", at)
            at = data.find(needle, line_end) if line_end >= 0 else -1
        else:
            if at >= 0:
                return set(_line_prefixes("rank", data))
    return found


@functools.lru_cache(maxsize=4096)
def _token_search(known: frozenset[tuple[bytes, bytes]]) -> re.Pattern[bytes]:
    """A search for the rank tokens not in ``known`` (a set, so the order they were found in makes one regex)."""
    if not known:
        return re.compile(_RANK_TOKEN)
    skip = b"|".join(sorted(kind + n for kind, n in known))
    return re.compile(rb"\[(?!(?:" + skip + rb")\]:)" + _RANK_TOKEN[2:])

LOOKBACK_LINES = 64
MAX_EVENTS_PER_SIGNATURE = 2000  # per source; beyond this a flood adds nothing to a diagnosis
# A context signature whose fields feed no decision (which network NCCL chose, a link that came
# back) is worth its first few lines; one that maps ranks or counts progress keeps the full cap.
MAX_INFO_EVENTS = 4
# Across all sources (a 1,024-rank job is 1,024 files): enough rank maps for every rank of a
# large job several times over, a few hundred lines of each informational fact.
MAX_CONTEXT_EVENTS_TOTAL = 8192
MAX_INFO_EVENTS_TOTAL = 256
# A source keeps at least this many of one such signature, and no more than its share of the
# total: with 1,024 rank files each keeps its first 8 rank maps (its first communicators),
# where a floor of 16 built twice the total and the total then dropped every file past the 512th.
MIN_CONTEXT_PER_SOURCE = 8
DECISION_FIELDS = frozenset({"rank", "local_rank", "world_size", "step", "epoch", "checkpoint", "completed",
                             "failed_rank", "hung_ranks", "last_completed", "xid", "caused_by_xid"})
# Progress lines (every training step) are kept as the first few and the latest:
# diagnosis needs where the run started, whether it went on after an error, and how far it got.
# Six latest lines answer how far it got and whether two followed an error as well as fifty.
PROGRESS_HEAD = 3
PROGRESS_TAIL = 6
_CONTEXT_PREFIX = 24  # a context line without fields is told apart by its launcher prefix (rank)
_SAMPLE = 16384  # bytes of a source's start that tell its kind (about a hundred lines)

ContextKey = tuple[str, str, tuple[tuple[str, str], ...]]


@dataclass
class SourceResult:
    source: Source
    kind: str = "training_log"
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    file_rank: int | None = None
    years: set[int] = field(default_factory=set)
    dropped: dict[str, int] = field(default_factory=dict)  # lines left out, at least this many


@dataclass
class _Progress:
    """A part's first PROGRESS_HEAD progress events of one signature, then its latest ones."""

    head: list[Event] = field(default_factory=list)
    tail: deque[Event] = field(default_factory=lambda: deque(maxlen=PROGRESS_TAIL))


@dataclass
class PartResult:
    """One stretch of a source, scanned on its own; line numbers count from the stretch."""

    source: Source
    kind: str
    srun: bool
    hosts: tuple[str, ...] = ()  # names that prefix lines ("worker-1: "), from the source's first block
    tagged: bool = False  # lines behind mpirun's --tag-output prefix ("[1,3]<stderr>:")
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    # (ordinal of the hit among its signature's hits in this part, dedupe key or None, event)
    events: list[tuple[int, ContextKey | None, Event]] = field(default_factory=list)
    hits: dict[str, int] = field(default_factory=dict)
    progress: dict[str, _Progress] = field(default_factory=dict)


class Scanner:
    def __init__(self, catalog: Catalog, engine: Engine | None = None, progress: Progress | None = None,
                 sources: int = 1) -> None:
        self.catalog = catalog
        self.engine = engine or default_engine(catalog.signatures)
        self.progress = progress
        self.caps = [_cap(sig, sources) for sig in catalog.signatures]
        self.caps_by_id = {sig.id: cap for sig, cap in zip(catalog.signatures, self.caps, strict=True)}
        # Confirmations remembered per line shape (digits the patterns cannot tell apart made
        # one): the same step line with another number is answered from memory.
        self._answers: dict[tuple[int, bytes], bool] = {}
        # Signatures whose lines repeat by the thousand (rank maps, network facts, progress):
        # the engine is told how many more lines of them a block can use.
        sigs = catalog.signatures
        self._limitable = [(i, s.id) for i, s in enumerate(sigs) if s.role == "context" and s.category != "progress"]
        self._listed = [(i, sigs[i].id) for i in sorted(self.engine.listed_progress)]
        self._at_end = [i for i, s in enumerate(sigs) if s.end_of_source]

    def _limits(self, res: PartResult) -> Limits:
        """Lines of each flood-prone signature this block can still use (see ``Engine.scan``).

        A context signature past its cap needs one more line at most (that lines were left
        out); a listed progress signature needs the part's first few and the block's latest.
        """
        hits = res.hits
        limits: Limits = {}
        for idx, sid in self._limitable:
            limits[idx] = (max(0, self.caps[idx] + 1 - hits.get(sid, 0)), 0)
        for idx, sid in self._listed:
            kept = res.progress.get(sid)
            limits[idx] = (PROGRESS_HEAD - (len(kept.head) if kept is not None else 0), PROGRESS_TAIL)
        return limits

    def _confirm(self, idx: int, raw: bytes) -> bool:
        """Whether signature ``idx`` matches the line ``raw`` (re on the decoded line, or memory)."""
        if len(raw) > _MEMO_LINE:
            return self.catalog.signatures[idx].matches(raw.decode("utf-8", "replace"))
        key = (idx, raw.translate(self.catalog.signatures[idx].digit_shape))
        got = self._answers.get(key)
        if got is None:
            # Digits are ASCII and never inside a multi-byte character: the shape decodes to
            # the decoded line with its digits replaced.
            got = self.catalog.signatures[idx].matches(key[1].decode("utf-8", "replace"))
            if len(self._answers) >= _MEMO_ENTRIES:
                self._answers.clear()
            self._answers[key] = got
        return got

    def scan_source(self, src: Source) -> SourceResult:
        return merge_parts(src, [self.scan_part(src)], self.caps_by_id)

    def scan_part(self, src: Source, part: tuple[int, int | None] | None = None,
                  head: Head | None = None) -> PartResult:
        """Scan the whole source, or the stretch ``part`` whose kind the first block told (``head``)."""
        res: PartResult | None = None if head is None else PartResult(src, *head)
        seen: set[ContextKey] = set()
        last = b""
        for block in read_blocks(src, part):
            if res is None:
                res = PartResult(src, *classify(src.display, block.data))
            if self.progress is not None:
                self.progress.add_bytes(len(block.data))
            blanked = _blank_prefixes(block.data, res.hosts, res.tagged) if res.hosts or res.tagged else None
            res.lines += self._match(block.data, res, seen, blanked)
            # mpirun's prefixes name the ranks: read them where they are still written.
            self._ranks(block.data if blanked is None or res.tagged else blanked, res, self.engine.markers)
            last = block.data
        if res is None:
            return PartResult(src, detect_kind(src.display, ""), False)
        if last and (part is None or part[1] is None):  # this part ends where the source does
            self._source_end(last, res)
        return res

    def _source_end(self, data: bytes, res: PartResult) -> None:
        """Events of the signatures that count only where a source ends (see ``source_end``)."""
        sigs = self.catalog.signatures
        for idx in self._at_end:
            sig = sigs[idx]
            ls = cut_traceback_line(data, sig.matches)
            if ls is None:
                continue
            le = data.find(b"\n", ls)
            line = data[ls:le if le >= 0 else len(data)].decode("utf-8", "replace")
            n = res.hits.get(sig.id, 0)
            res.hits[sig.id] = n + 1
            line_no = res.lines - data.count(b"\n", ls) + 1
            ev = self._event(sig, sig.extract_fields(line), line, line_no, ls, res, _StampMemo(data))
            res.events.append((n + 1, None, ev))

    def _ranks(self, data: bytes, res: PartResult, markers: set[str]) -> None:
        """Ranks named by launcher prefixes; ``markers`` (from the engine's pass) says which to look for."""
        if "rank" in markers:
            found = _rank_prefixes(data)
            strong = {int(n) for kind, n in found if kind == b"rank"}
            res.ranks.update(strong or {int(n) for _, n in found})
        if "mpi" in markers:
            res.ranks.update(int(r) for r in set(_line_prefixes("mpi", data)))
        if res.srun:
            res.ranks.update(int(r) for r in set(_line_prefixes("srun", data)))

    def _match(self, data: bytes, res: PartResult, seen: set[ContextKey], blanked: bytes | None = None) -> int:
        """Events of one block into ``res``; returns the block's line count (counted on the way).

        ``blanked`` is the block with its host prefixes turned to spaces (see ``_blank_hosts``):
        it is scanned too, and what only it matches is confirmed and read there.
        """
        sigs = self.catalog.signatures
        hits = res.hits
        keep: list[tuple[int, Signature, str, dict[str, str], tuple[int, ContextKey | None] | None]] = []
        present: dict[int, list[Candidate]] = {}
        caps = self.caps
        limits = self._limits(res)
        found = self.engine.scan(data, limits)
        only_blanked: set[tuple[int, int]] = set()
        if blanked is not None and blanked != data:
            found, only_blanked = self._add_blanked(found, blanked, limits)
        for ls, le, idx, need in found:
            sig = sigs[idx]
            if sig.category == "progress":
                # Which of these lines to keep is decided below; an engine that reports every
                # progress line hands them over, others are asked again only as far as needed.
                present.setdefault(idx, []).append((ls, le, idx, need))
                continue
            sid = sig.id
            n = hits.get(sid, 0)
            if n > caps[idx]:
                continue  # past the cap and already counted as more: a flood costs nothing here
            from_blanked = (ls, idx) in only_blanked
            raw = (blanked if blanked is not None and from_blanked else data)[ls:le]
            if need and not self._confirm(idx, raw):
                # An engine may report a line for confirmation that only its blanked form
                # matches (a pattern anchored at the line's start): that one counts.
                if blanked is None or from_blanked or not self._confirm(idx, blanked[ls:le]):
                    continue
                from_blanked, raw = True, blanked[ls:le]
            if n == caps[idx]:
                # Past the cap only whether there was one more line is kept (the incident says
                # lines were left out): a flood of a million lines costs one confirmation.
                hits[sid] = n + 1
                continue
            line = raw.decode("utf-8", "replace")
            hits[sid] = n + 1
            fields = sig.extract_fields(line)
            if from_blanked:
                line = data[ls:le].decode("utf-8", "replace")  # the event shows the line as written
            key: ContextKey | None = None
            if sig.role == "context" and sig.category != "harmless":
                # Facts repeat (every communicator prints its rank map, every retry the same
                # recovery line): the first line with given fields says all the later ones do.
                key = (sid, line[:_CONTEXT_PREFIX] if not fields else "", tuple(sorted(fields.items())))
                if key in seen:
                    continue
                seen.add(key)
            keep.append((ls, sig, line, fields, (n + 1, key)))
        for idx in self.engine.searched_progress:
            if self.engine.may_hold(data, idx):
                present.setdefault(idx, [])  # never reported: the windows below look for its lines
            else:
                res.progress.setdefault(sigs[idx].id, _Progress())  # as the windows leave it, finding none
        for idx, found in present.items():
            keep.extend(self._progress_lines(idx, data, res, found if idx in self.engine.listed_progress else None))
        # Line numbers and inherited stamps in one pass down the block.
        keep.sort(key=lambda k: k[0])
        memo = _StampMemo(data)
        line_no = res.lines + 1
        counted_to = 0
        for ls, sig, line, fields, tag in keep:
            line_no += data.count(b"\n", counted_to, ls)
            counted_to = ls
            ev = self._event(sig, fields, line, line_no, ls, res, memo)
            if tag is None:
                kept = res.progress[sig.id]
                (kept.head if len(kept.head) < PROGRESS_HEAD else kept.tail).append(ev)
            else:
                res.events.append((tag[0], tag[1], ev))
        return line_no - res.lines - 1 + data.count(b"\n", counted_to)

    def _add_blanked(self, found: list[Candidate], blanked: bytes,
                     limits: Limits) -> tuple[list[Candidate], set[tuple[int, int]]]:
        """``found`` and the hits only the blanked block gives; the second set names those.

        Offsets are the same in both blocks. Progress lines are left to the block as written
        (their windows are searched there), and the markers of both passes count.
        """
        markers = set(self.engine.markers)
        have = {(c[0], c[2]) for c in found}
        sigs = self.catalog.signatures
        extra = [c for c in self.engine.scan(blanked, limits)
                 if (c[0], c[2]) not in have and sigs[c[2]].category != "progress"]
        self.engine.markers = markers | self.engine.markers
        if not extra:
            return found, set()
        return sorted(found + extra), {(c[0], c[2]) for c in extra}

    def _progress_lines(self, idx: int, data: bytes, res: PartResult,
                        found: list[Candidate] | None) -> list[tuple[int, Signature, str, dict[str, str], None]]:
        """Only the progress lines that can survive: the first few of the part and the block's latest.

        Training prints a progress line every step; turning each into an event would cost more
        than the rest of the scan. The engine is asked for the lines of growing windows at the
        block's start (while the part's first lines are wanted) and at its end; an engine that
        already listed every progress line (``found``) is answered from that list.
        """
        sig = self.catalog.signatures[idx]
        kept = res.progress.setdefault(sig.id, _Progress())
        out: list[tuple[int, Signature, str, dict[str, str], None]] = []

        def confirmed(ls: int, le: int, need: bool) -> tuple[int, Signature, str, dict[str, str], None] | None:
            if need and not self._confirm(idx, data[ls:le]):
                return None
            line = data[ls:le].decode("utf-8", "replace")
            return (ls, sig, line, sig.extract_fields(line), None)

        if found is not None:  # the engine listed them all: a window is a slice of that list
            starts = [c[0] for c in found]

            def window(start: int, end: int) -> list[Candidate]:
                return found[bisect.bisect_left(starts, start):bisect.bisect_left(starts, end)]
        else:
            def window(start: int, end: int) -> list[Candidate]:
                return self.engine.progress_candidates(data, start, end, idx)

        want = PROGRESS_HEAD - len(kept.head)
        head_end = 0
        # What the head's windows found, all of it: where they reach, the tail is answered from it.
        scanned: list[Candidate] = []
        covered = 0
        start, width = 0, _WINDOW
        while want > 0 and start < len(data):
            end = _line_end_after(data, start + width)
            got = window(start, end)
            scanned.extend(got)
            covered = end
            for ls, le, _, need in got:
                item = confirmed(ls, le, need) if want > 0 else None
                if item is not None:
                    out.append(item)
                    want -= 1
                    head_end = le + 1
            start, width = end, width * 2
        latest: list[tuple[int, Signature, str, dict[str, str], None]] = []
        end, width = len(data), _WINDOW
        while end > head_end and len(latest) < PROGRESS_TAIL:
            if end <= covered:
                stretch = [c for c in scanned if head_end <= c[0] < end]
                start = head_end
            else:
                start = max(head_end, covered, _line_start_before(data, end - width))
                stretch = window(start, end)
            for ls, le, _, need in reversed(stretch):
                item = confirmed(ls, le, need) if len(latest) < PROGRESS_TAIL else None
                if item is not None:
                    latest.append(item)
            end, width = start, width * 2
        out.extend(reversed(latest))
        return out

    def _event(self, sig: Signature, fields: dict[str, str], line: str, line_no: int, ls: int,
               res: PartResult, memo: _StampMemo) -> Event:
        src = res.source
        host = _host_prefix(line, res.hosts) if res.hosts else None
        body = line if host is None else line[len(host) + 2:]
        info = parse_line_info(body, res.srun)
        ev = Event(source=src.display, line_no=line_no, text=_kept_text(line, sig), signature_id=sig.id,
                   fields=fields,
                   source_index=src.index, rank=info.rank, host=info.host or host, pid=info.pid,
                   gpu_index=info.gpu_index, pci_bus_id=info.pci_bus_id, uuid=info.uuid)
        stamp = parse_stamp(body)
        if stamp is None and body[:1].isspace():
            stamp = parse_stamp(body.lstrip())
        if stamp is not None:
            memo.remember(ls, stamp, line_no)
        else:
            stamp = memo.before(ls, line_no)
            ev.time_inherited = stamp is not None
        if stamp is not None:
            ev.time, ev.offset, ev.boot_seconds = stamp.time, stamp.offset, stamp.boot_seconds
            if stamp.host and not ev.host:
                ev.host = stamp.host
        if res.kind == "nvidia_smi_q" and ev.pci_bus_id is None:
            _gpu_section(memo.data, ls, ev)
        for key in ("host", "pci_bus_id", "uuid"):
            if key in fields and getattr(ev, key) is None:
                setattr(ev, key, fields[key])
        above = sig.compiled_quote_above
        if above is not None and ls > 0:
            prev_start = memo.data.rfind(b"\n", 0, ls - 1) + 1
            prev = memo.data[prev_start:ls - 1].decode("utf-8", "replace").rstrip("\r")
            if above.search(prev):
                ev.quoted = (line_no - 1, _kept_text(prev, sig))
        if sig.frame_owner and "raised_in" not in fields:
            frame = raising_frame(memo.data, ls)
            if frame is not None:
                ev.fields = {**fields, "raised_in": frame}
        return ev


_MEMO_LINE = 2048  # longer lines rarely repeat
_MEMO_ENTRIES = 100_000

_WINDOW = 64 * 1024  # first window of a block searched for progress lines; doubles as needed


def _line_end_after(data: bytes, pos: int) -> int:
    """Offset just past the newline ending the line that holds ``pos`` (or the block's end)."""
    if pos >= len(data):
        return len(data)
    return data.find(b"\n", pos) + 1 or len(data)


def _line_start_before(data: bytes, pos: int) -> int:
    """Offset of the start of the line that holds ``pos`` (0 at the block's start)."""
    if pos <= 0:
        return 0
    return data.rfind(b"\n", 0, pos) + 1


KEEP_TEXT = (3072, 1024)  # head and tail characters of an over-long line kept in its event
KEEP_PROGRESS_TEXT = (256, 768)  # a progress bar redrawn with carriage returns: its last state matters


def _kept_text(line: str, sig: Signature) -> str:
    """The line as an event keeps it: fields come from the whole line, the text is for people.

    Progress bars that redraw with carriage returns become one line of every state they went
    through (kilobytes each); a thousand ranks' worth of them would be most of the memory.
    """
    head, tail = KEEP_PROGRESS_TEXT if sig.category == "progress" else KEEP_TEXT
    if len(line) > head + tail + 5:
        line = f"{line[:head]} ... {line[-tail:]}"
    return line.replace("\r", " ") if "\r" in line else line


def is_informational(sig: Signature) -> bool:
    """A context signature whose fields feed no decision: a few of its lines say all there is."""
    if sig.role != "context" or sig.category in ("harmless", "progress"):
        return False
    return not {name for rx in sig.compiled_extract for name in rx.groupindex} & DECISION_FIELDS


def _cap(sig: Signature, sources: int) -> int:
    """Lines of one signature kept per source; with many sources, context shares the total."""
    if sig.role != "context" or sig.category == "harmless":
        return MAX_EVENTS_PER_SIGNATURE  # a harmless mark must reach every line it clears
    if is_informational(sig):
        # The first MAX_INFO_EVENTS_TOTAL across all sources are kept; a source need not build more
        # than its share (a 1,024-rank job's files would otherwise make four of each apiece).
        return min(MAX_INFO_EVENTS, max(1, MAX_INFO_EVENTS_TOTAL // max(1, sources)))
    return min(MAX_EVENTS_PER_SIGNATURE, max(MIN_CONTEXT_PER_SOURCE, MAX_CONTEXT_EVENTS_TOTAL // max(1, sources)))


Head = tuple[str, bool, tuple[str, ...], bool]  # kind, srun labels, host prefixes, mpirun tags (see ``classify``)


def classify(display: str, first_block: bytes) -> Head:
    """From a source's first block: its kind, srun labels, the hosts that prefix its lines, mpirun's tags."""
    sample = first_block[:_SAMPLE].decode("utf-8", "replace")
    lines = sample.split("\n", 200)[:200]
    srun = looks_srun_labelled(lines)
    hosts = () if srun else host_prefixes("\n".join(lines))
    return detect_kind(display, sample), srun, hosts, looks_mpi_tagged(lines)


def _blank_prefixes(data: bytes, hosts: tuple[str, ...], tagged: bool) -> bytes:
    """The block with its launcher prefixes blanked (host names, then mpirun's tags): offsets and lines stay."""
    if hosts:
        data = _blank_hosts(data, hosts)
    if tagged:
        data = _blank_mpi_tags(data)
    return data


# mpirun --tag-output: "[jobid,rank]<stdout>:" (horovodrun's Gloo launcher: "[rank]<stderr>:").
_MPI_TAG_INNER = range(1, 17)  # characters between the brackets: "0" to "123456,1234567"
_MPI_TAG_BLANKERS = [(re.compile(rb"\n\[[\d,]{%d}\]<std(?:out|err)>:" % n), b"\n" + b" " * (n + 11))
                     for n in _MPI_TAG_INNER]
_MPI_TAG_FIND = re.compile(rb"\n\[([\d,]{1,16})\]<std(?:out|err)>:")


def _blank_mpi_tags(data: bytes) -> bytes:
    """The block with every "[1,3]<stderr>:" at a line's start turned to spaces of its length.

    Open MPI and Horovod put the tag straight before the text, so a traceback's lines no longer
    start where signatures expect them; behind spaces they do. One fixed replacement per tag
    length keeps the rewrite at the regex engine's speed.
    """
    # Only the lengths the block has (ranks of one and two digits, mostly): one pass finds them.
    inners = set(_MPI_TAG_FIND.findall(data))
    first = _MPI_TAG_FIND.match(b"\n" + data[:32])  # the block's first line has no newline before it
    if first is not None:
        inners.add(first.group(1))
    sizes = sorted({len(inner) for inner in inners})
    return _apply_blankers(data, [_MPI_TAG_BLANKERS[size - 1] for size in sizes], 32)


def _apply_blankers(data: bytes, blankers: list[tuple[re.Pattern[bytes], bytes]], head: int) -> bytes:
    """``data`` with each "newline + prefix" regex replaced by its same-length string, the first line too.

    ``head`` is how far into the block a prefix on its first line (no newline before it) can reach.
    """
    for rx, repl in blankers:
        data = rx.sub(repl, data)
        m = rx.match(b"\n" + data[:head])
        if m is not None:
            data = repl[1:] + data[m.end() - 1:]
    return data


def _blank_hosts(data: bytes, hosts: tuple[str, ...]) -> bytes:
    """The block with each line's host prefix ("worker-1: ") blanked: offsets and lines stay.

    Signatures anchored at a line's start (a Python exception, "Bus error", an nvidia-smi -q
    value) then match a node's line behind its name as they do without it, at the cost of a
    second pass over the blocks of such sources only. The name becomes spaces, or, where a rank
    prefix follows it ("worker-1: [rank3]: ..."), an srun-style label of the same length
    ("00000000: [rank3]: ..."), which those signatures allow in front of a rank prefix. Every
    replacement is a fixed string per name length, so the rewrite runs at the regex engine's
    speed, not a Python call per line.
    """
    return _apply_blankers(data, _host_blankers(hosts), MAX_HOST_LEN + 2)


MAX_HOST_LEN = 64  # longer names are not taken for hosts (collect.lineinfo._HOST_PREFIX)


@functools.lru_cache(maxsize=256)
def _host_blankers(hosts: tuple[str, ...]) -> list[tuple[re.Pattern[bytes], bytes]]:
    """Per length of name: the prefixes before a rank prefix, then all the others, each with its replacement."""
    by_len: dict[int, list[bytes]] = {}
    for host in hosts:
        name = host.encode()
        if len(name) <= MAX_HOST_LEN:
            by_len.setdefault(len(name), []).append(re.escape(name))
    out: list[tuple[re.Pattern[bytes], bytes]] = []
    for size, names in sorted(by_len.items()):
        alt = b"|".join(names)
        out.append((re.compile(b"\n(?:" + alt + rb"): (?=\[(?:rank|default)\d)"), b"\n" + b"0" * size + b": "))
        out.append((re.compile(b"\n(?:" + alt + b"): "), b"\n" + b" " * (size + 2)))
    return out


def _host_prefix(line: str, hosts: tuple[str, ...]) -> str | None:
    """The host whose name prefixes ``line``, if any of ``hosts`` does."""
    head, sep, _ = line.partition(": ")
    return head if sep and head in hosts else None


def merge_parts(src: Source, parts: list[PartResult], caps: dict[str, int]) -> SourceResult:
    """Join a source's parts, in order, into what one sequential pass gives."""
    res = SourceResult(source=src, kind=parts[0].kind if parts else "training_log")
    res.file_rank = rank_from_name(src.display)
    seen: set[ContextKey] = set()
    counts: dict[str, int] = {}
    heads: dict[str, list[Event]] = {}
    tails: dict[str, deque[Event]] = {}
    offset = 0
    for part in parts:
        for ordinal, key, ev in part.events:
            sid = ev.signature_id or ""
            if counts.get(sid, 0) + ordinal > caps.get(sid, MAX_EVENTS_PER_SIGNATURE):
                continue
            if key is not None:
                if key in seen:
                    continue
                seen.add(key)
            _shift(ev, offset)
            res.events.append(ev)
        for sid, n in part.hits.items():
            counts[sid] = counts.get(sid, 0) + n
        for sid, keep in part.progress.items():
            head = heads.setdefault(sid, [])
            tail = tails.setdefault(sid, deque(maxlen=PROGRESS_TAIL))
            for ev in (*keep.head, *keep.tail):
                _shift(ev, offset)
                (head if len(head) < PROGRESS_HEAD else tail).append(ev)
        res.lines += part.lines
        res.ranks |= part.ranks
        offset += part.lines
    for sid in heads:
        res.events.extend(heads[sid])
        res.events.extend(tails[sid])
    res.events.sort(key=lambda e: e.line_no)
    for ev in res.events:
        if res.file_rank is not None and ev.rank is None:
            ev.rank = res.file_rank
        if ev.time is not None and ev.time.year != YEAR_UNKNOWN:
            res.years.add(ev.time.year)
    if res.file_rank is not None:
        res.ranks.add(res.file_rank)
    limits = {sid: caps.get(sid, MAX_EVENTS_PER_SIGNATURE) for sid in counts}
    res.dropped = {sid: n - limits[sid] for sid, n in counts.items() if n > limits[sid]}
    return res


def _shift(ev: Event, offset: int) -> None:
    """Move a part's event to the source's line numbers, with the line it quotes above it."""
    ev.line_no += offset
    if ev.quoted is not None:
        ev.quoted = (ev.quoted[0] + offset, ev.quoted[1])


_SMI_GPU = re.compile(rb"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$", re.M)
_SMI_UUID = re.compile(rb"^\s+GPU UUID\s+:\s+(GPU-[0-9a-fA-F-]+)", re.M)


def _gpu_section(data: bytes, pos: int, ev: Event) -> None:
    """In ``nvidia-smi -q`` output a value belongs to the GPU whose header precedes it."""
    start = data.rfind(b"\nGPU ", 0, pos)
    if start < 0 and not data.startswith(b"GPU "):
        return
    m = _SMI_GPU.match(data, start + 1)
    if m is None:
        return
    ev.pci_bus_id = normalize_pci(m.group(1).decode("ascii"))
    u = _SMI_UUID.search(data, m.end(), pos)
    if u is not None:
        ev.uuid = u.group(1).decode("ascii")


class _StampMemo:
    """The nearest stamped line before a matched line of a block, at most LOOKBACK_LINES back.

    Matched lines arrive in order, so the walk back stops at the previous matched line, whose
    answer is remembered: each line of a block is parsed for a stamp at most once. The answer
    is the same as a full walk back, whichever lines matched before.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = -1  # start offset of the last matched line
        self.stamp: Stamp | None = None
        self.stamp_line = 0

    def remember(self, pos: int, stamp: Stamp | None, stamp_line: int) -> None:
        self.pos, self.stamp, self.stamp_line = pos, stamp, stamp_line

    def before(self, pos: int, line_no: int) -> Stamp | None:
        if pos == self.pos:
            return self.stamp if self.stamp is not None and line_no - self.stamp_line <= LOOKBACK_LINES else None
        data = self.data
        end = pos - 1
        cur = line_no - 1
        found: Stamp | None = None
        found_line = 0
        while cur >= line_no - LOOKBACK_LINES and end > 0:
            start = data.rfind(b"\n", 0, end) + 1
            if start <= self.pos:
                if self.stamp is not None and line_no - self.stamp_line <= LOOKBACK_LINES:
                    found, found_line = self.stamp, self.stamp_line
                break
            # Only the line's head can hold its stamp: a redrawn progress bar is 100 kB of line.
            st = (parse_stamp(data[start:min(end, start + STAMP_BYTES)].decode("utf-8", "replace"))
                  if may_hold_stamp(data, start, end) else None)
            if st is not None and (st.time is not None or st.boot_seconds is not None):
                found, found_line = st, cur
                break
            end = start - 1
            cur -= 1
        self.remember(pos, found, found_line)
        return found


class _TotalCap:
    """Context lines past a total across all sources are dropped (and counted), in source order.

    Applied to each source as soon as it and every source before it are scanned, so a job of
    a thousand files never holds every file's context lines at once.
    """

    def __init__(self, scanner: Scanner) -> None:
        self.sigs = scanner.catalog.by_id
        self.info = {sig.id for sig in scanner.catalog.signatures if is_informational(sig)}
        self.total: dict[str, int] = {}

    def apply(self, res: SourceResult) -> None:
        kept = []
        for ev in res.events:
            sig = self.sigs.get(ev.signature_id or "")
            if sig is None or sig.role != "context" or sig.category in ("progress", "harmless"):
                kept.append(ev)
                continue
            limit = MAX_INFO_EVENTS_TOTAL if sig.id in self.info else MAX_CONTEXT_EVENTS_TOTAL
            n = self.total.get(sig.id, 0) + 1
            self.total[sig.id] = n
            if n <= limit:
                kept.append(ev)
            else:
                res.dropped[sig.id] = res.dropped.get(sig.id, 0) + 1
        res.events = kept


def fill_years(results: list[SourceResult]) -> None:
    """Give syslog/glog stamps (written without a year) the year the other evidence shows."""
    years = set().union(*(r.years for r in results)) if results else set()
    year = max(years) if years else None
    for r in results:
        for ev in r.events:
            if ev.time is not None and ev.time.year == YEAR_UNKNOWN and year is not None:
                try:
                    ev.time = ev.time.replace(year=year)
                except ValueError:
                    ev.time = ev.time.replace(year=year, day=28)


PARALLEL_MIN_BYTES = 32 * 1024 * 1024  # below this a process pool costs more than it saves
SPLIT_MIN_BYTES = 64 * 1024 * 1024  # a file this large is split across the pool
SPLIT_PART_BYTES = 16 * 1024 * 1024  # the smallest stretch worth a task of its own

Unit = tuple[Source, tuple[int, int | None] | None, Head | None]


def default_jobs(sources: list[Source], total: int | None = None) -> int:
    """Worker processes: one per core (``DENPEX_JOBS`` overrides), only when there is enough to share.

    ``total`` is the sources' size when the caller has it (``_input_bytes``).
    """
    env = os.environ.get("DENPEX_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    if (_input_bytes(sources) if total is None else total) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, os.cpu_count() or 1)


def _input_bytes(sources: list[Source]) -> int:
    """Bytes of the sources that are files (standard input counts as nothing)."""
    total = 0
    for s in sources:
        if s.path is not None:
            with contextlib.suppress(OSError):
                total += s.path.stat().st_size
    return total


def plan_units(sources: list[Source], jobs: int) -> list[Unit]:
    """Work for the pool: whole files, and large plain files cut into stretches of whole blocks."""
    units: list[Unit] = []
    for src in sources:
        size = 0
        if src.path is not None and jobs > 1:
            with contextlib.suppress(OSError):
                size = src.path.stat().st_size
        head = _splittable_head(src) if size >= SPLIT_MIN_BYTES else None
        if head is None:
            units.append((src, None, None))
            continue
        parts = max(2, min(jobs, size // SPLIT_PART_BYTES))
        points = split_points(src.path, size, parts) if src.path else [0, size]
        # The last stretch reads to the end, keeping a final line that has no newline.
        units.extend((src, (a, b if b < size else None), head) for a, b in itertools.pairwise(points))
    return units


def _splittable_head(src: Source) -> Head | None:
    """The kind from a plain text file's first block, or None when the file must be read whole."""
    if src.path is None:
        return None
    try:
        with src.path.open("rb") as fh:
            magic = fh.read(4)
    except OSError:
        return None
    if magic[:2] == b"\x1f\x8b" or magic == b"\x28\xb5\x2f\xfd":
        return None  # compressed: only a sequential read can get at its lines
    probe = Source(display=src.display, path=src.path, index=src.index)
    with contextlib.closing(read_blocks(probe, (0, BLOCK))) as blocks:
        first = next(blocks, None)
    if first is None or probe.warnings:
        return None  # binary, unreadable, or an over-long line at the start: read it whole
    return classify(src.display, first.data)


_WORKER: Scanner | None = None


def _init_worker(dirs: list[str], engine_name: str, sources: int) -> None:
    global _WORKER
    if _WORKER is not None:
        return  # forked from a parent that had it built
    from denpex.catalog.loader import load_catalog
    from denpex.scan.engine import default_engine as make_engine

    reuse_freed_blocks()  # a spawned worker (a forked one inherits the parent's setting)
    cat = load_catalog([Path(d) for d in dirs])
    _WORKER = Scanner(cat, make_engine(cat.signatures, engine_name), sources=sources)


def _scan_in_worker(unit: Unit) -> PartResult:
    assert _WORKER is not None
    src, part, head = unit
    return _WORKER.scan_part(src, part, head)


def scan_all(catalog: Catalog, sources: list[Source], engine: Engine | None = None,
             jobs: int | None = None, progress: Progress | None = None) -> list[SourceResult]:
    """Scan every source; files and stretches spread over a process pool give the same results as one process."""
    global _WORKER
    scanner = Scanner(catalog, engine, progress, sources=len(sources))
    total = _input_bytes(sources)
    if total >= PARALLEL_MIN_BYTES:
        reuse_freed_blocks()  # large inputs: read blocks are reused instead of faulted in afresh
    jobs = default_jobs(sources, total) if jobs is None else jobs
    units = plan_units(sources, jobs)
    if jobs <= 1 or len(units) < 2:
        results = []
        capper = _TotalCap(scanner)
        for s in sources:
            results.append(scanner.scan_source(s))
            capper.apply(results[-1])
            if progress is not None:
                progress.file_done()
        fill_years(results)
        return results
    from concurrent.futures import ProcessPoolExecutor

    dirs = [str(d) for d in catalog.dirs]
    pooled = [u for u in units if u[0].path is not None]
    parts: dict[int, list[PartResult]] = {}
    by_index: dict[int, SourceResult] = {}
    capper = _TotalCap(scanner)
    capped = 0  # sources[:capped] have had the totals applied

    def cap_ready() -> None:
        nonlocal capped
        while capped < len(sources) and sources[capped].index in by_index:
            capper.apply(by_index[sources[capped].index])
            capped += 1

    for s in sources:
        if s.path is None:
            by_index[s.index] = scanner.scan_source(s)  # standard input: read here, before the pool
    cap_ready()
    last_unit = {u[0].index: i for i, u in enumerate(pooled)}
    _WORKER = Scanner(catalog, scanner.engine, sources=len(sources))  # inherited by forked workers
    try:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                                 initargs=(dirs, scanner.engine.name, len(sources))) as pool:
            # Small chunks: results waiting to be merged are what the parent's memory holds.
            done = pool.map(_scan_in_worker, pooled, chunksize=max(1, min(8, len(pooled) // (jobs * 8))))
            for i, (unit, part) in enumerate(zip(pooled, done, strict=True)):
                src = unit[0]
                parts.setdefault(src.index, []).append(part)
                if progress is not None:
                    progress.add_bytes(part.source.bytes_read)
                if last_unit[src.index] == i:
                    # Merge a source as soon as its last part is in, so parts do not pile up.
                    got = parts.pop(src.index)
                    for p in got:
                        src.warnings.extend(w for w in p.source.warnings if w not in src.warnings)
                        src.bytes_read += p.source.bytes_read
                    by_index[src.index] = merge_parts(src, got, scanner.caps_by_id)
                    cap_ready()
                    if progress is not None:
                        progress.file_done()
    finally:
        _WORKER = None
    cap_ready()
    results = [by_index[s.index] for s in sources]
    fill_years(results)
    return results


__all__ = ["PartResult", "Scanner", "SourceResult", "fill_years", "merge_parts", "scan_all"]
