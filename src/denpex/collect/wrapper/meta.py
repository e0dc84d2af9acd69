"""Where a run's files go, and the metadata that says what ran, where, as which rank, and how it ended.

Layout (root: ``$DENPEX_HOME/runs`` when DENPEX_HOME is set, else ``./denpex-runs``)::

    <root>/<job-id>/rank-3/rank3.log        one folder per rank of a multi-rank job
    <root>/<job-id>/rank-3/.denpex/meta.json
    <root>/<job-id>/dmesg-<host>.txt        the node's kernel log around the run (one per host)
    <root>/<run-id>/output.log              a single process (no rank variables)

Capture files are named so ``denpex diagnose <root>/<job-id>`` recognises each rank by its
file name (``rank3.log``); Denpex's own JSON lives in a ``.denpex`` folder beside it.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import socket
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RANK_VARS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_JOB_ID", "OMPI_COMM_WORLD_RANK",
             "CUDA_VISIBLE_DEVICES", "SLURM_STEP_ID", "SLURM_NODEID", "SLURM_LOCALID", "SLURM_NTASKS",
             "OMPI_COMM_WORLD_SIZE", "PMI_RANK", "PMIX_RANK", "TORCHELASTIC_RUN_ID",
             "TORCHELASTIC_RESTART_COUNT", "SLURM_RESTART_COUNT", "MASTER_ADDR", "MASTER_PORT")
META_DIR = ".denpex"
# Commands that start other ranks: under `srun denpex run -- torchrun ...` SLURM_PROCID numbers
# nodes, not ranks, so the capture must not be named as if it were one rank's output.
LAUNCHERS = {"torchrun", "deepspeed", "accelerate", "mpirun", "mpiexec", "horovodrun", "srun"}
_LAUNCH_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


@dataclass
class RunLayout:
    job_dir: Path       # the folder `denpex diagnose` is pointed at
    run_dir: Path       # this process's folder
    capture: Path
    rank: int | None
    job_id: str | None


def denpex_home(env: Mapping[str, str]) -> Path:
    raw = env.get("DENPEX_HOME")
    return Path(raw).expanduser() if raw else Path.home() / ".denpex"


def runs_root(env: Mapping[str, str]) -> Path:
    raw = env.get("DENPEX_HOME")
    return Path(raw).expanduser() / "runs" if raw else Path("denpex-runs")


def short_host() -> str:
    return socket.gethostname().split(".", 1)[0] or "localhost"


def is_launcher(command: list[str]) -> bool:
    if not command:
        return False
    if os.path.basename(command[0]) in LAUNCHERS:
        return True
    return any(a == "-m" and b in _LAUNCH_MODULES for a, b in itertools.pairwise(command))


def global_rank(env: Mapping[str, str], command: list[str]) -> int | None:
    for var in ("RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"):
        value = _int(env.get(var))
        if value is not None:
            return value
    if not is_launcher(command):
        return _int(env.get("SLURM_PROCID"))
    return None


def job_key(env: Mapping[str, str], explicit: str | None) -> str | None:
    """One name for every rank of a job; Slurm's ``JOBID.STEPID`` when Slurm started us."""
    key: str | None = explicit or env.get("DENPEX_JOB_ID")
    if not key and env.get("SLURM_JOB_ID"):
        step = env.get("SLURM_STEP_ID")
        key = env["SLURM_JOB_ID"] + (f".{step}" if step and step.isdigit() else "")
    if not key and env.get("TORCHELASTIC_RUN_ID") not in (None, "", "none"):
        key = f"torchelastic-{env['TORCHELASTIC_RUN_ID']}"
    if not key and env.get("PMIX_NAMESPACE"):
        key = env["PMIX_NAMESPACE"]
    if not key:
        return None
    restarts = _int(env.get("TORCHELASTIC_RESTART_COUNT")) or _int(env.get("SLURM_RESTART_COUNT")) or 0
    if restarts:
        key += f"-restart{restarts}"
    return _SAFE.sub("_", key).strip("._") or None


def plan_layout(env: Mapping[str, str], command: list[str], run_dir: Path | None, job_id: str | None,
                started: float, pid: int) -> RunLayout:
    rank = global_rank(env, command)
    key = job_key(env, job_id)
    task = _int(env.get("SLURM_PROCID")) if rank is None and is_launcher(command) else None
    if run_dir is not None:
        name = f"rank{rank}.log" if rank is not None else "output.log"
        return RunLayout(job_dir=run_dir.parent if rank is not None else run_dir, run_dir=run_dir,
                         capture=run_dir / name, rank=rank, job_id=key)
    root = runs_root(env)
    if key is None and rank is not None:
        # Ranks started by one launcher without a job id share their parent's pid.
        key = f"job-{short_host()}-{os.getppid()}"
    if key is None:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(started))
        run = root / f"{stamp}-{_SAFE.sub('_', short_host())}-{pid}"
        return RunLayout(job_dir=run, run_dir=run, capture=run / "output.log", rank=None, job_id=None)
    job = root / key
    if rank is not None:
        run = job / f"rank-{rank}"
        return RunLayout(job_dir=job, run_dir=run, capture=run / f"rank{rank}.log", rank=rank, job_id=key)
    if task is not None:
        run = job / f"task-{task}"
        return RunLayout(job_dir=job, run_dir=run, capture=run / f"task{task}.log", rank=None, job_id=key)
    run = job / f"{_SAFE.sub('_', short_host())}-{pid}"
    return RunLayout(job_dir=job, run_dir=run, capture=run / "output.log", rank=None, job_id=key)


def rank_env(env: Mapping[str, str]) -> dict[str, str]:
    return {k: env[k] for k in RANK_VARS if k in env}


def iso(ts: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ts)) + f".{int(ts % 1 * 1e6):06d}Z"


def write_meta(run_dir: Path, meta: dict[str, Any]) -> Path:
    """Atomic (temp file + rename): a reader sees the start record or the end record, never half."""
    out = run_dir / META_DIR
    out.mkdir(parents=True, exist_ok=True)
    target = out / "meta.json"
    fd, tmp = tempfile.mkstemp(prefix=".meta-", suffix=".json", dir=out)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(meta, fh, indent=2, sort_keys=True, ensure_ascii=False)
            fh.write("\n")
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        n = int(value.strip())
    except ValueError:
        return None
    return n if n >= 0 else None
