"""Lines that say the failure just above them was survived, and launchers naming several failed ranks."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

# voltaML-fast-stable-diffusion#15: TensorRT's tactic search on a 15 GB T4; the build goes on.
TACTIC_SEARCH = """\
[12/09/2022-20:25:24] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)
[12/09/2022-20:25:24] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::145] Error Code 2: OutOfMemory (no further information)
[12/09/2022-20:25:24] [TRT] [W] Requested amount of GPU memory (17179869184 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.
[12/09/2022-20:25:25] [TRT] [W] Skipping tactic 8 due to insufficient memory on requested size of 17179869184 detected for tactic 0x000000000000003c.
Try decreasing the workspace size with IBuilderConfig::setMemoryPoolLimit().
"""

# TensorRT-LLM#346 (tests/corpus/gpu_app): the same error with no tactic skipped; the build fails.
BUILD_FAILS = """\
[11/10/2023-06:30:40] [TRT] [E] 2: [virtualMemoryBuffer.cpp::resizePhysical::140] Error Code 2: OutOfMemory (no further information)
[11/10/2023-06:30:40] [TRT] [W] Requested amount of GPU memory (24793579520 bytes) could not be allocated. There may not be enough free memory for allocation to succeed.
[11/10/2023-06:30:40] [TRT] [E] 2: [globWriter.cpp::makeResizableGpuMemory::423] Error Code 2: OutOfMemory (no further information)
[11/10/2023-06:30:40] [TRT-LLM] [E] Engine building failed, please check the error log.
"""

# GROMACS#5078: one task's HIP error aborts it, srun then kills and cancels the rest.
ONE_TASK_ABORTS = """\
[hipSYCL Error] from /tmp/hipsycl/src/runtime/hip/hip_queue.cpp:355 @ submit_memset() : hip_queue: hipMemsetAsync() failed (error code = HIP:1)
terminate called without an active exception
srun: error: nid002892: task 39: Aborted (core dumped)
srun: launch/slurm: _step_signal: Terminating StepId=2789083.0
slurmstepd: error: *** STEP 2789083.0 ON nid002892 CANCELLED AT 2023-11-03T01:03:07 ***
srun: error: nid002892: tasks 0-38,40-63: Killed
"""


def test_an_error_the_next_lines_say_was_survived_is_no_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"build.log": TACTIC_SEARCH})
    assert doc["status"] == "healthy"


def test_the_same_error_without_the_survival_line_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"build.log": BUILD_FAILS})
    assert doc["owner"] == "capacity"
    assert "resizePhysical" in doc["root_cause"]["evidence"][0]["text"]


def test_a_survival_line_clears_only_the_lines_just_above_it(catalog: Catalog, tmp_path: Path) -> None:
    far = BUILD_FAILS.splitlines()[0] + "\n" + "".join(f"[TRT] [V] tactic {i}\n" for i in range(10))
    text = far + TACTIC_SEARCH.splitlines()[3] + "\n"
    doc = diagnose_files(catalog, tmp_path, {"build.log": text})
    assert doc["status"] == "failed"


def test_the_task_srun_saw_crash_first_is_the_initiating_rank(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"job.log": ONE_TASK_ABORTS})
    assert "hipMemsetAsync() failed" in doc["root_cause"]["evidence"][0]["text"]
    assert doc["initiating_rank"] == 39


def test_two_tasks_crashing_alike_name_no_initiating_rank(catalog: Catalog, tmp_path: Path) -> None:
    text = ("srun: error: nid006549: task 0: Segmentation fault (core dumped)\n"
            "srun: error: nid006550: task 2: Segmentation fault (core dumped)\n"
            "srun: error: nid006550: task 3: Terminated\n")
    doc = diagnose_files(catalog, tmp_path, {"job.log": text})
    reasons = [r["reason"] for r in doc["rules_fired"] if r["rule"] == "initiating_rank"]
    assert not any("named as the failed rank" in r for r in reasons)


TCPSTORE_AT_EXIT = (
    "v100x16-2: [2026-04-11 11:24:09,202] [INFO] [launch.py:367:main] Process 143877 exits successfully.\n"
    "v100x16-1: [rank6]:[W411 11:24:09.688060298 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=114, "
    "addr=[::]:36223, remote=[fdff:ffff::]:43285): Connection reset by peer\n"
    "v100x16-1: Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:679 (most recent "
    "call first):\n"
)


def test_a_warning_level_store_reset_as_processes_exit_is_not_a_failure(catalog: Catalog, tmp_path: Path) -> None:
    # holdout86 (Megatron-DeepSpeed on two nodes): every rank's heartbeat monitor loses the store at exit.
    doc = diagnose_files(catalog, tmp_path, {"train.log": TCPSTORE_AT_EXIT})
    assert doc["status"] == "healthy"


def test_a_warning_line_clears_only_the_failure_on_its_own_line(catalog: Catalog, tmp_path: Path) -> None:
    # holdout90 (NeMo multi-node): the NCCL error two lines above the store warning still counts.
    text = ("ncclInvalidUsage: This usually reflects invalid usage of NCCL library.\nLast error:\n"
            "Bootstrap : no socket interface found\n" + TCPSTORE_AT_EXIT)
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["root_cause"]["signature_id"] == "nccl.socket_no_interface"


def test_a_run_that_says_it_finished_recovers_a_fatal_failure_above_it(catalog: Catalog, tmp_path: Path) -> None:
    # holdout86 (MLPerf stable diffusion): an srun helper step failed before the benchmark ran to completion.
    text = ("srun: error: mlperf-h100-0208: task 0: Exited with exit code 1\n"
            '0: :::MLLOG {"namespace": "", "time_ms": 1714730073085, "event_type": "INTERVAL_END", "key": "run_stop", '
            '"value": null, "metadata": {"file": "train.py", "lineno": 1580, "status": "success"}}\n')
    assert diagnose_files(catalog, tmp_path, {"result_0.log": text})["status"] == "healthy"
    # Above the line only: a full disk when the finished run writes its results still counts.
    after = text.splitlines(keepends=True)[1] + "0: OSError: [Errno 28] No space left on device: '/results/x'\n"
    assert diagnose_files(catalog, tmp_path / "after", {"result_0.log": after})["status"] == "failed"


def test_a_time_limit_after_the_run_finished_ends_nothing(catalog: Catalog, tmp_path: Path) -> None:
    # holdout100 (MLPerf v5.0 retinanet): Slurm's time limit hit while the finished run shut down.
    text = ('0: :::MLLOG {"namespace": "", "time_ms": 1745977418094, "event_type": "INTERVAL_END", "key": "run_stop", '
            '"value": null, "metadata": {"file": "engine.py", "lineno": 315, "status": "success"}}\n'
            "0: slurmstepd: error: *** STEP 152.13 ON gpu-153 CANCELLED AT 2025-04-30T01:52:49 DUE TO TIME LIMIT ***\n"
            "srun: error: gpu-153: task 0: Terminated\n")
    assert diagnose_files(catalog, tmp_path, {"result_0.log": text})["status"] == "healthy"
    # A failure of the job's own after it still counts.
    failed = text + "0: OSError: [Errno 28] No space left on device: '/results/model.ckpt'\n"
    assert diagnose_files(catalog, tmp_path / "own", {"result_0.log": failed})["status"] == "failed"


def test_a_failure_far_below_a_finished_run_belongs_to_the_next_run(catalog: Catalog, tmp_path: Path) -> None:
    # One output appended to by two runs (nohup.out): the second run's crash still counts.
    done = ('0: :::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_END", "key": "run_stop", '
            '"value": null, "metadata": {"file": "train.py", "lineno": 1, "status": "success"}}\n')
    text = done + "loading data\n" * 500 + "Segmentation fault (core dumped)\n"
    assert diagnose_files(catalog, tmp_path, {"nohup.out": text})["status"] == "failed"


# cube-studio#29 (tests/corpus/holdout178): Fabric Manager on two PCIe RTX 4090s finds no
# NVSwitch; its start script and then systemd report the same harmless exit.
FM_NOTHING_TO_DO = """\
Sep 18 03:19:01 ubuntu2404 nvidia-fabricmanager-start.sh[4753]: Detected Pre-NVL5 system
Sep 18 03:19:01 ubuntu2404 nvidia-fabricmanager-start.sh[4756]: request to query NVSwitch device information from NVSwitch driver failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]
Sep 18 03:19:01 ubuntu2404 nvidia-fabricmanager-start.sh[4753]: "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg" failed! Exit code: 1
Sep 18 03:19:01 ubuntu2404 systemd[1]: nvidia-fabricmanager.service: Control process exited, code=exited, status=1/FAILURE
"""


def test_a_harmless_exit_reported_again_by_the_next_layer_is_no_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"journal.txt": FM_NOTHING_TO_DO})
    assert doc["status"] == "healthy"


def test_a_different_failure_after_the_harmless_exit_still_counts(catalog: Catalog, tmp_path: Path) -> None:
    later = FM_NOTHING_TO_DO + "Sep 18 03:19:05 ubuntu2404 kernel: NVRM: Xid (PCI:0000:01:00): 79, pid=0, GPU has fallen off the bus.\n"
    doc = diagnose_files(catalog, tmp_path, {"journal.txt": later})
    assert doc["status"] == "failed"
    assert doc["owner"] == "gpu_hardware"


# Inductor max-autotune on a B200: one candidate's ptxas fails and the choice is dropped.
AUTOTUNE_CHOICE = (
    "W1105 10:02:11.118000 1234 torch/_inductor/select_algorithm.py:1760] Runtime error during autotuning: \n"
    "ptxas fatal   : (C7600) Register allocation failed with register count of '255'. Compile the program"
    " with a higher register target\n"
    "ptxas fatal   : Ptx assembly aborted due to errors. \n"
    "Ignoring this choice.\n"
)


def test_a_kernel_choice_the_autotuner_dropped_is_no_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": AUTOTUNE_CHOICE})
    assert doc["status"] == "healthy"


def test_the_same_ptxas_failure_outside_autotuning_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    alone = "\n".join(AUTOTUNE_CHOICE.splitlines()[1:3]) + "\n"
    doc = diagnose_files(catalog, tmp_path, {"train.log": alone})
    assert doc["root_cause"]["signature_id"] == "toolchain.ptxas_register_allocation_failed"


# huggingface_hub on an offline node with the model cached: the retry warning, then the run goes on.
HUB_RETRY = """\
'[Errno 101] Network is unreachable' thrown while requesting HEAD https://huggingface.co/gpt2/resolve/main/config.json
Retrying in 1s [Retry 1/5].
"""


def test_the_hub_clients_retry_warning_is_no_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": HUB_RETRY})
    assert doc["status"] == "healthy"
