"""``denpex rma GPU --out DIR``: the RMA evidence packet (JSON + Markdown) for one GPU."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from denpex.catalog import CatalogError
from denpex.cli.incidents import add_home, open_store, store_catalog, warn_bad_files
from denpex.store import StoreError, find_gpu
from denpex.store.gpus import WINDOW_DAYS
from denpex.store.identity import identity_for, parse_nvidia_smi_q
from denpex.store.layout import atomic_write_text, dump_json
from denpex.store.rma import build_packet, packet_name, render_packet_markdown
from denpex.store.view import snapshot

EXAMPLES = """examples:
  denpex rma gpu-node07/0000:41:00.0 --out rma/
  denpex rma GPU-2b5a3b8e-0c1d-4e2f-9a3b-1c2d3e4f5a6b --out rma/ --identity nvidia-smi-q.txt
  nvidia-smi -q > smi.txt && denpex rma 0000:41:00.0 --out rma/ --identity smi.txt

Writes DIR/rma-<gpu>.json and DIR/rma-<gpu>.md: identity, every Xid/ECC/remap line with its
time, recurrence, the tests to run before sending it, and that the vendor decides. A GPU whose
evidence does not justify a return gets a "not RMA-worthy" packet saying why.
exit codes: 0 RMA candidate packet, 1 not-RMA-worthy packet, 2 usage error, unknown GPU or unwritable DIR
"""


def register(sub: Any) -> None:
    p = sub.add_parser("rma", help="write the RMA evidence packet for one GPU",
                       description="Evidence packet for returning (or not returning) one GPU.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_home(p)
    p.add_argument("gpu", help="UUID, host/PCI, host:PCI or a PCI id (see denpex gpus)")
    p.add_argument("--out", type=Path, required=True, metavar="DIR", help="folder for the packet files")
    p.add_argument("--identity", type=Path, action="append", default=[], metavar="FILE",
                   help="nvidia-smi -q output of the node, for serial, VBIOS and driver (repeatable)")
    p.add_argument("--window-days", type=int, default=WINDOW_DAYS,
                   help=f"recurrence window (default {WINDOW_DAYS})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    smi: dict[str, dict[str, str]] = {}
    for f in args.identity:
        try:
            smi.update(parse_nvidia_smi_q(f.read_text(encoding="utf-8", errors="replace")))
        except OSError as exc:
            print(f"denpex: cannot read {f}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    if args.window_days < 1:
        print("denpex: --window-days must be at least 1", file=sys.stderr)
        return 2
    try:
        with open_store(args) as store:
            catalog = store_catalog()
            snap = snapshot(store, catalog, window_days=args.window_days)
    except (StoreError, CatalogError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    warn_bad_files(snap)
    found = find_gpu(snap.gpus, args.gpu)
    if not found:
        print(f"denpex: no GPU {args.gpu!r} in the store's history (see denpex gpus)", file=sys.stderr)
        return 2
    if len(found) > 1:
        print(f"denpex: {args.gpu!r} matches {len(found)} GPUs: " + ", ".join(g.key for g in found)
              + "; name it by UUID or host/PCI", file=sys.stderr)
        return 2
    g = found[0]
    packet = build_packet(g, snap.by_id, snap.states, catalog, identity_for(smi, g.pci_bus_id, g.uuid), snap.now)
    base = packet_name(g)
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out / f"{base}.json", dump_json(packet))
        atomic_write_text(args.out / f"{base}.md", render_packet_markdown(packet))
    except OSError as exc:
        print(f"denpex: cannot write the packet into {args.out}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    verdict = "RMA candidate" if g.rma.candidate else "not RMA-worthy"
    print(f"{verdict}: {args.out / (base + '.json')}, {args.out / (base + '.md')}")
    return 0 if g.rma.candidate else 1
