"""The metrics Denpex exposes, computed once from a store snapshot for both exposition paths.

Names follow Prometheus conventions: a ``denpex_`` prefix, base units (seconds), ``_total``
for counters. Counters here count incident files, which only grow while incidents are kept;
``denpex_open_findings`` and ``denpex_rma_candidates`` are gauges because findings clear.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from denpex.catalog.loader import Catalog
from denpex.store.records import parse_time
from denpex.store.view import Snapshot

OWNERS_ALWAYS = ("gpu_hardware", "user_code", "framework", "capacity", "driver", "interconnect", "host",
                 "storage", "scheduler", "unknown")


@dataclass
class Family:
    """One metric family. ``name`` is what appears in samples (counters include ``_total``)."""

    name: str
    kind: str  # counter | gauge
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)


def collect(snap: Snapshot, catalog: Catalog) -> list[Family]:
    incidents = Family("denpex_incidents_total", "counter",
                       "Incidents in the local store, by owner, category and root signature.")
    per = Counter((r.owner, r.category or "unknown", r.signature or "none") for r in snap.records)
    for (owner, category, sig), n in sorted(per.items()):
        incidents.samples.append(({"owner": owner, "category": category, "signature": sig}, float(n)))

    gpu_inc = Family("denpex_gpu_incidents_total", "counter",
                     "Incidents that name a GPU, by host, GPU UUID (empty when unknown), PCI bus id and signature.")
    for g in snap.gpus:
        for sig, n in g.signature_counts().items():
            gpu_inc.samples.append(({"host": g.host, "gpu_uuid": g.uuid, "pci_bus_id": g.pci_bus_id,
                                     "signature": sig}, float(n)))

    open_f = Family("denpex_open_findings", "gauge",
                    "Failed incidents whose finding is still open (not cleared by evidence or by hand), by owner.")
    open_per = Counter(r.owner for r in snap.records if snap.states[r.id].open)
    for owner in sorted(set(OWNERS_ALWAYS) | set(open_per)):
        open_f.samples.append(({"owner": owner}, float(open_per.get(owner, 0))))

    rma = Family("denpex_rma_candidates", "gauge", "GPUs whose history makes them RMA candidates.")
    rma.samples.append(({}, float(sum(1 for g in snap.gpus if g.rma.candidate))))

    gpu_rma = Family("denpex_gpu_rma_candidate", "gauge",
                     "1 when this GPU's history makes it an RMA candidate, else 0.")
    for g in snap.gpus:
        gpu_rma.samples.append(({"host": g.host, "gpu_uuid": g.uuid, "pci_bus_id": g.pci_bus_id},
                                1.0 if g.rma.candidate else 0.0))

    last = Family("denpex_last_diagnosis_timestamp_seconds", "gauge",
                  "When the newest incident in the store was diagnosed (Unix time); 0 when the store is empty.")
    stamps = [t for t in (parse_time(r.generated_at) for r in snap.records) if t is not None]
    last.samples.append(({}, max(stamps) if stamps else 0.0))

    sigs = Family("denpex_catalog_signatures", "gauge", "Signatures in the loaded catalog.")
    sigs.samples.append(({}, float(len(catalog.signatures))))

    bad = Family("denpex_store_unreadable_files", "gauge",
                 "Files in the store that are not incident or clear records (skipped).")
    bad.samples.append(({}, float(len(snap.bad_files))))
    return [incidents, gpu_inc, open_f, rma, gpu_rma, last, sigs, bad]
