"""One consistent reading of the store: incidents, lifecycle states and GPU histories together.

Every command (lists, RMA packets, metrics) works from one snapshot, so that a finding counted
open in the metrics is the one ``denpex incidents list`` shows open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from denpex.catalog.loader import Catalog
from denpex.store.gpus import WINDOW_DAYS, GpuHistory, build_histories
from denpex.store.lifecycle import FindingState, evaluate
from denpex.store.records import IncidentRecord
from denpex.store.store import Store


@dataclass
class Snapshot:
    records: list[IncidentRecord]
    clears: dict[str, dict[str, object]]
    states: dict[str, FindingState]
    gpus: list[GpuHistory]
    bad_files: list[tuple[str, str]]
    now: float

    @property
    def by_id(self) -> dict[str, IncidentRecord]:
        return {r.id: r for r in self.records}


def snapshot(store: Store, catalog: Catalog, now: float | None = None, window_days: int = WINDOW_DAYS) -> Snapshot:
    now = time.time() if now is None else now
    records = store.records()
    clears: dict[str, dict[str, object]] = dict(store.clears())
    states = evaluate(records, clears, catalog, now)
    gpus = build_histories(records, clears, states, catalog, window_days)
    return Snapshot(records, clears, states, gpus, store.bad_files(), now)
