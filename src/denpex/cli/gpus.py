"""``denpex gpus [GPU]``: every GPU the stored incidents name, with its history and RMA standing."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from denpex.catalog import CatalogError
from denpex.cli.incidents import add_home, open_store, store_catalog, warn_bad_files
from denpex.store import GpuHistory, StoreError, find_gpu
from denpex.store.gpus import WINDOW_DAYS
from denpex.store.records import iso_utc
from denpex.store.view import snapshot

EXAMPLES = """examples:
  denpex gpus                                   # one line per GPU, grouped by host
  denpex gpus --rma                             # only RMA candidates
  denpex gpus gpu-node07/0000:41:00.0           # one GPU's history with quoted lines
  denpex gpus GPU-2b5a3b8e-0c1d-4e2f-9a3b-1c2d3e4f5a6b --format json

status: ok, watch (an open finding names it), bad (an open GPU-hardware finding),
rma_candidate (its history justifies a return; see denpex rma GPU --out DIR).
exit codes: 0 ok, 1 --rma and at least one candidate, 2 usage error or unknown GPU
"""


def register(sub: Any) -> None:
    p = sub.add_parser("gpus", help="GPUs named by stored incidents, with history and RMA candidacy",
                       description="Per-GPU history from the local incident store.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_home(p)
    p.add_argument("gpu", nargs="?", help="show one GPU: UUID, host/PCI, host:PCI or a PCI id")
    p.add_argument("--rma", action="store_true", help="only RMA candidates")
    p.add_argument("--window-days", type=int, default=WINDOW_DAYS,
                   help=f"recurrence window for RMA candidacy (default {WINDOW_DAYS})")
    p.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.window_days < 1:
        print("denpex: --window-days must be at least 1", file=sys.stderr)
        return 2
    try:
        with open_store(args) as store:
            snap = snapshot(store, store_catalog(), window_days=args.window_days)
    except (StoreError, CatalogError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    warn_bad_files(snap)
    gpus = snap.gpus
    if args.gpu:
        gpus = find_gpu(gpus, args.gpu)
        if not gpus:
            print(f"denpex: no GPU {args.gpu!r} in the store's history", file=sys.stderr)
            return 2
    if args.rma:
        gpus = [g for g in gpus if g.rma.candidate]
    if args.format == "json":
        print(json.dumps([gpu_dict(g) for g in gpus], indent=2, ensure_ascii=False))
    elif args.gpu:
        sys.stdout.write("\n\n".join(render_detail(g, args.format == "markdown") for g in gpus))
    else:
        sys.stdout.write(render_table(gpus, args.format == "markdown"))
    if args.rma and gpus:
        return 1
    return 0


def gpu_dict(g: GpuHistory) -> dict[str, Any]:
    return {
        "key": g.key, "host": g.host, "pci_bus_id": g.pci_bus_id, "uuid": g.uuid, "status": g.status,
        "incidents": g.incidents, "open_incidents": g.open_incidents, "signatures": g.signature_counts(),
        "rma": {"candidate": g.rma.candidate, "reasons": g.rma.reasons, "why_not": g.rma.why_not,
                "window_days": g.rma.window_days},
        "events": [{"time": iso_utc(o.event.ts), "signature_id": o.event.signature, "text": o.event.text,
                    "source": o.event.source, "line_no": o.event.line_no, "incidents": o.incidents,
                    "counted": o.excluded is None, "not_counted_because": o.excluded} for o in g.occurrences],
    }


def render_table(gpus: list[GpuHistory], markdown: bool) -> str:
    if markdown:
        out = ["| host | PCI | UUID | status | incidents | signatures |", "|---|---|---|---|---|---|"]
        for g in gpus:
            sigs = ", ".join(f"{s}×{n}" for s, n in g.signature_counts().items())
            out.append(f"| {g.host or '?'} | {g.pci_bus_id} | {g.uuid} | {g.status} | {len(g.incidents)} | {sigs} |")
        return "\n".join(out) + "\n"
    out = [f"{'HOST':18} {'PCI':13} {'STATUS':13} {'INC':>3}  SIGNATURES"]
    for g in gpus:
        sigs = ", ".join(f"{s}×{n}" for s, n in g.signature_counts().items())
        out.append(f"{(g.host or '?'):18} {g.pci_bus_id:13} {g.status:13} {len(g.incidents):>3}  {sigs}")
        if g.uuid:
            out.append(f"{'':18} {g.uuid}")
    out.append(f"{len(gpus)} GPU(s), {sum(1 for g in gpus if g.rma.candidate)} RMA candidate(s)")
    return "\n".join(out) + "\n"


def render_detail(g: GpuHistory, markdown: bool) -> str:
    h = "## " if markdown else ""
    out = [f"{h}GPU {g.key}", f"host {g.host or 'unknown'} · PCI {g.pci_bus_id or 'unknown'} · "
                              f"UUID {g.uuid or 'unknown'} · status {g.status}", ""]
    out.append(f"{h}RMA: {'candidate' if g.rma.candidate else 'not a candidate'}")
    for r in g.rma.reasons or g.rma.why_not:
        out.append(f"  - {r}")
    out += ["", f"{h}History"]
    for o in g.occurrences:
        flag = "" if o.excluded is None else "  [not counted]"
        out.append(f"  {iso_utc(o.event.ts) or 'unknown time':20} {o.event.signature:24} "
                   f"{', '.join(o.incidents)}{flag}")
        out.append(f"    > {o.event.text.strip()[:200]}")
    if g.open_incidents:
        out += ["", "Open: " + ", ".join(g.open_incidents)]
    return "\n".join(out) + "\n"
