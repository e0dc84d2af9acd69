"""Read every source, match every line, and keep only what diagnosis needs.

Output per source: the matched lines as ``Event``s with their time, rank, host and GPU
context, and a coverage record (kind, lines, ranks seen, warnings). Unmatched lines are
counted and forgotten, so memory stays bounded whatever the input size.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

from denpex.catalog.loader import Catalog
from denpex.collect.inputs import Chunk, Source, read_chunks
from denpex.collect.kinds import detect_kind, rank_from_name
from denpex.collect.lineinfo import looks_srun_labelled, normalize_pci, parse_line_info
from denpex.collect.timestamps import YEAR_UNKNOWN, Stamp, parse_stamp
from denpex.evidence import Event
from denpex.scan.engine import Engine, default_engine
from denpex.scan.progress import Progress

_RANK_PREFIX = re.compile(r"^(?:[\d\-:T.,/ ]{8,32} |\[\d+\] )?(?:\[default\d+\]:)?\[(rank|default)(\d+)\]:", re.M)
_SRUN_PREFIX = re.compile(r"^\s{0,4}(\d{1,5}): ", re.M)
_MPI_PREFIX = re.compile(r"^\[(?:\d+,)?(\d+)\]<std", re.M)
LOOKBACK_LINES = 64
MAX_EVENTS_PER_SIGNATURE = 2000  # per source; beyond this a flood adds nothing to a diagnosis
# Progress lines (every training step) are kept as the first few and a ring of the latest:
# diagnosis needs where the run started, whether it went on after an error, and how far it got.
_CONTEXT_PREFIX = 24  # a context line without fields is told apart by its launcher prefix (rank)
PROGRESS_HEAD = 5
PROGRESS_TAIL = 50


@dataclass
class _ProgressKeep:
    """First PROGRESS_HEAD progress events in full, then a ring of the latest as raw lines.

    Ring entries are turned into events only at the end of the source, with the time their
    line carries or, failing that, the last stamp seen among matched lines before them.
    """

    head: int = 0
    tail: deque[tuple[str, str, int, Stamp | None]] = field(default_factory=lambda: deque(maxlen=PROGRESS_TAIL))


@dataclass
class SourceResult:
    source: Source
    kind: str = "training_log"
    lines: int = 0
    ranks: set[int] = field(default_factory=set)
    events: list[Event] = field(default_factory=list)
    file_rank: int | None = None
    years: set[int] = field(default_factory=set)
    dropped: dict[str, int] = field(default_factory=dict)
    seen_context: set[tuple[str, str, tuple[tuple[str, str], ...]]] = field(default_factory=set, repr=False)


class Scanner:
    def __init__(self, catalog: Catalog, engine: Engine | None = None, progress: Progress | None = None) -> None:
        self.catalog = catalog
        self.engine = engine or default_engine(catalog.signatures)
        self.progress = progress

    def scan_source(self, src: Source) -> SourceResult:
        res = SourceResult(source=src)
        res.file_rank = rank_from_name(src.display)
        srun = False
        per_sig: dict[str, int] = {}
        progress: dict[str, _ProgressKeep] = {}
        first = True
        for chunk in read_chunks(src):
            if first:
                first = False
                sample = chunk.text[:65536]
                res.kind = detect_kind(src.display, sample)
                srun = looks_srun_labelled(sample.splitlines()[:200])
            res.lines += chunk.n_lines
            if self.progress is not None:
                self.progress.add_bytes(len(chunk.text))
            self._ranks(chunk.text, srun, res)
            self._match(chunk, srun, res, per_sig, progress)
        for keep in progress.values():
            for sig_id, line, line_no, stamp in keep.tail:
                res.events.append(self._late_event(sig_id, line, line_no, stamp, srun, res))
        res.events.sort(key=lambda e: e.line_no)
        if res.file_rank is not None:
            res.ranks.add(res.file_rank)
        for sig_id, n in per_sig.items():
            if n > MAX_EVENTS_PER_SIGNATURE:
                res.dropped[sig_id] = n - MAX_EVENTS_PER_SIGNATURE
        return res

    def _ranks(self, text: str, srun: bool, res: SourceResult) -> None:
        if "[rank" in text or "[default" in text:
            found = _RANK_PREFIX.findall(text)
            strong = {int(n) for kind, n in found if kind == "rank"}
            res.ranks.update(strong or {int(n) for _, n in found})
        if "]<std" in text:
            res.ranks.update(int(r) for r in set(_MPI_PREFIX.findall(text)))
        if srun:
            res.ranks.update(int(r) for r in set(_SRUN_PREFIX.findall(text)))

    def _match(self, chunk: Chunk, srun: bool, res: SourceResult, per_sig: dict[str, int],
               progress: dict[str, _ProgressKeep]) -> None:
        text = chunk.text
        sigs = self.catalog.signatures
        counted_to = 0
        line_no = chunk.first_line_no
        memo = _StampMemo()
        for ls, le, idx in self.engine.scan(text):
            if ls > counted_to:
                line_no += text.count("\n", counted_to, ls)
                counted_to = ls
            sig = sigs[idx]
            line = text[ls:le]
            if sig.category == "progress":
                keep = progress.setdefault(sig.id, _ProgressKeep())
                if keep.head < PROGRESS_HEAD:
                    keep.head += 1
                    res.events.append(self._event(sig.id, sig.extract_fields(line), line, line_no, text, ls, srun,
                                                  res, memo))
                else:
                    keep.tail.append((sig.id, line, line_no, memo.recent(line_no)))
                continue
            fields = sig.extract_fields(line)
            if sig.role == "context":
                # Facts repeat (every communicator prints its rank map, every retry the same
                # recovery line): the first line with given fields says all the later ones do.
                key = (sig.id, line[:_CONTEXT_PREFIX] if not fields else "", tuple(sorted(fields.items())))
                if key in res.seen_context:
                    continue
                res.seen_context.add(key)
            n = per_sig.get(sig.id, 0) + 1
            per_sig[sig.id] = n
            if n > MAX_EVENTS_PER_SIGNATURE:
                continue
            res.events.append(self._event(sig.id, fields, line, line_no, text, ls, srun, res, memo))

    def _late_event(self, sig_id: str, line: str, line_no: int, carried: Stamp | None, srun: bool,
                    res: SourceResult) -> Event:
        sig = self.catalog.by_id[sig_id]
        memo = _StampMemo()
        if carried is not None:
            memo.remember(-2, line_no, carried, line_no)
        # With no chunk text left, the memo answers for the line above from what it carried.
        return self._event(sig_id, sig.extract_fields(line), line, line_no, "", -2, srun, res, memo)

    def _event(self, sig_id: str, fields: dict[str, str], line: str, line_no: int, text: str, ls: int,
               srun: bool, res: SourceResult, memo: _StampMemo) -> Event:
        src = res.source
        info = parse_line_info(line, srun)
        ev = Event(source=src.display, line_no=line_no, text=line, signature_id=sig_id, fields=fields,
                   source_index=src.index, rank=info.rank, host=info.host, pid=info.pid,
                   gpu_index=info.gpu_index, pci_bus_id=info.pci_bus_id, uuid=info.uuid)
        if ev.rank is None:
            ev.rank = res.file_rank
        stamp = parse_stamp(line) or parse_stamp(line[len(line) - len(line.lstrip()):])
        if stamp is not None:
            memo.remember(ls, line_no, stamp, line_no)
        else:
            stamp = memo.before(text, ls, line_no)
            ev.time_inherited = stamp is not None
        if stamp is not None:
            ev.time, ev.offset, ev.boot_seconds = stamp.time, stamp.offset, stamp.boot_seconds
            if stamp.host and not ev.host:
                ev.host = stamp.host
            if stamp.time is not None and stamp.time.year != YEAR_UNKNOWN:
                res.years.add(stamp.time.year)
        if res.kind == "nvidia_smi_q" and ev.pci_bus_id is None:
            _gpu_section(text, ls, ev)
        for key in ("host", "pci_bus_id", "uuid"):
            if key in fields and getattr(ev, key) is None:
                setattr(ev, key, fields[key])
        return ev


_SMI_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$", re.M)
_SMI_UUID = re.compile(r"^\s+GPU UUID\s+:\s+(GPU-[0-9a-fA-F-]+)", re.M)


def _gpu_section(text: str, pos: int, ev: Event) -> None:
    """In ``nvidia-smi -q`` output a value belongs to the GPU whose header precedes it."""
    start = text.rfind("\nGPU ", 0, pos)
    if start < 0 and not text.startswith("GPU "):
        return
    m = _SMI_GPU.match(text, start + 1)
    if m is None:
        return
    ev.pci_bus_id = normalize_pci(m.group(1))
    u = _SMI_UUID.search(text, m.end(), pos)
    if u is not None:
        ev.uuid = u.group(1)


class _StampMemo:
    """The nearest stamped line before a matched line, looked up at most LOOKBACK_LINES back.

    Matched lines arrive in order, so the walk back stops at the previous matched line, whose
    answer is remembered: each line of a chunk is parsed for a stamp at most once.
    """

    def __init__(self) -> None:
        self.pos = -1  # start offset of the last matched line
        self.line_no = 0
        self.stamp: Stamp | None = None
        self.stamp_line = 0

    def recent(self, line_no: int) -> Stamp | None:
        """The last stamp seen, if it is close enough above ``line_no`` to be inherited."""
        if self.stamp is not None and line_no - self.stamp_line <= LOOKBACK_LINES:
            return self.stamp
        return None

    def remember(self, pos: int, line_no: int, stamp: Stamp | None, stamp_line: int) -> None:
        self.pos, self.line_no, self.stamp, self.stamp_line = pos, line_no, stamp, stamp_line

    def before(self, text: str, pos: int, line_no: int) -> Stamp | None:
        if pos == self.pos:
            return self.stamp if self.stamp is not None and line_no - self.stamp_line <= LOOKBACK_LINES else None
        end = pos - 1
        cur = line_no - 1
        found: Stamp | None = None
        found_line = 0
        while cur >= line_no - LOOKBACK_LINES and end > 0:
            start = text.rfind("\n", 0, end) + 1
            if start <= self.pos:
                if self.stamp is not None and line_no - self.stamp_line <= LOOKBACK_LINES:
                    found, found_line = self.stamp, self.stamp_line
                break
            st = parse_stamp(text[start:end])
            if st is not None and (st.time is not None or st.boot_seconds is not None):
                found, found_line = st, cur
                break
            end = start - 1
            cur -= 1
        self.remember(pos, line_no, found, found_line)
        return found


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


def default_jobs(sources: list[Source]) -> int:
    """Worker processes: one per core (``DENPEX_JOBS`` overrides), only when there is enough to share."""
    env = os.environ.get("DENPEX_JOBS")
    if env and env.isdigit():
        return max(1, int(env))
    files = [s for s in sources if s.path is not None]
    if len(files) < 2:
        return 1
    total = 0
    for s in files:
        with contextlib.suppress(OSError):
            total += s.path.stat().st_size if s.path else 0
    if total < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(len(files), os.cpu_count() or 1))


_WORKER: Scanner | None = None


def _init_worker(dirs: list[str], engine_name: str) -> None:
    global _WORKER
    from denpex.catalog.loader import load_catalog
    from denpex.scan.engine import default_engine as make_engine

    cat = load_catalog([Path(d) for d in dirs])
    _WORKER = Scanner(cat, make_engine(cat.signatures, engine_name))


def _scan_in_worker(src: Source) -> SourceResult:
    assert _WORKER is not None
    return _WORKER.scan_source(src)


def scan_all(catalog: Catalog, sources: list[Source], engine: Engine | None = None,
             jobs: int | None = None, progress: Progress | None = None) -> list[SourceResult]:
    """Scan every source; files spread over a process pool give the same results as one process."""
    scanner = Scanner(catalog, engine, progress)
    jobs = default_jobs(sources) if jobs is None else jobs
    if jobs <= 1:
        results = []
        for s in sources:
            results.append(scanner.scan_source(s))
            if progress is not None:
                progress.file_done()
    else:
        from concurrent.futures import ProcessPoolExecutor

        dirs = [str(d) for d in catalog.dirs]
        pooled = [s for s in sources if s.path is not None]
        by_index: dict[int, SourceResult] = {}
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker,
                                 initargs=(dirs, scanner.engine.name)) as pool:
            for res in pool.map(_scan_in_worker, pooled, chunksize=max(1, len(pooled) // (jobs * 8))):
                by_index[res.source.index] = res
                if progress is not None:
                    progress.add_bytes(res.source.bytes_read)
                    progress.file_done()
        for s in sources:
            if s.path is None:
                by_index[s.index] = scanner.scan_source(s)
        results = [by_index[s.index] for s in sources]
        for s, r in zip(sources, results, strict=True):
            s.warnings[:] = r.source.warnings  # the worker filled its own copy
            r.source = s
    fill_years(results)
    return results


__all__ = ["Scanner", "SourceResult", "fill_years", "scan_all"]
