"""Annotated example lines: each family's test, kept beside its rules.

A ``<file>.examples.log`` holds real log lines, each preceded by one or more directives::

    # expect: nccl.watchdog_timeout rank=3 seq=8871
    [rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog caught collective operation timeout: ...
    # expect-none: nccl.watchdog_timeout
    [rank3]: NCCL INFO comm 0x55d0 rank 3 nranks 8 cudaDev 3 busId 3b000 - Init COMPLETE

``todo-expect`` / ``todo-expect-none`` record known misses as data instead of deleting them.
Lines starting with ``##`` are comments; blank lines separate examples.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

_DIRECTIVE = re.compile(r"^# (expect|expect-none|todo-expect|todo-expect-none): (\S+)(.*)$")


@dataclass
class Example:
    kind: str  # expect | expect-none | todo-expect | todo-expect-none
    signature_id: str
    line: str
    file: Path
    line_no: int
    fields: dict[str, str] = field(default_factory=dict)


class ExamplesError(Exception):
    pass


def parse_examples(path: Path) -> list[Example]:
    pending: list[tuple[str, str, dict[str, str]]] = []
    out: list[Example] = []
    text = path.read_text(encoding="utf-8")
    for no, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip() or raw.startswith("##"):
            if pending and not raw.strip():
                raise ExamplesError(f"{path}:{no}: directive not followed by an example line")
            continue
        m = _DIRECTIVE.match(raw)
        if m:
            kind, sid, rest = m.groups()
            fields: dict[str, str] = {}
            for tok in shlex.split(rest):
                if "=" not in tok:
                    raise ExamplesError(f"{path}:{no}: field '{tok}' is not name=value")
                k, v = tok.split("=", 1)
                fields[k] = v
            pending.append((kind, sid, fields))
            continue
        if raw.startswith("# "):
            raise ExamplesError(f"{path}:{no}: unknown directive {raw!r}")
        if not pending:
            raise ExamplesError(f"{path}:{no}: example line without a directive")
        for kind, sid, fields in pending:
            out.append(Example(kind, sid, raw, path, no, fields))
        pending = []
    if pending:
        raise ExamplesError(f"{path}: trailing directive without an example line")
    return out


def example_files(root: Path) -> list[Path]:
    return sorted(root.rglob("*.examples.log"))
