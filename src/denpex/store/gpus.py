"""Per-GPU history and RMA candidacy.

A GPU is named by its UUID where any evidence gave one, else by host and PCI bus id; a
host/PCI id that appeared with exactly one UUID is merged into it (two UUIDs at one slot means
the board was swapped, so those histories stay apart).

RMA candidacy, each with the quoted lines that justify it:
- one occurrence of a GPU-hardware signature whose catalog resolution is hardware
  (``rma = 'candidate'``: fallen off the bus, row-remap failure, Xid 64, SRAM threshold, ...);
- recurrence: GPU-hardware signatures with ``rma = 'supporting'`` (Xid 48/63/94/95,
  uncorrectable ECC, ...) in two separate episodes within the window (30 days by default).
Not counted: one signature on three or more GPUs in one incident (the application's or a peer's,
as the diagnosis rules), and incidents a person cleared with ``--exclude``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from denpex.catalog.loader import Catalog
from denpex.collect.lineinfo import normalize_pci
from denpex.store.lifecycle import FindingState
from denpex.store.records import GpuEvent, IncidentRecord, iso_utc

WINDOW_DAYS = 30
EPISODE_S = 600.0  # lines closer than this are one event reported several times, not a recurrence


@dataclass
class Occurrence:
    event: GpuEvent
    incidents: list[str]
    excluded: str | None = None  # why it does not count towards RMA


@dataclass
class RmaVerdict:
    candidate: bool
    reasons: list[str]
    why_not: list[str]
    window_days: int


@dataclass
class GpuHistory:
    key: str
    host: str
    pci_bus_id: str
    uuid: str
    occurrences: list[Occurrence] = field(default_factory=list)
    status: str = "ok"  # ok | watch | bad | rma_candidate
    open_incidents: list[str] = field(default_factory=list)
    rma: RmaVerdict = field(default_factory=lambda: RmaVerdict(False, [], [], WINDOW_DAYS))

    @property
    def incidents(self) -> list[str]:
        return sorted({i for o in self.occurrences for i in o.incidents})

    def signature_counts(self) -> dict[str, int]:
        """Incidents per signature: what Prometheus and the listing show."""
        per: dict[str, set[str]] = {}
        for o in self.occurrences:
            per.setdefault(o.event.signature, set()).update(o.incidents)
        return {s: len(ids) for s, ids in sorted(per.items())}


def _uuid_links(events: Iterable[GpuEvent]) -> dict[tuple[str, str], str]:
    seen: dict[tuple[str, str], set[str]] = {}
    for e in events:
        if e.uuid and e.pci_bus_id:
            seen.setdefault((e.host, e.pci_bus_id), set()).add(e.uuid)
    return {k: next(iter(v)) for k, v in seen.items() if len(v) == 1}


def build_histories(records: list[IncidentRecord], clears: dict[str, dict[str, object]],
                    states: dict[str, FindingState], catalog: Catalog,
                    window_days: int = WINDOW_DAYS) -> list[GpuHistory]:
    links = _uuid_links(e for r in records for e in r.events)
    gpus: dict[str, GpuHistory] = {}
    by_event: dict[tuple[str, str, str, float | None], Occurrence] = {}
    for rec in records:
        clear = clears.get(rec.id)
        excluded = f"excluded by hand: {clear.get('reason')}" if clear and clear.get("exclude") else None
        for e in rec.events:
            key = links.get((e.host, e.pci_bus_id), "") if not e.uuid else e.uuid
            key = key or e.gpu_key
            g = gpus.get(key)
            if g is None:
                g = gpus[key] = GpuHistory(key=key, host=e.host, pci_bus_id=e.pci_bus_id,
                                           uuid=e.uuid or (key if key.startswith("GPU-") else ""))
            g.host, g.pci_bus_id = g.host or e.host, g.pci_bus_id or e.pci_bus_id
            why = excluded or (f"same signature on 3 or more GPUs in incident {rec.id}: the job's or a peer's, "
                               f"not this GPU's" if e.many_gpus else None)
            ident = (key, e.signature, e.text, e.ts)
            occ = by_event.get(ident)
            if occ is None:
                occ = by_event[ident] = Occurrence(e, [rec.id], why)
                g.occurrences.append(occ)
            else:
                occ.incidents.append(rec.id)
                if why is None:  # counted when any report of it counts
                    occ.excluded = None
            if (st := states.get(rec.id)) is not None and st.open and rec.id not in g.open_incidents:
                g.open_incidents.append(rec.id)
    owners = {r.id: r.owner for r in records}
    for g in gpus.values():
        g.occurrences.sort(key=lambda o: (o.event.ts or 0.0, o.event.signature, o.event.text))
        g.rma = rma_verdict(g.occurrences, catalog, window_days)
        if g.rma.candidate:
            g.status = "rma_candidate"
        elif any(owners.get(i) == "gpu_hardware" for i in g.open_incidents):
            g.status = "bad"
        elif g.open_incidents:
            g.status = "watch"
    return sorted(gpus.values(), key=lambda g: (g.host, g.pci_bus_id, g.key))


def _quote(o: Occurrence) -> str:
    return f"{o.event.signature} at {iso_utc(o.event.ts) or 'unknown time'}: {o.event.text.strip()[:300]}"


def rma_verdict(occurrences: list[Occurrence], catalog: Catalog, window_days: int = WINDOW_DAYS) -> RmaVerdict:
    reasons: list[str] = []
    why_not: list[str] = []
    supporting: list[Occurrence] = []
    for o in occurrences:
        sig = catalog.get(o.event.signature)
        if sig is None or sig.owner != "gpu_hardware" or sig.rma == "none":
            continue
        if o.excluded:
            why_not.append(f"not counted ({o.excluded}): {_quote(o)}")
            continue
        if sig.rma == "candidate":
            reasons.append(f"{sig.title}: the catalog's resolution for it is hardware. {_quote(o)}")
        else:
            supporting.append(o)
    episodes = _episodes(supporting)
    recurrent = _recurrence(episodes, window_days * 86400.0)
    if recurrent:
        listing = "; ".join(_quote(ep[0]) for ep in recurrent)
        reasons.append(f"recurrence: GPU hardware errors in {len(recurrent)} separate episodes within "
                       f"{window_days} days: {listing}")
    elif episodes:
        why_not.append(f"{len(episodes)} episode(s) of supporting GPU hardware errors "
                       f"({', '.join(sorted({o.event.signature for ep in episodes for o in ep}))}); "
                       f"RMA candidacy needs 2 within {window_days} days")
    if not reasons and not occurrences:
        why_not.append("no GPU events on record")
    elif not reasons and not supporting and not why_not:
        why_not.append("no event on record has a hardware resolution (application, driver or interconnect "
                       "signatures only)")
    return RmaVerdict(bool(reasons), reasons, why_not, window_days)


def _episodes(occs: list[Occurrence]) -> list[list[Occurrence]]:
    out: list[list[Occurrence]] = []
    for o in sorted(occs, key=lambda o: o.event.ts or 0.0):
        if out and (o.event.ts or 0.0) - (out[-1][-1].event.ts or 0.0) <= EPISODE_S:
            out[-1].append(o)
        else:
            out.append([o])
    return out


def _recurrence(episodes: list[list[Occurrence]], window_s: float) -> list[list[Occurrence]]:
    """The largest set of consecutive episodes that fits in the window, when it has at least two."""
    best: list[list[Occurrence]] = []
    for i in range(len(episodes)):
        j = i
        while j + 1 < len(episodes) and (episodes[j + 1][0].event.ts or 0.0) - (episodes[i][0].event.ts or 0.0) \
                <= window_s:
            j += 1
        if j - i + 1 > len(best):
            best = episodes[i:j + 1]
    return best if len(best) >= 2 else []


_HOST_PCI = re.compile(r"^(?:(.+?)[/:])?([0-9a-fA-F]{1,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.[0-7])?)$")


def find_gpu(histories: list[GpuHistory], query: str) -> list[GpuHistory]:
    """By key or UUID, else ``host/PCI``, ``host:PCI`` or a PCI id alone, in any common spelling."""
    q = query.strip()
    exact = [g for g in histories if q and q in (g.key, g.uuid)]
    if exact:
        return exact
    m = _HOST_PCI.match(q)
    if not m:
        return []
    host, pci = m.group(1), normalize_pci(m.group(2))
    return [g for g in histories if g.pci_bus_id == pci and (host is None or g.host == host)]
