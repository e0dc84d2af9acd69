"""The CLI as a user meets it: exit codes, formats, bad input without tracebacks."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo-job"


def denpex(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "denpex", *args], input=stdin, capture_output=True, timeout=120)


def test_failure_exits_1_and_prints_one_json_document() -> None:
    r = denpex("diagnose", str(DEMO), "--format", "json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["schema"] == "denpex.incident/v1"


def test_healthy_exits_0(tmp_path: Path) -> None:
    p = tmp_path / "ok.log"
    p.write_text("epoch 1 done\nepoch 2 done\n")
    r = denpex("diagnose", str(p), "--format", "json")
    assert r.returncode == 0
    assert json.loads(r.stdout)["status"] == "healthy"


@pytest.mark.parametrize("fmt", ["text", "markdown"])
def test_human_formats(fmt: str) -> None:
    r = denpex("diagnose", str(DEMO), "--format", fmt)
    assert r.returncode == 1
    assert b"xid" in r.stdout.lower()


def test_text_report_fits_a_screen() -> None:
    r = denpex("diagnose", str(DEMO), "--format", "text")
    assert len(r.stdout.decode().splitlines()) <= 30


def test_stdin_and_out_dir(tmp_path: Path) -> None:
    text = (DEMO / "dmesg-gpu-node07.txt").read_bytes()
    r = denpex("diagnose", "-", "--format", "json", "--out", str(tmp_path / "inc"), stdin=text)
    assert r.returncode == 1
    files = list((tmp_path / "inc").glob("*.json"))
    assert len(files) == 1 and json.loads(files[0].read_text())["root_cause"]["signature_id"] == "xid.79"


def test_missing_file_is_usage_error_without_traceback(tmp_path: Path) -> None:
    r = denpex("diagnose", str(tmp_path / "nope.log"))
    assert r.returncode == 2
    assert b"Traceback" not in r.stderr
    assert b"no such file" in r.stderr


def test_bad_inputs_warn_once_and_diagnose_the_rest(tmp_path: Path) -> None:
    (tmp_path / "junk.bin").write_bytes(bytes(range(256)) * 64)
    data = gzip.compress(b"ok\n" * 10000)
    (tmp_path / "cut.gz").write_bytes(data[: len(data) // 2])
    (tmp_path / "bad.log").write_bytes(b"\xff\xfe\x00 not utf8\n[ 12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n")
    r = denpex("diagnose", str(tmp_path), "--format", "json")
    assert b"Traceback" not in r.stderr
    assert r.returncode == 1
    warnings = [ln for ln in r.stderr.decode().splitlines() if "warning" in ln]
    assert any("junk.bin" in w for w in warnings) and any("cut.gz" in w for w in warnings)


def test_empty_folder_is_usage_error(tmp_path: Path) -> None:
    r = denpex("diagnose", str(tmp_path))
    assert r.returncode == 2 and b"Traceback" not in r.stderr


def test_help_has_examples() -> None:
    r = denpex("diagnose", "--help")
    assert r.returncode == 0 and b"examples:" in r.stdout


def test_signatures_commands() -> None:
    assert denpex("signatures", "show", "nccl.watchdog_timeout").returncode == 0
    assert denpex("signatures", "show", "no.such").returncode == 2
    r = denpex("signatures", "list", "--format", "json")
    assert r.returncode == 0 and len(json.loads(r.stdout)) > 10
    r = denpex("signatures", "export", "--format", "rg")
    assert r.returncode == 0 and r.stdout.count(b"\n") > 10


def test_empty_file_is_not_called_healthy(tmp_path: Path) -> None:
    p = tmp_path / "empty.log"
    p.write_text("")
    r = denpex("diagnose", str(p), "--format", "json")
    assert r.returncode == 2 and b"no readable evidence" in r.stderr


def test_a_50_mb_line_is_cut_with_a_warning_and_the_rest_diagnosed(tmp_path: Path) -> None:
    p = tmp_path / "huge.log"
    with p.open("wb") as fh:
        fh.write(b"x" * (50 * 1024 * 1024) + b"\n")
        fh.write(b"[ 12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n")
    r = denpex("diagnose", str(p), "--format", "json")
    assert r.returncode == 1 and b"Traceback" not in r.stderr
    assert b"cut to that length" in r.stderr
    assert json.loads(r.stdout)["root_cause"]["signature_id"] == "xid.79"


def test_stored_incident_has_secrets_masked(tmp_path: Path) -> None:
    p = tmp_path / "train.log"
    p.write_text("RuntimeError: CUDA error: an illegal memory access was encountered "
                 "token=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH\n")
    import os

    env = dict(os.environ, DENPEX_HOME=str(tmp_path / "home"))
    r = subprocess.run([sys.executable, "-m", "denpex", "diagnose", str(p), "--format", "json",
                        "--out", str(tmp_path / "inc")], capture_output=True, env=env, timeout=120)
    assert r.returncode == 1
    stored = next((tmp_path / "inc").glob("*.json")).read_text()
    assert "hf_abcdefghijklmnopqrstuvwxyz" not in stored
    assert "<secret:huggingface_token:" in stored
    assert json.loads(stored)["id"] == json.loads(r.stdout)["id"]
