"""RMA packets, nvidia-smi -q identity, and the store commands end to end through the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from denpex.cli.main import main
from denpex.store.identity import parse_nvidia_smi_q
from tests.store.conftest import FIXTURES, MakeIncident, xid

H, BUS = "gpu-node03", "0000:3b:00"


def test_nvidia_smi_q_identity_per_gpu() -> None:
    gpus = parse_nvidia_smi_q((FIXTURES / "nvidia-smi-q-2gpu.txt").read_text())
    assert sorted(gpus) == ["0000:18:00.0", "0000:41:00.0"]
    assert gpus["0000:18:00.0"] == {
        "pci_bus_id": "0000:18:00.0", "product": "NVIDIA H100 80GB HBM3", "serial": "1652923000001",
        "uuid": "GPU-11111111-2222-3333-4444-555555555555", "minor_number": "0", "vbios": "96.00.74.00.01",
        "board_id": "0x1800", "gpu_part_number": "2330-885-A1", "driver_version": "535.104.05",
        "cuda_version": "12.2"}
    assert gpus["0000:41:00.0"]["board_part_number"] == "692-2G520-0200-000"


@pytest.fixture
def home(tmp_path: Path, make_incident: MakeIncident) -> Path:
    h = tmp_path / "home"
    for day in (1, 20):
        doc = make_incident(xid(f"2026-05-{day:02d}T12:00:00+0000", H, BUS, 48))
        assert main(["incidents", "add", "--home", str(h), _save(tmp_path, doc)]) == 0
    doc = make_incident(xid("2026-05-02T12:00:00+0000", H, "0000:5b:00", 13))
    assert main(["incidents", "add", "--home", str(h), _save(tmp_path, doc)]) == 0
    return h


def _save(tmp: Path, doc: dict[str, object]) -> str:
    p = tmp / f"in-{doc['id']}.json"
    p.write_text(json.dumps(doc))
    return str(p)


def test_rma_candidate_packet(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "rma"
    assert main(["rma", f"{H}/{BUS}.0", "--home", str(home), "--out", str(out)]) == 0
    packet = json.loads((out / "rma-gpu-node03_0000_3b_00.0.json").read_text())
    assert packet["verdict"] == "rma_candidate" and packet["gpu"]["host"] == H
    assert "recurrence" in packet["reasons"][0]
    assert [h["signature_id"] for h in packet["history"]] == ["xid.48", "xid.48"]
    assert all("NVRM: Xid (PCI:0000:3b:00): 48" in h["quote"] and h["time"] for h in packet["history"])
    assert any(s["command"] == "dcgmi diag -r 3" for s in packet["before_sending"])
    assert "vendor decides" in packet["vendor_decides"]
    md = (out / "rma-gpu-node03_0000_3b_00.0.md").read_text()
    assert "**Verdict: RMA candidate.**" in md and "dcgmi diag -r 3" in md and "fieldiag" in md
    assert "| serial | unknown |" in md


def test_not_rma_worthy_packet_says_why(home: Path, tmp_path: Path) -> None:
    out = tmp_path / "rma"
    assert main(["rma", f"{H}:0000:5b:00.0", "--home", str(home), "--out", str(out)]) == 1
    packet = json.loads((out / "rma-gpu-node03_0000_5b_00.0.json").read_text())
    assert packet["verdict"] == "not_rma_worthy"
    assert "no event on record has a hardware resolution" in packet["why_not"][0]
    assert "Not RMA-worthy" in (out / "rma-gpu-node03_0000_5b_00.0.md").read_text()


def test_rma_identity_from_nvidia_smi_q(tmp_path: Path, make_incident: MakeIncident) -> None:
    h = tmp_path / "home"
    doc = make_incident(files={"nvidia-smi-q.txt": (FIXTURES / "nvidia-smi-q-2gpu.txt").read_text()})
    assert main(["incidents", "add", "--home", str(h), _save(tmp_path, doc)]) == 0
    out = tmp_path / "rma"
    assert main(["rma", "0000:18:00.0", "--home", str(h), "--out", str(out),
                 "--identity", str(FIXTURES / "nvidia-smi-q-2gpu.txt")]) == 0
    packet = json.loads(next(out.glob("*.json")).read_text())
    assert packet["gpu"]["serial"] == "1652923000001" and packet["gpu"]["vbios"] == "96.00.74.00.01"
    assert packet["gpu"]["driver_version"] == "535.104.05"
    assert packet["identity_unknown"] == ["host", "board_part_number"]  # not in the evidence: said so
    assert "row_remap_failure" in " ".join(packet["reasons"])


@pytest.mark.parametrize(("argv", "rc", "err"), [
    (["rma", "nonsense", "--out", "X"], 2, "no GPU"),
    (["rma", f"{H}/{BUS}.0", "--out", "X", "--identity", "/nonexistent/smi.txt"], 2, "cannot read"),
    (["gpus", "0000:77:00.0"], 2, "no GPU"),
    (["incidents", "show", "dpx-nothing"], 2, "no incident"),
    (["incidents", "list", "--since", "yesterday"], 2, "--since"),
    (["incidents", "clear", "dpx-", "--reason", "x"], 2, "ambiguous"),
    (["incidents", "add", "/nonexistent.json"], 2, "cannot read"),
    (["metrics", "--textfile", "/nonexistent/dir/denpex.prom"], 2, "does not exist"),
    (["exporter", "--listen", "nope"], 2, "HOST:PORT"),
])
def test_bad_input_is_one_line_and_exit_2(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          argv: list[str], rc: int, err: str) -> None:
    argv = [a.replace("X", str(tmp_path / "out")) for a in argv] + ["--home", str(home)]
    assert main(argv) == rc
    e = capsys.readouterr().err
    assert err in e and "Traceback" not in e and len(e.strip().splitlines()) == 1


def test_incidents_list_show_export_clear(home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["incidents", "list", "--home", str(home), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["signature_id"] for r in rows] == ["xid.48", "xid.13", "xid.48"]
    iid = rows[2]["id"]
    assert main(["incidents", "list", "--home", str(home), "--gpu", f"{H}/{BUS}.0", "--status", "open",
                 "--format", "json"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [iid]  # the first one recurred
    assert main(["incidents", "show", iid[:12], "--home", str(home), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["id"] == iid and doc["lifecycle"]["open"] is True
    assert main(["incidents", "clear", iid, "--home", str(home), "--reason", "GPU reset, dcgmi diag -r 3 passed",
                 "--by", "ops"]) == 0
    assert "cleared" in capsys.readouterr().out
    assert main(["incidents", "show", iid, "--home", str(home)]) == 0
    assert "closed: cleared by ops: GPU reset, dcgmi diag -r 3 passed" in capsys.readouterr().out
    assert main(["incidents", "list", "--home", str(home), "--status", "open", "--format", "markdown"]) == 0
    assert iid not in capsys.readouterr().out
    assert main(["incidents", "export", "--home", str(home)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 3
    assert main(["incidents", "export", "--home", str(home), "--out", str(tmp_path / "exp"), "--owner",
                 "gpu_hardware"]) == 0
    assert len(list((tmp_path / "exp").glob("dpx-*.json"))) == 2


def test_gpus_listing_and_rma_filter(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["gpus", "--home", str(home)]) == 0
    out = capsys.readouterr().out
    assert "rma_candidate" in out and "xid.48×2" in out and "2 GPU(s), 1 RMA candidate(s)" in out
    assert main(["gpus", "--home", str(home), "--rma", "--format", "json"]) == 1
    (g,) = json.loads(capsys.readouterr().out)
    assert g["key"] == f"{H}/{BUS}.0" and g["rma"]["candidate"] and len(g["events"]) == 2
    assert main(["gpus", f"{BUS}.0", "--home", str(home)]) == 0
    assert "recurrence" in capsys.readouterr().out
