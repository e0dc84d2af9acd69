"""Run ``denpex run`` as a real process: signals, terminals and exit statuses need one."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

PY = sys.executable
HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Keep the wrapper's tests on one xdist worker, one after another.

    They start real process trees and send real signals, and a few of them time how fast a
    child notices something; one worker running them one after another keeps those timings
    away from each other. (The signal-forwarding flake once blamed on busy workers was the
    test child's own race, see ``SIGNAL_CHILD``.)
    """
    for item in items:
        if Path(str(item.path)).is_relative_to(HERE):
            item.add_marker(pytest.mark.xdist_group("wrapper"))


@dataclass
class Result:
    rc: int
    out: bytes
    err: bytes


def denpex_cmd(*args: str) -> list[str]:
    return [PY, "-m", "denpex", "run", *args]


@pytest.fixture
def wenv(tmp_path: Path) -> dict[str, str]:
    """An environment with DENPEX_HOME in tmp_path and no rank variables from the outer shell."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_JOB_ID", "SLURM_STEP_ID",
                        "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "TORCHELASTIC_RUN_ID", "DENPEX_JOB_ID",
                        "PMIX_NAMESPACE", "NO_COLOR")}
    env["DENPEX_HOME"] = str(tmp_path / "home")
    env["NO_COLOR"] = "1"
    return env


def run_pipe(args: list[str], env: dict[str, str], stdin: bytes | None = None, timeout: float = 30,
             **kw: Any) -> Result:
    proc = subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=timeout,
                          stdin=None if stdin is not None else subprocess.DEVNULL, **kw)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def run_pty(args: list[str], env: dict[str, str], timeout: float = 30) -> Result:
    """Wrapper with stdin, stdout and stderr on a fresh terminal; returns everything the terminal got."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data)
        elif proc.poll() is not None:
            break
    rc = proc.wait(timeout=5)
    os.close(master)
    return Result(rc, b"".join(chunks), b"")


def wait_for(proc: subprocess.Popen[bytes], marker: bytes, timeout: float = 15) -> bytes:
    """Read the process's stdout until ``marker`` shows up."""
    assert proc.stdout is not None
    got = b""
    deadline = time.monotonic() + timeout
    while marker not in got:
        assert time.monotonic() < deadline, f"no {marker!r} in {got!r}"
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                break
            got += chunk
    return got
