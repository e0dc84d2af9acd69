"""A real Prometheus (loopback only) scrapes `denpex exporter`; the incident count comes back
through its HTTP API, and a new incident written meanwhile shows on a later scrape."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from denpex.catalog import Catalog
from denpex.store import Store
from tests.helpers import diagnose_files

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("prometheus") is None,
                                reason="prometheus not installed (apt-get install prometheus)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _query(url: str, expr: str) -> list[dict[str, Any]]:
    q = urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(f"{url}/api/v1/query?{q}", timeout=5) as resp:
        body = json.loads(resp.read())
    assert body["status"] == "success"
    return list(body["data"]["result"])


def _wait_for(url: str, expr: str, want: float, timeout_s: float = 40) -> float:
    deadline = time.monotonic() + timeout_s
    value = None
    while time.monotonic() < deadline:
        result = _query(url, expr)
        if result:
            value = float(result[0]["value"][1])
            if value == want:
                return value
        time.sleep(0.25)
    raise AssertionError(f"{expr} = {value}, expected {want} within {timeout_s} s")


def _xid79(catalog: Catalog, tmp: Path, host: str) -> dict[str, Any]:
    line = f"2026-05-01T12:00:00+0000 {host} kernel: NVRM: Xid (PCI:0000:41:00): 79, pid=1, name=x, GPU has fallen off the bus."
    return diagnose_files(catalog, tmp, {"kern.log": line + "\n"})


def test_prometheus_scrapes_the_exporter(tmp_path: Path, catalog: Catalog) -> None:
    home, state = tmp_path / "home", tmp_path / "prom"
    with Store(home) as store:
        store.add(_xid79(catalog, tmp_path / "e1", "gpu-node07"))
    exp_port, prom_port = _free_port(), _free_port()
    exporter = subprocess.Popen([sys.executable, "-m", "denpex", "exporter", "--home", str(home),
                                 "--listen", f"127.0.0.1:{exp_port}"], stderr=subprocess.PIPE, text=True)
    try:
        assert exporter.stderr is not None
        assert "serving metrics" in exporter.stderr.readline()
        up = subprocess.run([str(REPO / "scripts/prometheus-up.sh"), str(state), f"127.0.0.1:{exp_port}",
                             str(prom_port)], capture_output=True, text=True, timeout=60)
        assert up.returncode == 0, up.stderr
        url = up.stdout.strip().split("=", 1)[1]
        assert url == f"http://127.0.0.1:{prom_port}"
        assert _wait_for(url, 'sum(denpex_incidents_total{owner="gpu_hardware"})', 1) == 1
        with Store(home) as store:  # a second node's incident copied in while running
            store.add(_xid79(catalog, tmp_path / "e2", "gpu-node08"))
        assert _wait_for(url, 'sum(denpex_incidents_total{signature="xid.79"})', 2) == 2
        assert _wait_for(url, "denpex_rma_candidates", 2) == 2
        health = _query(url, 'up{job="denpex"}')
        assert health[0]["value"][1] == "1"
    finally:
        subprocess.run([str(REPO / "scripts/prometheus-down.sh"), str(state)], timeout=30, check=False)
        exporter.send_signal(signal.SIGTERM)
        exporter.wait(10)
    assert exporter.returncode == 0
    assert not (state / "prometheus.pid").exists()
