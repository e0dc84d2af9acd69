"""``denpex exporter --listen HOST:PORT``: serve the store's metrics over HTTP for Prometheus."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from denpex.catalog import CatalogError
from denpex.cli.incidents import add_home, store_catalog
from denpex.metrics import Family, collect
from denpex.metrics.exporter import ExporterUnavailable, serve
from denpex.store import Store, StoreError
from denpex.store.layout import denpex_home
from denpex.store.view import snapshot

EXAMPLES = """examples:
  denpex exporter                                   # 127.0.0.1:9464/metrics
  denpex exporter --listen 0.0.0.0:9464             # reachable by a remote Prometheus
  curl -s 127.0.0.1:9464/metrics | promtool check metrics

Needs the 'service' extra (prometheus-client). Every scrape re-reads the store's index, so
incidents written by any process appear on the next scrape. Stops on SIGINT/SIGTERM.
exit codes: 0 stopped by a signal, 2 bad --listen, port in use, missing extra or unusable store
"""


def register(sub: Any) -> None:
    p = sub.add_parser("exporter", help="serve Prometheus metrics from the store over HTTP",
                       description="HTTP /metrics endpoint for the local incident store.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_home(p)
    p.add_argument("--listen", default="127.0.0.1:9464", metavar="HOST:PORT",
                   help="address to listen on (default 127.0.0.1:9464: loopback only)")
    p.set_defaults(func=run)


def parse_listen(value: str) -> tuple[str, int]:
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--listen {value!r}: expected HOST:PORT, e.g. 127.0.0.1:9464")
    return host.strip("[]") or "127.0.0.1", int(port)


def run(args: argparse.Namespace) -> int:
    try:
        host, port = parse_listen(args.listen)
        catalog = store_catalog()
        home = denpex_home(args.home)
        Store(home).close()  # fail now, not on the first scrape, when the store is unusable
    except (ValueError, StoreError, CatalogError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2

    def families() -> list[Family]:
        with Store(home) as store:
            return collect(snapshot(store, catalog), catalog)

    try:
        server = serve(families, host, port)
    except ExporterUnavailable as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"denpex: cannot listen on {host}:{port}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    print(f"denpex: serving metrics of {home} on http://{host}:{port}/metrics", file=sys.stderr, flush=True)
    stop.wait()
    server.shutdown()
    return 0
