"""DENPEX_LOCAL=1 / --local: no network socket, refused in-process and shown from outside."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo-job"
_INET_CONNECT = re.compile(r"(?:connect|sendto|sendmsg|bind)\([^)]*AF_INET6?")


def _py(code: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, **(env or {})})


@pytest.mark.parametrize("code", [
    "import socket; socket.create_connection(('127.0.0.1', 9))",
    "import socket; socket.getaddrinfo('example.com', 443)",
    "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9/')",
    "import socket; socket.socket(socket.AF_INET6, socket.SOCK_STREAM)",
])
def test_local_mode_refuses_network_with_a_clear_error(code: str) -> None:
    res = _py("from denpex.minimize.local import enforce_local, LocalModeViolation\n"
              "enforce_local()\n"
              f"try:\n    {code}\nexcept LocalModeViolation as e:\n    print('REFUSED', e)\n")
    assert "REFUSED denpex: local mode (DENPEX_LOCAL=1)" in res.stdout, res.stderr


def test_unix_sockets_and_child_env_still_work() -> None:
    res = _py("import os, socket\nfrom denpex.minimize.local import enforce_local\nenforce_local()\n"
              "socket.socketpair()\nprint(os.environ['DENPEX_LOCAL'])")
    assert res.stdout.strip() == "1", res.stderr


@pytest.mark.parametrize("how", [["--local"], []])
def test_cli_installs_the_guard(how: list[str]) -> None:
    env = {} if how else {"DENPEX_LOCAL": "1"}
    res = _py("import sys\nfrom denpex.cli.main import main\nfrom denpex.minimize import local\n"
              f"main({how!r} + ['signatures', 'list'])\nprint('GUARD', local.is_enforced())", env)
    assert "GUARD True" in res.stdout, res.stderr


def _strace(args: list[str], tmp: Path) -> str:
    log = tmp / "strace.log"
    subprocess.run(["strace", "-f", "-qq", "-e", "trace=network", "-o", str(log), *args], capture_output=True,
                   timeout=120, check=False, env={**os.environ, "DENPEX_LOCAL": "1"})
    return log.read_text()


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed (apt-get install strace)")
def test_diagnosis_under_strace_makes_no_inet_call(tmp_path: Path) -> None:
    trace = _strace([sys.executable, "-m", "denpex", "--local", "diagnose", str(DEMO), "--format", "json"], tmp_path)
    assert not _INET_CONNECT.findall(trace), trace[:2000]


@pytest.mark.skipif(shutil.which("strace") is None, reason="strace not installed (apt-get install strace)")
def test_wrapper_under_strace_makes_no_inet_call(tmp_path: Path) -> None:
    from denpex.cli.main import build_parser

    if "run" not in build_parser()._subparsers._group_actions[0].choices:  # type: ignore[union-attr]
        pytest.skip("denpex run does not exist in this build")
    cmd = [sys.executable, "-m", "denpex", "--local", "run", "--run-dir", str(tmp_path / "run"), "--",
           "sh", "-c", "echo 'RuntimeError: CUDA error: an illegal memory access was encountered'; exit 1"]
    trace = _strace(cmd, tmp_path)
    assert not _INET_CONNECT.findall(trace), trace[:2000]


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0,
                    reason="needs root and unshare (util-linux) for a namespace without network interfaces")
def test_diagnosis_runs_in_a_network_namespace_without_interfaces() -> None:
    res = subprocess.run(["unshare", "--net", sys.executable, "-m", "denpex", "--local", "diagnose", str(DEMO),
                          "--format", "json"], capture_output=True, text=True, timeout=120, check=False)
    if res.returncode not in (0, 1) and "unshare" in res.stderr:
        pytest.skip(f"unshare refused here: {res.stderr.strip()[:200]}")
    assert res.returncode == 1 and '"xid.79"' in res.stdout, res.stderr
