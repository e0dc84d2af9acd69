"""Metrics: names and values from a real store, textfile and exporter both clean for promtool."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.cli.main import main
from denpex.metrics import Family, collect, render
from denpex.metrics.exporter import serve
from denpex.store import Store
from denpex.store.view import snapshot
from tests.helpers import diagnose_files

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(PROMTOOL is None, reason="promtool not installed (apt-get install prometheus)")
REPO = Path(__file__).resolve().parents[2]


def xid(host: str, pci: str, code: int, msg: str, when: str = "2026-05-01T12:00:00+0000") -> str:
    return f"{when} {host} kernel: NVRM: Xid (PCI:{pci}): {code}, pid=1, name=python3, {msg}"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory, catalog: Catalog) -> Path:
    h = tmp_path_factory.mktemp("home")
    evidence = [
        xid("gpu-node07", "0000:41:00", 79, "GPU has fallen off the bus."),
        xid("gpu-node03", "0000:3b:00", 13, "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address"),
        'x"y\\z host-with-quote kernel: nothing to see here',
    ]
    with Store(h) as store:
        for i, line in enumerate(evidence):
            store.add(diagnose_files(catalog, tmp_path_factory.mktemp(f"ev{i}"), {"kern.log": line + "\n"}))
    return h


def _samples(text: str, name: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            key, _, value = line.rpartition(" ")
            out[key] = float(value)
    return out


def test_metric_values_follow_the_store(home: Path, catalog: Catalog) -> None:
    with Store(home) as store:
        text = render(collect(snapshot(store, catalog), catalog))
    inc = _samples(text, "denpex_incidents_total")
    assert inc['denpex_incidents_total{owner="gpu_hardware",category="gpu_lost",signature="xid.79"}'] == 1
    assert inc['denpex_incidents_total{owner="user_code",category="gpu_app_fault",signature="xid.13"}'] == 1
    assert inc['denpex_incidents_total{owner="none",category="healthy",signature="none"}'] == 1
    gpu = _samples(text, "denpex_gpu_incidents_total")
    assert gpu['denpex_gpu_incidents_total{host="gpu-node07",gpu_uuid="",pci_bus_id="0000:41:00.0",'
               'signature="xid.79"}'] == 1
    assert _samples(text, "denpex_rma_candidates") == {"denpex_rma_candidates": 1}
    assert _samples(text, "denpex_open_findings")['denpex_open_findings{owner="gpu_hardware"}'] == 1
    assert _samples(text, "denpex_catalog_signatures") == {"denpex_catalog_signatures": len(catalog.signatures)}
    assert _samples(text, "denpex_last_diagnosis_timestamp_seconds")["denpex_last_diagnosis_timestamp_seconds"] > 1.6e9
    for line in text.splitlines():  # Prometheus naming conventions
        if line.startswith("# TYPE"):
            _, _, name, kind = line.split()
            assert name.startswith("denpex_") and (kind != "counter" or name.endswith("_total"))


def _promtool_check(text: str) -> None:
    assert PROMTOOL is not None
    res = subprocess.run([PROMTOOL, "check", "metrics"], input=text, capture_output=True, text=True, timeout=30)
    assert res.returncode == 0, res.stdout + res.stderr


@needs_promtool
def test_textfile_is_atomic_and_passes_promtool(home: Path, tmp_path: Path) -> None:
    target = tmp_path / "denpex.prom"
    target.write_text("old\n")
    assert main(["metrics", "--home", str(home), "--textfile", str(target)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["denpex.prom"]  # no temp file left behind
    _promtool_check(target.read_text())


@needs_promtool
def test_exporter_serves_the_same_metrics_and_passes_promtool(home: Path, catalog: Catalog) -> None:
    def families() -> list[Family]:
        with Store(home) as store:
            return collect(snapshot(store, catalog), catalog)

    server = serve(families, "127.0.0.1", 0)
    try:
        port = server.server_port
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            text = resp.read().decode()
    finally:
        server.shutdown()
    _promtool_check(text)
    assert 'denpex_gpu_rma_candidate{gpu_uuid="",host="gpu-node07",pci_bus_id="0000:41:00.0"} 1.0' in text
    assert "denpex_rma_candidates 1.0" in text


label_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(value=label_text, help_text=label_text)
def test_label_values_round_trip_through_a_real_parser(value: str, help_text: str) -> None:
    from prometheus_client.parser import text_string_to_metric_families

    fam = Family("denpex_x_total", "counter", help_text, [({"signature": value}, 3.0)])
    (parsed,) = text_string_to_metric_families(render([fam]))
    (sample,) = parsed.samples
    assert sample.labels == {"signature": value} and sample.value == 3.0


def test_deploy_files_only_use_metrics_denpex_exports(home: Path, catalog: Catalog) -> None:
    with Store(home) as store:
        names = {f.name for f in collect(snapshot(store, catalog), catalog)}
    dashboard = json.loads((REPO / "deploy/grafana/denpex-dashboard.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    rules = (REPO / "deploy/prometheus/denpex-rules.yml").read_text()
    used = set(re.findall(r"\bdenpex_[a-z_]+", " ".join(exprs) + rules))
    assert used and used <= names, used - names
    assert len({p["id"] for p in dashboard["panels"]}) == len(dashboard["panels"])


@needs_promtool
@pytest.mark.parametrize("argv", [["check", "rules", "denpex-rules.yml"], ["test", "rules", "denpex-rules.test.yml"]])
def test_alert_rules_pass_promtool(argv: list[str]) -> None:
    assert PROMTOOL is not None
    res = subprocess.run([PROMTOOL, *argv], cwd=REPO / "deploy/prometheus", capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr


def _fuzz_doc() -> Any:
    leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
    return st.recursive(leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=12), c, max_size=4),
                        max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(extra=st.dictionaries(st.sampled_from(["root_cause", "timeline", "affected", "rma", "coverage", "rules_fired",
                                              "secondary", "generated_at", "clear_when", "owner"]), _fuzz_doc()))
def test_any_shape_of_incident_file_indexes_without_crashing(extra: dict[str, Any]) -> None:
    from denpex.store.records import to_record

    doc = {"schema": "denpex.incident/v1", "id": "dpx-fuzz", "status": "failed", **extra}
    rec = to_record(doc, 1.7e9)
    assert rec.id == "dpx-fuzz" and isinstance(rec.events, list)


def test_exporter_without_the_service_extra_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from denpex.metrics.exporter import ExporterUnavailable, make_registry

    real = builtins.__import__

    def no_prom(name: str, *a: Any, **k: Any) -> Any:
        if name.startswith("prometheus_client"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_prom)
    with pytest.raises(ExporterUnavailable, match="service"):
        make_registry(list)


def test_core_store_and_textfile_import_no_third_party_module() -> None:
    code = ("import sys, denpex.cli.main, denpex.store, denpex.metrics; "
            "bad=[m for m in ('prometheus_client',) if m in sys.modules]; print(bad)")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert res.stdout.strip() == "[]", res.stderr
