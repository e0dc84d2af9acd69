"""Small helpers shared by tests: diagnose text written to a temp folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from denpex.catalog import Catalog
from denpex.collect.inputs import expand_paths
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident


def diagnose_files(catalog: Catalog, tmp: Path, files: dict[str, str]) -> dict[str, Any]:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    sources, _ = expand_paths([str(tmp)])
    return build_incident(diagnose_paths(catalog, sources))
