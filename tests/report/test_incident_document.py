"""The JSON contract: valid against the shared schema, and deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from denpex.catalog import Catalog
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident
from denpex.evaluate.corpus import find_cases
from denpex.report.json_report import render_json
from tests.helpers import corpus_incident, corpus_sources

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "src" / "denpex" / "spec" / "incident.schema.json").read_text())
SHARED_SCHEMA = REPO.parent / "shared" / "spec" / "incident.schema.json"
INPUTS = [REPO / "examples" / "demo-job", *find_cases(REPO / "tests" / "corpus")]


def _doc(catalog: Catalog, path: Path) -> dict[str, object]:
    return build_incident(diagnose_paths(catalog, corpus_sources(path)))


def test_bundled_schema_is_the_shared_one() -> None:
    if not SHARED_SCHEMA.exists():
        pytest.skip("../shared not present")
    assert json.loads(SHARED_SCHEMA.read_text()) == SCHEMA


@pytest.mark.parametrize("path", INPUTS, ids=lambda p: p.name)
def test_incident_validates_against_schema(catalog: Catalog, path: Path) -> None:
    doc = corpus_incident(catalog, path)
    jsonschema.validate(doc, SCHEMA)
    if doc["status"] == "failed":
        ev = doc["root_cause"]["evidence"][0]
        assert ev["line_no"] >= 1 and ev["text"]
    else:
        assert doc["owner"] == "none"


def test_same_evidence_same_document(catalog: Catalog) -> None:
    path = REPO / "examples" / "demo-job"
    a, b = _doc(catalog, path), _doc(catalog, path)
    a.pop("generated_at")
    b.pop("generated_at")
    assert render_json(a) == render_json(b)
