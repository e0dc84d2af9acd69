"""Root versus cascade across ranks, on small logs shaped like real torchrun output."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

OOM_THEN_TIMEOUTS = """\
[rank0]:[I1129 14:00:00.000000 100 ProcessGroupNCCL.cpp:2100] [PG 0 Rank 0] ProcessGroupNCCL initialized
[rank3]:[E1129 14:01:00.000000 103 x.py:1] failed
[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 3 has a total capacity of 79.15 GiB of which 1.06 GiB is free.
[rank0]:[E1129 14:11:00.100000 100 ProcessGroupNCCL.cpp:616] [PG 0 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600036 milliseconds before timing out.
[rank1]:[E1129 14:11:00.200000 101 ProcessGroupNCCL.cpp:616] [PG 0 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600036 milliseconds before timing out.
[rank2]:[E1129 14:11:00.300000 102 ProcessGroupNCCL.cpp:616] [PG 0 Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=10, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600036 milliseconds before timing out.
"""


def test_oom_on_one_rank_is_root_and_timeouts_are_cascade(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": OOM_THEN_TIMEOUTS})
    assert doc["status"] == "failed"
    assert doc["owner"] == "capacity"
    assert "CUDA out of memory" in doc["root_cause"]["evidence"][0]["text"]
    assert doc["initiating_rank"] == 3
    roles = {e["rank"]: e["role"] for e in doc["timeline"] if e["rank"] in (0, 1, 2)}
    assert set(roles.values()) == {"cascade"}


TIMEOUTS_ONLY = "\n".join(
    f"[rank{r}]:[E1129 14:11:00.{r}00000 10{r} ProcessGroupNCCL.cpp:1537] [PG 0 Rank {r}] Exception (either an error "
    f"or timeout) detected by watchdog at work: 20, last enqueued NCCL work: 20, last completed NCCL work: "
    f"{19 if r != 2 else 17}." for r in range(4)) + "\n"


def test_timeouts_only_point_at_the_rank_that_completed_least(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": TIMEOUTS_ONLY})
    assert doc["owner"] == "unknown"
    assert doc["initiating_rank"] == 2
    assert doc["coverage"]["missing"], "unknown owner must say what would decide it"


def test_healthy_nccl_chatter_is_healthy(catalog: Catalog, tmp_path: Path) -> None:
    text = "\n".join([
        "node01:1234:1234 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
        "node01:1234:1234 [0] NCCL INFO NET/IB : No device found.",
        "node01:1234:1234 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 cudaDev 0 busId 3b000 - Init COMPLETE",
        "/usr/lib/python3/site-packages/torch/nn/modules/module.py:1: FutureWarning: `torch.cuda.amp.autocast(args...)` is deprecated.",
        "Epoch 0: 100%|##########| 10/10 [00:01<00:00,  9.10it/s, loss=0.5]",
        "`Trainer.fit` stopped: `max_epochs=1` reached.",
    ]) + "\n"
    doc = diagnose_files(catalog, tmp_path, {"run.log": text})
    assert doc["status"] == "healthy"
    assert doc["owner"] == "none"
    assert doc["root_cause"]["signature_id"] is None


def test_xid_on_the_ranks_gpu_outranks_its_cuda_error(catalog: Catalog, repo: Path) -> None:
    from denpex.collect.inputs import expand_paths
    from denpex.diagnose import diagnose_paths
    from denpex.diagnose.incident import build_incident

    sources, _ = expand_paths([str(repo / "examples" / "demo-job")])
    doc = build_incident(diagnose_paths(catalog, sources))
    assert doc["root_cause"]["signature_id"] == "xid.79"
    assert doc["owner"] == "gpu_hardware"
    assert doc["initiating_rank"] == 2
    assert doc["rma"]["candidate"] is True
    assert doc["impact"]["last_checkpoint"] == "global_step1000"
    assert doc["impact"]["world_size"] == 4


def test_same_xid_on_many_gpus_is_not_every_gpus_fault(catalog: Catalog, tmp_path: Path) -> None:
    lines = [f"[Sun Nov 29 14:01:0{i} 2026] NVRM: Xid (PCI:0000:{bus}:00): 13, pid=4242, name=python, "
             "Graphics SM Warp Exception on (GPC 1, TPC 0, SM 0): Out Of Range Address"
             for i, bus in enumerate(["1b", "2c", "41", "5e"])]
    doc = diagnose_files(catalog, tmp_path, {"dmesg.txt": "\n".join(lines) + "\n"})
    assert doc["owner"] == "user_code"
    assert doc["rma"]["candidate"] is False


def test_error_followed_by_progress_is_recovered(catalog: Catalog, tmp_path: Path) -> None:
    text = "\n".join([
        "Step 10/100 | loss 2.1",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.",
        "Reducing batch size to 16 and retrying",
        "Step 11/100 | loss 2.0",
        "`Trainer.fit` stopped: `max_epochs=1` reached.",
    ]) + "\n"
    doc = diagnose_files(catalog, tmp_path, {"run.log": text})
    assert doc["status"] == "healthy"


def test_a_later_failure_on_another_node_does_not_take_over_the_root(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {
        "nodeA.log": "2026-11-29T14:01:00 nodeA python[123]: torch.OutOfMemoryError: CUDA out of memory. "
                     "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.\n",
        "nodeB.log": "2026-11-29T14:03:00 nodeB kernel: Out of memory: Killed process 4242 (python3) total-vm:81234kB, "
                     "anon-rss:40123kB, file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:812kB oom_score_adj:0\n",
    })
    assert doc["root_cause"]["signature_id"] == "torch.cuda_oom"
    assert any(s["signature_id"].startswith("kernel.") for s in doc["secondary"])


def test_node_evidence_right_after_the_first_failure_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {
        "train.log": "2026-11-29T14:01:02 node7 python[123]: RuntimeError: CUDA error: unspecified launch failure\n",
        "kern.log": "2026-11-29T14:01:01 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', "
                    "name=<unknown>, GPU has fallen off the bus.\n",
    })
    assert doc["root_cause"]["signature_id"] == "xid.79"
    assert doc["owner"] == "gpu_hardware"


def test_buffered_progress_after_a_crash_is_not_recovery(catalog: Catalog, tmp_path: Path) -> None:
    """stdout flushed at exit puts earlier progress after the traceback; the launcher's exit wins."""
    text = "\n".join([
        "Step 10/100 | loss 2.1",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.06 GiB is free.",
        "Step 11/100 | loss 2.0",
        "Step 12/100 | loss 2.0",
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 4242) of binary: /usr/bin/python3",
    ]) + "\n"
    doc = diagnose_files(catalog, tmp_path, {"run.log": text})
    assert doc["status"] == "failed"
    assert doc["root_cause"]["signature_id"] == "torch.cuda_oom"


WARNING_THEN_ERROR = """\
INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)
WARNING: failed to allocate 0.08 MB of pinned memory: CUDA driver version is insufficient for CUDA runtime version
CUDA error 35 at /home/runner/work/ctransformers/ctransformers/models/ggml/ggml-cuda.cu:4236: CUDA driver version is insufficient for CUDA runtime version
"""


def test_the_error_line_is_the_root_not_the_warning_that_preceded_it(catalog: Catalog, tmp_path: Path) -> None:
    # Regression from a real log (ialacol on Kubernetes, CUDA 12 runtime on a 470 driver).
    doc = diagnose_files(catalog, tmp_path, {"pod.log": WARNING_THEN_ERROR})
    assert doc["owner"] == "driver"
    assert doc["root_cause"]["evidence"][0]["text"].startswith("CUDA error 35 at")


RESOURCE_TRACKER_AT_EXIT = """\
Traceback (most recent call last):
  File "/usr/lib/python3.10/multiprocessing/resource_tracker.py", line 209, in main
    cache[rtype].remove(name)
KeyError: '/psm_10b3d52e'
Traceback (most recent call last):
  File "/usr/lib/python3.10/multiprocessing/resource_tracker.py", line 209, in main
    cache[rtype].remove(name)
KeyError: '/psm_10b3d52e'
"""


def test_resource_tracker_noise_at_exit_is_not_a_failure(catalog: Catalog, tmp_path: Path) -> None:
    # Regression from a real log (vLLM 0.5.0 with the multiprocessing backend, vllm#5468):
    # every repetition of the harmless line must be cleared, not only the first.
    doc = diagnose_files(catalog, tmp_path, {"resource_tracker.log": RESOURCE_TRACKER_AT_EXIT})
    assert doc["status"] == "healthy"
    assert doc["owner"] == "none"


def _watchdog(rank: int, op: str, seq: int = 3742816) -> str:
    return (f"[E ProcessGroupNCCL.cpp:737] [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType={op}, Timeout(ms)=1800000) ran for 1801750 milliseconds before timing out.")


def test_one_rank_in_another_collective_at_the_same_seq_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    # pytorch#77030 (tests/corpus/holdout30): rank 0 in REDUCE, the others in _ALLGATHER_BASE.
    text = "\n".join([_watchdog(1, "_ALLGATHER_BASE"), _watchdog(0, "REDUCE"), _watchdog(5, "_ALLGATHER_BASE")])
    doc = diagnose_files(catalog, tmp_path, {"train.log": text + "\n"})
    assert doc["owner"] == "user_code"
    assert "OpType=REDUCE" in doc["root_cause"]["evidence"][0]["text"]
    assert doc["initiating_rank"] == 0
    assert "collectives_differ_at_same_seq" in {r["rule"] for r in doc["rules_fired"]}


def test_same_collective_everywhere_stays_unknown(catalog: Catalog, tmp_path: Path) -> None:
    text = "\n".join(_watchdog(r, "ALLREDUCE") for r in range(3))
    doc = diagnose_files(catalog, tmp_path, {"train.log": text + "\n"})
    assert doc["owner"] == "unknown"


def test_two_ranks_each_side_name_no_odd_one(catalog: Catalog, tmp_path: Path) -> None:
    text = "\n".join([_watchdog(0, "REDUCE"), _watchdog(1, "REDUCE"), _watchdog(2, "ALLGATHER"), _watchdog(3, "ALLGATHER")])
    doc = diagnose_files(catalog, tmp_path, {"train.log": text + "\n"})
    assert doc["owner"] == "unknown"


def test_desync_report_names_the_rank_that_never_joined(catalog: Catalog, tmp_path: Path) -> None:
    text = "\n".join([
        _watchdog(0, "ALLREDUCE", 2),
        " - [0] Timeout at collective: ALLREDUCE, #3",
        " - To our best knowledge, the lagging/dead/mismatched ranks that caused the desync are:",
        "     [1] finished collective #2, but didn't join collective #3 (count from 1)",
    ])
    doc = diagnose_files(catalog, tmp_path, {"train.log": text + "\n"})
    assert doc["owner"] == "user_code"
    assert "didn't join collective #3" in doc["root_cause"]["evidence"][0]["text"]
    assert all(not (e.get("signature_id") or "").startswith("kernel.") for e in doc["timeline"])


def test_same_error_on_every_rank_at_once_names_no_rank(catalog: Catalog, tmp_path: Path) -> None:
    # horovod#3929 / accelerate#2246 (tests/corpus): every rank reports the duplicate GPU together.
    text = "\n".join(f"[rank{r}]:[E1129 14:00:00.{r}00000 10{r} ProcessGroupNCCL.cpp:1] [Rank {r}] "
                     f"torch.distributed.DistBackendError: NCCL error: invalid usage, NCCL version 2.18.1 "
                     f"ncclInvalidUsage: This usually reflects invalid usage of NCCL library. "
                     f"Duplicate GPU detected : rank {r} and rank {(r + 1) % 4} both on CUDA device 1000"
                     for r in range(4)) + "\n"
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["status"] == "failed"
    assert doc["initiating_rank"] is None


def test_one_rank_alone_with_the_error_is_named(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": OOM_THEN_TIMEOUTS})
    assert doc["initiating_rank"] == 3


def _finished_then_time_limit(kill_at: str) -> str:
    return ("[after training is done] datetime: 2025-12-03 14:45:03\n"
            f"slurmstepd: error: *** STEP 4226796.2 ON eos0117 CANCELLED AT 2025-12-03T{kill_at} DUE TO TIME LIMIT ***\n")


def test_time_limit_long_after_the_run_finished_is_an_exit_hang(catalog: Catalog, tmp_path: Path) -> None:
    # Megatron-Bridge#1656 (tests/corpus/holdout124): training done at 14:45, killed at 14:53.
    doc = diagnose_files(catalog, tmp_path, {"slurm.out": _finished_then_time_limit("14:53:02")})
    assert doc["status"] == "failed"
    assert doc["owner"] == "framework"
    assert "exit_hang" in {r["rule"] for r in doc["rules_fired"]}


def test_time_limit_during_shutdown_right_after_finishing_is_harmless(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"slurm.out": _finished_then_time_limit("14:45:40")})
    assert doc["status"] == "healthy"


def _timeout_at(seq: int) -> str:
    return "".join(f"[rank{r}]:[E ProcessGroupNCCL.cpp:616] [Rank {r}] Watchdog caught collective operation timeout: "
                   f"WorkNCCL(SeqNum={seq}, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=1800000) ran for "
                   f"1800032 milliseconds before timing out.\n" for r in (1, 2, 3))


def test_timeout_at_the_first_collective_is_the_jobs(catalog: Catalog, tmp_path: Path) -> None:
    # LLaMA-Factory#2424 (tests/corpus/holdout47): rank 0 tokenized for longer than the timeout.
    doc = diagnose_files(catalog, tmp_path, {"train.log": _timeout_at(1)})
    assert doc["owner"] == "user_code"
    assert "first_collective_timeout" in {r["rule"] for r in doc["rules_fired"]}


def test_timeout_deep_into_training_names_no_owner(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": _timeout_at(56693)})
    assert doc["owner"] == "unknown"
