from __future__ import annotations

from pathlib import Path

import pytest

from denpex.collect.wrapper.meta import job_key, plan_layout, rank_env, runs_root

T0 = 1_764_425_000.0


@pytest.mark.parametrize(("name", "env", "command", "job", "run", "capture"), [
    ("single process", {}, ["python", "t.py"], None, None, "output.log"),
    ("srun task", {"SLURM_JOB_ID": "123", "SLURM_STEP_ID": "0", "SLURM_PROCID": "3"}, ["python", "t.py"],
     "123.0", "123.0/rank-3", "rank3.log"),
    ("torchrun worker", {"RANK": "5", "TORCHELASTIC_RUN_ID": "abc"}, ["python", "t.py"],
     "torchelastic-abc", "torchelastic-abc/rank-5", "rank5.log"),
    ("RANK wins over SLURM_PROCID", {"RANK": "7", "SLURM_PROCID": "1", "SLURM_JOB_ID": "9"}, ["python", "t.py"],
     "9", "9/rank-7", "rank7.log"),
    ("mpirun rank", {"OMPI_COMM_WORLD_RANK": "2", "PMIX_NAMESPACE": "prterun-host-1@1"}, ["./a.out"],
     "prterun-host-1_1", "prterun-host-1_1/rank-2", "rank2.log"),
    ("srun wrapping torchrun: a node, not a rank", {"SLURM_JOB_ID": "77", "SLURM_PROCID": "1"},
     ["torchrun", "--nproc-per-node", "8", "t.py"], "77", "77/task-1", "task1.log"),
    ("python -m torch.distributed.run", {"SLURM_JOB_ID": "77", "SLURM_PROCID": "0"},
     ["python", "-m", "torch.distributed.run", "t.py"], "77", "77/task-0", "task0.log"),
    ("torchelastic restart", {"RANK": "1", "TORCHELASTIC_RUN_ID": "r", "TORCHELASTIC_RESTART_COUNT": "2"},
     ["python", "t.py"], "torchelastic-r-restart2", "torchelastic-r-restart2/rank-1", "rank1.log"),
    ("explicit job id", {"RANK": "0", "DENPEX_JOB_ID": "exp/1"}, ["python"], "exp_1", "exp_1/rank-0", "rank0.log"),
])
def test_layout(name: str, env: dict[str, str], command: list[str], job: str | None, run: str | None,
                capture: str) -> None:
    layout = plan_layout({"DENPEX_HOME": "/h", **env}, command, None, None, T0, 4242)
    root = Path("/h/runs")
    assert layout.capture.name == capture
    if job is None:
        assert layout.job_dir == layout.run_dir and layout.run_dir.parent == root
        assert layout.run_dir.name.endswith("-4242")
    else:
        assert layout.job_dir == root / job
        assert layout.run_dir == root / run


def test_capture_names_carry_the_rank_for_the_readers() -> None:
    from denpex.collect.kinds import rank_from_name

    layout = plan_layout({"RANK": "12", "DENPEX_JOB_ID": "j"}, ["python"], None, None, T0, 1)
    assert rank_from_name(str(layout.capture.relative_to(layout.job_dir))) == 12


def test_runs_root_default_is_the_working_folder() -> None:
    assert runs_root({}) == Path("denpex-runs")
    assert runs_root({"DENPEX_HOME": "/x"}) == Path("/x/runs")


def test_rank_env_keeps_only_rank_variables() -> None:
    env = {"RANK": "1", "CUDA_VISIBLE_DEVICES": "0,1", "HOME": "/root", "SLURM_JOB_ID": "5"}
    assert rank_env(env) == {"RANK": "1", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_JOB_ID": "5"}


def test_no_job_id_without_any_launcher_variable() -> None:
    assert job_key({}, None) is None
