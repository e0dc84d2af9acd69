"""Small helpers shared by tests: diagnose text written to a temp folder."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from denpex.catalog import Catalog
from denpex.collect.inputs import Source, expand_paths
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident
from denpex.diagnose.run import diagnose_results
from denpex.evaluate.corpus import evidence_paths
from denpex.report.json_report import render_json
from denpex.scan.engine import Engine, default_engine
from denpex.scan.scanner import scan_all


def diagnose_files(catalog: Catalog, tmp: Path, files: dict[str, str]) -> dict[str, Any]:
    for name, text in files.items():
        p = tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    sources, _ = expand_paths([str(tmp)])
    return build_incident(diagnose_paths(catalog, sources))


def scan_incident(catalog: Catalog, path: Path, jobs: int, engine: object = None) -> str:
    """The incident and every event (line, signature, text, rank, host, time): what two scans must agree on."""
    sources, _ = expand_paths([str(path)])
    results = scan_all(catalog, sources, engine, jobs=jobs)  # type: ignore[arg-type]
    doc = build_incident(diagnose_results(catalog, results))
    doc.pop("generated_at")
    events = [(e.line_no, e.signature_id, e.text, e.rank, e.host, str(e.time)) for r in results for e in r.events]
    return render_json(doc) + repr(events)


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


_CORPUS_DOCS: dict[tuple[int, Path], dict[str, Any]] = {}


def corpus_sources(case: Path) -> list[Source]:
    """A corpus case's evidence (or a plain folder such as the demo job), named relative to it."""
    args = evidence_paths(case) if (case / "case.toml").exists() else [str(case)]
    sources, _ = expand_paths(args)
    for s in sources:
        if Path(s.display).is_relative_to(case):
            s.display = str(Path(s.display).relative_to(case))
    return sources


def corpus_incident(catalog: Catalog, case: Path, engine: Engine | None = None) -> dict[str, Any]:
    """The incident of a corpus case, diagnosed once per test session with the default engine.

    Several corpus-wide tests (schema, masking round trip, engine differential) need the clear
    diagnosis of every case; computing it once is most of what keeps ``make test`` short.
    A copy is returned, so callers may change it. Another engine is diagnosed afresh.
    """
    if engine is not None and engine is not default_engine(catalog.signatures):
        return build_incident(diagnose_paths(catalog, corpus_sources(case), engine))
    key = (id(catalog), case)
    doc = _CORPUS_DOCS.get(key)
    if doc is None:
        doc = _CORPUS_DOCS[key] = build_incident(diagnose_paths(catalog, corpus_sources(case)))
    return copy.deepcopy(doc)
