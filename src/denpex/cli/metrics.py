"""``denpex metrics [--textfile PATH]``: Prometheus metrics from the store, for node_exporter."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from denpex.catalog import CatalogError
from denpex.cli.incidents import add_home, open_store, store_catalog
from denpex.metrics import collect, render, write_textfile
from denpex.store import StoreError
from denpex.store.view import snapshot

EXAMPLES = """examples:
  denpex metrics                                         # exposition text on stdout
  denpex metrics --textfile /var/lib/node_exporter/textfile/denpex.prom
  # cron, every minute:  * * * * * denpex metrics --textfile /var/lib/node_exporter/textfile/denpex.prom

The file is written atomically (temp file + rename), as node_exporter's textfile collector needs.
exit codes: 0 ok, 2 unusable store or unwritable PATH
"""


def register(sub: Any) -> None:
    p = sub.add_parser("metrics", help="Prometheus metrics from the store (stdout or a node_exporter textfile)",
                       description="Render the store's metrics in the Prometheus text format.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_home(p)
    p.add_argument("--textfile", type=Path, metavar="PATH", help="write atomically to PATH instead of stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        catalog = store_catalog()
        with open_store(args) as store:
            families = collect(snapshot(store, catalog), catalog)
    except (StoreError, CatalogError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    if args.textfile is None:
        sys.stdout.write(render(families))
        return 0
    if not args.textfile.parent.is_dir():
        print(f"denpex: folder {args.textfile.parent} does not exist", file=sys.stderr)
        return 2
    try:
        write_textfile(families, args.textfile)
    except OSError as exc:
        print(f"denpex: cannot write {args.textfile}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    return 0
