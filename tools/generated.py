"""Shared by the catalog generators: write generated files, or check that they are current."""

from __future__ import annotations

import sys
from pathlib import Path


def write_or_check(outputs: dict[Path, str], check: bool) -> int:
    """With ``check``, exit status 1 when any file differs from what would be generated."""
    if check:
        stale = [p for p, text in outputs.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
        for p in stale:
            print(f"out of date: {p} (regenerate it; never edit a generated file)", file=sys.stderr)
        return 1 if stale else 0
    for p, text in outputs.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text, encoding="utf-8")
    return 0
