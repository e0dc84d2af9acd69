"""Prometheus text exposition (format 0.0.4) with the standard library only.

node_exporter's textfile collector reads ``*.prom`` files from one folder on every scrape; a
half-written file would be read as garbage, so the file is written to a temp name in the same
folder and renamed.
"""

from __future__ import annotations

import math
from pathlib import Path

from denpex.metrics.model import Family
from denpex.store.layout import atomic_write_text


def _escape_label(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(v: str) -> str:
    return v.replace("\\", "\\\\").replace("\n", "\\n")


def _value(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return str(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)


def render(families: list[Family]) -> str:
    out: list[str] = []
    for f in families:
        out.append(f"# HELP {f.name} {_escape_help(f.help)}")
        out.append(f"# TYPE {f.name} {f.kind}")
        for labels, value in f.samples:
            if labels:
                body = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels.items())
                out.append(f"{f.name}{{{body}}} {_value(value)}")
            else:
                out.append(f"{f.name} {_value(value)}")
    return "\n".join(out) + "\n"


def write_textfile(families: list[Family], path: Path) -> None:
    atomic_write_text(path, render(families))
