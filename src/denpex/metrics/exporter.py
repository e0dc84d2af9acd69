"""The HTTP exporter: the same metrics, computed from the store on every scrape.

prometheus_client comes with the ``service`` extra and is imported only here, when the exporter
starts, so the core stays standard-library only. Each scrape refreshes the index (cheap when no
file changed), so an incident written by any process shows on the next scrape.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from denpex.metrics.model import Family

EXTRA_HINT = "the exporter needs the 'service' extra: pip install 'denpex[service]'"


class ExporterUnavailable(Exception):
    """prometheus_client is not installed."""


def make_registry(source: Callable[[], list[Family]]) -> Any:
    try:
        from prometheus_client.core import CollectorRegistry, CounterMetricFamily, GaugeMetricFamily
    except ImportError as exc:
        raise ExporterUnavailable(EXTRA_HINT) from exc

    lock = threading.Lock()  # one scrape at a time reads the store

    class StoreCollector:
        def collect(self) -> Iterator[Any]:
            with lock:
                families = source()
            for f in families:
                labels = sorted({k for lab, _ in f.samples for k in lab})
                if f.kind == "counter":
                    # prometheus_client appends _total itself.
                    mf: Any = CounterMetricFamily(f.name.removesuffix("_total"), f.help, labels=labels)
                else:
                    mf = GaugeMetricFamily(f.name, f.help, labels=labels)
                for lab, value in f.samples:
                    mf.add_metric([lab.get(k, "") for k in labels], value)
                yield mf

        def describe(self) -> list[Any]:
            return []  # collected lazily; nothing to describe at registration

    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector())
    return registry


def serve(source: Callable[[], list[Family]], host: str, port: int) -> Any:
    """Start serving in a background thread; returns the server (``shutdown()`` stops it)."""
    registry = make_registry(source)
    from prometheus_client import start_http_server

    server, _thread = start_http_server(port, addr=host, registry=registry)
    return server
