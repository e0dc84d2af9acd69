"""Read every source, match every line, and keep only what diagnosis needs.

Output per source: the matched lines as ``Event``s with their time, rank, host and GPU
context, and a coverage record (kind, lines, ranks seen, warnings). Unmatched lines are
counted and forgotten, so memory stays bounded whatever the input size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from denpex.catalog.loader import Catalog
from denpex.collect.inputs import Chunk, Source, read_chunks
from denpex.collect.kinds import detect_kind, rank_from_name
from denpex.collect.lineinfo import looks_srun_labelled, normalize_pci, parse_line_info
from denpex.collect.timestamps import YEAR_UNKNOWN, Stamp, parse_stamp
from denpex.evidence import Event
from denpex.scan.engine import Engine, default_engine

_RANK_PREFIX = re.compile(r"^(?:[\d\-:T.,/ ]{8,32} |\[\d+\] )?(?:\[default\d+\]:)?\[(rank|default)(\d+)\]:", re.M)
_SRUN_PREFIX = re.compile(r"^\s{0,4}(\d{1,5}): ", re.M)
_MPI_PREFIX = re.compile(r"^\[(?:\d+,)?(\d+)\]<std", re.M)
LOOKBACK_LINES = 64
MAX_EVENTS_PER_SIGNATURE = 2000  # per source; beyond this a flood adds nothing to a diagnosis


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


class Scanner:
    def __init__(self, catalog: Catalog, engine: Engine | None = None) -> None:
        self.catalog = catalog
        self.engine = engine or default_engine(catalog.signatures)

    def scan_source(self, src: Source) -> SourceResult:
        res = SourceResult(source=src)
        res.file_rank = rank_from_name(src.display)
        srun = False
        per_sig: dict[str, int] = {}
        first = True
        for chunk in read_chunks(src):
            if first:
                first = False
                sample = chunk.text[:65536]
                res.kind = detect_kind(src.display, sample)
                srun = looks_srun_labelled(sample.splitlines()[:200])
            res.lines += chunk.n_lines
            self._ranks(chunk.text, srun, res)
            self._match(chunk, srun, res, per_sig)
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

    def _match(self, chunk: Chunk, srun: bool, res: SourceResult, per_sig: dict[str, int]) -> None:
        text = chunk.text
        sigs = self.catalog.signatures
        counted_to = 0
        line_no = chunk.first_line_no
        for ls, le, idx in self.engine.scan(text):
            if ls > counted_to:
                line_no += text.count("\n", counted_to, ls)
                counted_to = ls
            sig = sigs[idx]
            n = per_sig.get(sig.id, 0) + 1
            per_sig[sig.id] = n
            if n > MAX_EVENTS_PER_SIGNATURE:
                continue
            line = text[ls:le]
            res.events.append(self._event(sig.id, sig.extract_fields(line), line, line_no, text, ls, srun, res))

    def _event(self, sig_id: str, fields: dict[str, str], line: str, line_no: int, text: str, ls: int,
               srun: bool, res: SourceResult) -> Event:
        src = res.source
        info = parse_line_info(line, srun)
        ev = Event(source=src.display, line_no=line_no, text=line, signature_id=sig_id, fields=fields,
                   source_index=src.index, rank=info.rank, host=info.host, pid=info.pid,
                   gpu_index=info.gpu_index, pci_bus_id=info.pci_bus_id, uuid=info.uuid)
        if ev.rank is None:
            ev.rank = res.file_rank
        stamp = parse_stamp(line) or parse_stamp(line[len(line) - len(line.lstrip()):])
        if stamp is None:
            stamp = _stamp_before(text, ls)
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


def _stamp_before(text: str, pos: int) -> Stamp | None:
    end = pos - 1
    for _ in range(LOOKBACK_LINES):
        if end <= 0:
            return None
        start = text.rfind("\n", 0, end) + 1
        st = parse_stamp(text[start:end])
        if st is not None and (st.time is not None or st.boot_seconds is not None):
            return st
        end = start - 1
    return None


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


def scan_all(catalog: Catalog, sources: list[Source], engine: Engine | None = None) -> list[SourceResult]:
    scanner = Scanner(catalog, engine)
    results = [scanner.scan_source(s) for s in sources]
    fill_years(results)
    return results


__all__ = ["Scanner", "SourceResult", "fill_years", "scan_all"]
