"""Orphans of the job are collected when denpex run is PID 1 or a subreaper, as tini does."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from denpex.collect.wrapper.reaper import reap_orphans
from tests.wrapper.conftest import denpex_cmd


def _zombie_children(pid: int) -> list[int]:
    zombies = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] == "Z" and int(fields[1]) == pid:
            zombies.append(int(stat.parent.name))
    return zombies


def test_subreaper_collects_an_orphan_while_the_job_runs(wenv: dict[str, str]) -> None:
    # The job starts a background sleep from a shell that exits at once: the sleep is orphaned,
    # handed to the wrapper, and exits while the job is still running.
    job = "sh -c 'sleep 0.3 &' ; sleep 2; echo done"
    proc = subprocess.Popen(denpex_cmd("--subreaper", "--diagnose", "never", "--", "sh", "-c", job),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=wenv)
    time.sleep(1.2)
    zombies = _zombie_children(proc.pid)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == b"done\n"
    assert zombies == []


def test_reap_orphans_leaves_the_main_child_to_its_owner() -> None:
    main = subprocess.Popen(["true"])
    other = subprocess.Popen(["true"])
    time.sleep(0.3)
    reap_orphans(main.pid)
    assert main.wait(timeout=5) == 0  # still ours to collect, with its real status
    other.poll()  # already collected by reap_orphans: Popen reports it as finished
    assert other.returncode is not None
