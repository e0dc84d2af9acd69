"""Prometheus metrics from the local store: a textfile for node_exporter and an HTTP exporter."""

from denpex.metrics.model import Family, collect
from denpex.metrics.textfile import render, write_textfile

__all__ = ["Family", "collect", "render", "write_textfile"]
