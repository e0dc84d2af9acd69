"""Which line and rank a failure is pinned on: announcing lines yield to their detail; job-wide errors name no rank."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

# ludwig#3365 (tests/corpus/holdout42): a nightly torch.compile needed a test-only package.
ANNOUNCE = ("FAILED tests/integration_tests/test_trainer.py::test_compile - torch._dynamo.exc.BackendCompilerFailed: "
            "backend='debug_wrapper' raised:\n")
DETAIL = "ModuleNotFoundError: No module named 'expecttest'\n"


def test_the_exception_under_backend_compiler_failed_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"pytest.log": ANNOUNCE + DETAIL})
    assert "No module named 'expecttest'" in doc["root_cause"]["evidence"][0]["text"]
    assert "detail_follows" in {r["rule"] for r in doc["rules_fired"]}


def test_an_announcing_line_with_nothing_failing_below_stays_the_root(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"pytest.log": ANNOUNCE + "collected 12 items\n"})
    assert "BackendCompilerFailed" in doc["root_cause"]["evidence"][0]["text"]
    assert "detail_follows" not in {r["rule"] for r in doc["rules_fired"]}


def test_a_failure_far_below_is_not_the_detail(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"pytest.log": ANNOUNCE + "a\nb\nc\n" + DETAIL})
    assert "detail_follows" not in {r["rule"] for r in doc["rules_fired"]}


def test_a_configuration_error_names_no_initiating_rank(catalog: Catalog, tmp_path: Path) -> None:
    # NeMo#11480 (tests/corpus/holdout14): every rank would raise it; rank 0 only printed first.
    line = "[rank0]: RuntimeError: world_size (1) is not divisible by 2\n"
    doc = diagnose_files(catalog, tmp_path, {"train.log": line})
    assert doc["owner"] == "user_code"
    assert doc["initiating_rank"] is None


def test_a_single_process_run_names_no_initiating_rank(catalog: Catalog, tmp_path: Path) -> None:
    # accelerate#3386 (tests/corpus/holdout113): one GPU under accelerate launch prints "[rank0]:".
    text = "[rank0]: Traceback (most recent call last):\n[rank0]: IndexError: pop from an empty deque\n"
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["status"] == "failed"
    assert doc["initiating_rank"] is None


def test_rank_zero_among_several_ranks_is_named(catalog: Catalog, tmp_path: Path) -> None:
    text = ("[rank1]: step 10 loss 1.0\n"
            "[rank0]: Traceback (most recent call last):\n[rank0]: IndexError: pop from an empty deque\n")
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["initiating_rank"] == 0


# OLMo's committed test run (tests/corpus/holdout144): one worker, its YAML config broken.
ONE_WORKER = ("2025-05-21 17:50:36.632\tdevbox:0\tolmo.util:168\tCRITICAL\tUncaught ScannerError: while scanning for the next token\n"
              "[2025-05-21 17:50:38,724] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
              "local_rank: 0 (pid: 4703) of binary: /usr/local/bin/python\n")


def test_the_only_worker_of_torchrun_is_not_named_as_the_initiating_rank(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"stderr.log": ONE_WORKER})
    assert doc["owner"] == "user_code"
    assert doc["initiating_rank"] is None


# Worker 0 of several killed by the host's OOM killer, with only the agent's record of it left:
# ColossalAI Gemini (tests/corpus/holdout108) shows a launch command with two workers, x-flux
# (tests/corpus/holdout) the agent stopping pid 3788 after pid 3787 (local rank 0) died.
SEVERAL_WORKERS = {
    "launch_command": ("+ torchrun --standalone --nproc_per_node=2 ./train_gpt_demo.py --tp_degree=1\n"
                       "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -9) local_rank: 0 "
                       "(pid: 2410412) of binary: /data/envs/cai/bin/python\n"),
    "closing_signal": ("W0902 00:42:50.212000 1333 torch/distributed/elastic/multiprocessing/api.py:858] Sending "
                       "process 3788 closing signal SIGTERM\n"
                       "E0902 00:42:54.953000 1333 torch/distributed/elastic/multiprocessing/api.py:833] failed "
                       "(exitcode: -9) local_rank: 0 (pid: 3787) of binary: /envs/x-flux/bin/python\n"),
}


@pytest.mark.parametrize("evidence", sorted(SEVERAL_WORKERS))
def test_evidence_of_other_workers_makes_local_rank_zero_worth_naming(catalog: Catalog, tmp_path: Path,
                                                                     evidence: str) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": SEVERAL_WORKERS[evidence]})
    assert doc["initiating_rank"] == 0


def test_a_cancel_after_an_error_points_at_the_error(catalog: Catalog, tmp_path: Path) -> None:
    # OpenFold under Slurm (tests/corpus/holdout166): the attention kernel was built without CUDA;
    # srun cancelled the step after the ranks raised.
    text = ('  File "/home/u/openfold/openfold/utils/kernel/attention_core.py", line 48, in forward\n'
            "RuntimeError: attn_softmax_inplace_forward_ not implemented on CPU\n"
            "slurmstepd: error: *** STEP 7031220.0 ON stxcompute184 CANCELLED AT 2023-04-11T15:54:43 ***\n")
    doc = diagnose_files(catalog, tmp_path, {"slurm.out": text})
    assert "not implemented on CPU" in doc["root_cause"]["evidence"][0]["text"]
    assert "reaction_follows_error" in {r["rule"] for r in doc["rules_fired"]}


def test_a_cancel_alone_stays_the_root(catalog: Catalog, tmp_path: Path) -> None:
    text = "step 10 loss 1.0\nslurmstepd: error: *** JOB 5930 ON gpuh11 CANCELLED AT 2025-12-22T15:50:04 ***\n"
    doc = diagnose_files(catalog, tmp_path, {"slurm.out": text})
    assert doc["owner"] == "scheduler"


def test_a_workers_exit_status_one_points_at_the_exception_before_it(catalog: Catalog, tmp_path: Path) -> None:
    # AlgoPerf Muon submission (tests/corpus/holdout172): the optimizer's own RuntimeError on
    # every rank, then torchrun's report that local rank 0 exited with status 1.
    text = ('[rank1]:   File "/work/submissions/muon_torch/muon.py", line 43, in zeropower_via_newtonschulz5\n'
            '[rank1]:     raise RuntimeError(f"Expected 2D tensor in N-S, found {G.ndim} instead.")\n'
            "[rank1]: RuntimeError: Expected 2D tensor in N-S, found 3 instead.\n"
            "E0521 19:14:05.670000 9 site-packages/torch/distributed/elastic/multiprocessing/api.py:882] failed "
            "(exitcode: 1) local_rank: 0 (pid: 77) of binary: /usr/bin/python\n")
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert "Expected 2D tensor" in doc["root_cause"]["evidence"][0]["text"]
    assert doc["owner"] == "user_code"
    assert "exception_behind_exit" in {r["rule"] for r in doc["rules_fired"]}


# mlcommons/training#770 (tests/corpus/holdout206): on one 8-GPU node, local rank 5 died of a
# double free (SIGABRT) and only torchrun's record of it is left; the others closed after it.
ABORTED_WORKER = ("nb-e3p9s3o28rnk-0:21615:21978 [32626] NCCL INFO [Service thread] Connection closed by localRank 2\n"
                  "nb-e3p9s3o28rnk-0:21612:22750 [32736] NCCL INFO [Service thread] Connection closed by localRank 4\n"
                  "[2024-11-14 06:04:09,095] torch.distributed.elastic.multiprocessing.api: [ERROR] failed "
                  "(exitcode: -6) local_rank: 5 (pid: 21617) of binary: /opt/conda/bin/python\n")


def test_on_one_node_the_first_aborted_worker_is_the_lead(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"console.txt": ABORTED_WORKER})
    assert doc["initiating_rank"] == 5


def test_an_aborted_worker_after_a_ranks_own_timeout_is_not_the_lead(catalog: Catalog, tmp_path: Path) -> None:
    timeout = ("[rank2]:[E1114 06:04:01.000000000 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective "
               "operation timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) "
               "ran for 600010 milliseconds before timing out.\n")
    doc = diagnose_files(catalog, tmp_path, {"console.txt": timeout + ABORTED_WORKER})
    assert doc["initiating_rank"] != 5


def test_exit_code_one_yields_to_the_exception_a_specific_signature_read(catalog: Catalog, tmp_path: Path) -> None:
    # pytorch#131781 (tests/corpus/holdout206): rank 15 could not fetch rank 0's NCCL id.
    rank15 = ("[rank15]: torch.distributed.DistBackendError: [15] is setting up NCCL communicator and retrieving "
              "ncclUniqueId from [0] via c10d key-value store by key '0', but store->get('0') got error: "
              "Connection reset by peer\n")
    agent = ("E0801 04:55:29.559000 140238513375040 torch/distributed/elastic/multiprocessing/api.py:833] failed "
             "(exitcode: 1) local_rank: 6 (pid: 28553) of binary: /home/joe/micromamba/bin/python3.10\n")
    doc = diagnose_files(catalog, tmp_path, {"rank15.txt": rank15, "agent.txt": agent})
    assert "ncclUniqueId" in doc["root_cause"]["evidence"][0]["text"]
    assert "exception_behind_exit" in {r["rule"] for r in doc["rules_fired"]}
