"""Findings have a lifecycle: open until what clears them holds, or a person clears them.

Users' top complaint about node-health tools is a verdict that never clears, so every failed
incident here is open only while nothing says otherwise. In order:

1. cleared by hand (``denpex incidents clear ID --reason ...``), recorded with who and when;
2. recurred: a later incident with the same root signature in the same place carries it on
   (one open finding per failure and place, however often it happened);
3. for a finding whose catalog entry has no hardware resolution (``rma = 'none'``: an
   application Xid, an OOM, a timeout): a later incident in the same place without it (the GPU
   or node ran work again), or 24 hours with no recurrence;
4. for a hardware finding whose ``clear_when`` asks for a passing ``dcgmi diag``: a later
   healthy incident in the same place that read ``dcgmi diag`` output.

Hardware findings whose resolution is a replacement stay open until a person clears them.
"Same place" is a shared GPU, or a shared host, or, when neither incident names a host, the
node whose store this is.
"""

from __future__ import annotations

import bisect
import math
import time
from dataclasses import dataclass

from denpex.catalog.loader import Catalog
from denpex.store.records import IncidentRecord, iso_utc

QUIET_S = 24 * 3600.0


@dataclass(frozen=True)
class FindingState:
    incident_id: str
    open: bool
    how: str  # healthy | open | by_hand | recurred | ran_again | quiet | dcgm_passed
    reason: str
    cleared_at: str | None = None
    excluded: bool = False


def _places(rec: IncidentRecord) -> tuple[set[str], set[str]]:
    gpus = {e.gpu_key for e in rec.events if e.root} or {e.gpu_key for e in rec.events}
    hosts = set(rec.hosts) | {e.host for e in rec.events if e.host}
    return gpus, hosts


def same_place(a: IncidentRecord, b: IncidentRecord) -> bool:
    ga, ha = _places(a)
    gb, hb = _places(b)
    if ga & gb or ha & hb:
        return True
    return not ha and not hb


def hardware_level(rec: IncidentRecord, catalog: Catalog) -> str:
    sig = catalog.get(rec.signature) if rec.signature else None
    return sig.rma if sig is not None else "none"


_NO_HOST = "\0no-host"


def _place_keys(gpus: set[str], hosts: set[str]) -> list[str]:
    """Group keys such that two incidents share one exactly when ``same_place`` holds."""
    keys = [f"gpu:{g}" for g in sorted(gpus)]
    return keys + ([f"host:{h}" for h in sorted(hosts)] if hosts else [_NO_HOST])


class _Later:
    """Per place and kind, incidents sorted by time: the first later one is a bisection away, so a
    node with thousands of incidents is never compared pairwise."""

    def __init__(self, ordered: list[IncidentRecord], keys: list[list[str]]) -> None:
        self.lists: dict[tuple[str, str], list[tuple[float, int]]] = {}
        for i, rec in enumerate(ordered):
            kinds = ["*"]
            if rec.status == "failed" and rec.signature:
                kinds.append(f"sig:{rec.signature}")
            if rec.status == "healthy" and rec.dcgm_diag:
                kinds.append("dcgm_pass")
            for k in keys[i]:
                for kind in kinds:
                    self.lists.setdefault((k, kind), []).append((rec.observed_ts, i))

    def first(self, keys: list[str], kind: str, after_ts: float) -> int | None:
        best: tuple[float, int] | None = None
        for k in keys:
            lst = self.lists.get((k, kind))
            if not lst:
                continue
            p = bisect.bisect_right(lst, (after_ts, math.inf))
            if p < len(lst) and (best is None or lst[p] < best):
                best = lst[p]
        return None if best is None else best[1]


def evaluate(records: list[IncidentRecord], clears: dict[str, dict[str, object]], catalog: Catalog,
             now: float | None = None) -> dict[str, FindingState]:
    now = time.time() if now is None else now
    ordered = sorted(records, key=lambda r: (r.observed_ts, r.id))
    keys = [_place_keys(*_places(r)) for r in ordered]
    later = _Later(ordered, keys)
    out: dict[str, FindingState] = {}
    for i, rec in enumerate(ordered):
        out[rec.id] = _state(rec, ordered, keys[i], later, clears.get(rec.id), catalog, now)
    return out


def _state(rec: IncidentRecord, ordered: list[IncidentRecord], keys: list[str], later: _Later,
           clear: dict[str, object] | None, catalog: Catalog, now: float) -> FindingState:
    excluded = bool(clear and clear.get("exclude"))
    if rec.status != "failed":
        return FindingState(rec.id, False, "healthy", "no failure", excluded=excluded)
    if clear is not None:
        return FindingState(rec.id, False, "by_hand", f"cleared by {clear.get('by')}: {clear.get('reason')}",
                            str(clear.get("at")), excluded)
    level = hardware_level(rec, catalog)
    t = rec.observed_ts
    if level == "none":
        j = later.first(keys, "*", t)
        if j is not None:
            nxt = ordered[j]
            if nxt.status == "failed" and nxt.signature == rec.signature:
                return _recurred(rec, nxt)
            return FindingState(rec.id, False, "ran_again",
                                f"work ran again without it ({nxt.id}: {nxt.title or nxt.status})",
                                iso_utc(nxt.observed_ts))
        if now - t >= QUIET_S:
            return FindingState(rec.id, False, "quiet", f"no recurrence for {QUIET_S / 3600:.0f} h",
                                iso_utc(t + QUIET_S))
        return FindingState(rec.id, True, "open", f"clears after {QUIET_S / 3600:.0f} h without recurrence")
    same = later.first(keys, f"sig:{rec.signature}", t)
    passed = later.first(keys, "dcgm_pass", t) if any("dcgmi diag" in c for c in rec.clear_when) else None
    if same is not None and (passed is None or same < passed):
        return _recurred(rec, ordered[same])
    if passed is not None:
        nxt = ordered[passed]
        return FindingState(rec.id, False, "dcgm_passed", f"dcgmi diag passed afterwards ({nxt.id})",
                            iso_utc(nxt.observed_ts))
    wait = "; ".join(rec.clear_when) or "a person clears it"
    return FindingState(rec.id, True, "open", f"hardware finding; clears when: {wait}")


def _recurred(rec: IncidentRecord, nxt: IncidentRecord) -> FindingState:
    return FindingState(rec.id, False, "recurred", f"recurred in {nxt.id}; that incident carries it",
                        iso_utc(nxt.observed_ts))
