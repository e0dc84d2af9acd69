"""What leaves: strict payloads validate against the schema and carry no text; masked payloads
carry no clear host, secret or user; the preview prints exactly the payload bytes."""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from denpex.catalog import Catalog
from denpex.evaluate.corpus import evidence_paths, find_cases
from denpex.minimize.egress import build_payload
from denpex.minimize.strict import StrictPayloadError, check_textless
from tests.minimize.conftest import KEY

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "docs" / "strict-payload.schema.json").read_text())
CASES = find_cases(REPO / "tests" / "corpus")
DEMO = REPO / "examples" / "demo-job"
WHEN = datetime(2026, 1, 1, tzinfo=UTC)


def test_strict_payloads_of_the_corpus_validate_against_the_schema(catalog: Catalog) -> None:
    paths = [str(p) for p in CASES[::8]] + [str(DEMO)]  # masking is the cost: an eighth of the corpus
    for p in paths:
        doc = json.loads(build_payload(catalog, [p], "strict", KEY).data)
        jsonschema.validate(doc, SCHEMA)


def test_strict_payload_holds_no_word_of_the_evidence(catalog: Catalog) -> None:
    payload = build_payload(catalog, [str(DEMO)], "strict", KEY).data.decode()
    doc = json.loads(payload)
    assert doc["root_signature_id"] == "xid.79" and doc["initiating_rank"] == 2
    for forbidden in ("gpu-node07", "fallen off the bus", "0000:41:00", "torchrun", "dmesg"):
        assert forbidden not in payload


@pytest.mark.parametrize(("value", "ok"), [
    ({"id": "xid.79", "n": 3, "t": -1.5, "x": None}, True),
    ({"text": "RuntimeError: CUDA error: an illegal memory access was encountered"}, False),
    ({"path": "/home/alice/train.py"}, False),
    ({"k": ["ok", "also ok", "line\nbreak"]}, False),
])
def test_textless_check_refuses_free_text(value: object, ok: bool) -> None:
    if ok:
        check_textless(value)
    else:
        with pytest.raises(StrictPayloadError):
            check_textless(value)


def test_masked_payload_hides_hosts_and_keeps_the_verdict(catalog: Catalog, tmp_path: Path) -> None:
    job = tmp_path / "job"
    job.mkdir()
    for f in DEMO.iterdir():
        (job / f.name).write_bytes(f.read_bytes())
    (job / "env.txt").write_text("HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH\nUSER=alice\n")
    text = build_payload(catalog, [str(job)], "masked", KEY, WHEN).data.decode()
    doc = json.loads(text)
    assert doc["owner"] == "gpu_hardware" and doc["initiating_rank"] == 2
    assert "Xid (PCI:0000:41:00): 79" in doc["root_cause"]["evidence"][0]["text"]
    for clear in ("gpu-node07", "hf_aBcDeFgH", "alice", str(tmp_path)):
        assert clear not in text


def _cli(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "denpex", *args], input=stdin, capture_output=True, timeout=120,
                          check=False)


def test_preview_prints_exactly_the_payload(catalog: Catalog, denpex_home: Path) -> None:
    from denpex.minimize.keys import load_or_create_key

    expected = build_payload(catalog, [str(DEMO)], "strict", load_or_create_key()).data
    res = _cli("egress", "preview", "--mode", "strict", str(DEMO))
    assert res.returncode == 0, res.stderr
    assert res.stdout == expected


def test_mask_cli_reads_stdin_and_reports_bad_input() -> None:
    res = _cli("mask", "-", stdin=b"x AKIAIOSFODNN7EXAMPLE \xff\n")
    assert res.returncode == 0 and b"AKIA" not in res.stdout and res.stdout.endswith(b" \xff\n")
    missing = _cli("mask", "/nonexistent/file.log")
    assert missing.returncode == 2 and missing.stderr.count(b"\n") == 1 and b"Traceback" not in missing.stderr
    bad = _cli("egress", "preview", "--mode", "strict", "/nonexistent")
    assert bad.returncode == 2 and b"Traceback" not in bad.stderr


def test_evidence_files_of_every_case_are_readable_by_the_masker() -> None:
    assert all(evidence_paths(c) for c in CASES)
