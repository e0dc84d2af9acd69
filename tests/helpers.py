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


def site_catalog(root: Path, sig_id: str, pattern: str, explanation: str) -> Path:
    """A DENPEX_CATALOG_PATH-style folder holding one test signature; returns the folder."""
    family = sig_id.split(".")[0]
    folder = root / "site"
    (folder / family).mkdir(parents=True, exist_ok=True)
    (folder / family / f"{sig_id.split('.')[1]}.toml").write_text(f"""
[[signature]]
id = "{sig_id}"
title = "x"
patterns = ['{pattern}']
owner = "user_code"
category = "x"
severity = "fatal"
role = "root"
explanation = "{explanation}"
steps = [{{ step = "none" }}]
references = ["https://example.org/x"]
""")
    return folder
