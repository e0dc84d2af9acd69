"""A warning names the cause of a later failure that names none; NaN progress lines recover nothing."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

XFORMERS_WARNING = "WARNING[XFORMERS]: xFormers can't load C++/CUDA extensions. xFormers was built for:\n"
NO_OPERATOR = "NotImplementedError: No operator found for `memory_efficient_attention_forward` with inputs:\n"


def test_warning_before_a_generic_error_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    # firefly#258 (tests/corpus/holdout27): xformers built for torch 2.3 on torch 2.1.
    doc = diagnose_files(catalog, tmp_path, {"train.log": XFORMERS_WARNING + "loading model\n" + NO_OPERATOR})
    assert doc["status"] == "failed"
    assert doc["owner"] == "framework"
    assert "xFormers can't load" in doc["root_cause"]["evidence"][0]["text"]
    assert "warning_names_cause" in {r["rule"] for r in doc["rules_fired"]}


def test_environment_report_in_another_untimed_file_explains_the_error(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": NO_OPERATOR, "xformers_info.txt": XFORMERS_WARNING})
    assert doc["owner"] == "framework"


def test_warning_alone_is_healthy(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": XFORMERS_WARNING + "step 1/10 done\n"})
    assert doc["status"] == "healthy"


def test_warning_after_the_error_explains_nothing(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": NO_OPERATOR + XFORMERS_WARNING})
    assert doc["root_cause"]["signature_id"] == "torch.xformers_no_operator"
    assert "warning_names_cause" not in {r["rule"] for r in doc["rules_fired"]}


def test_warning_of_one_rank_explains_a_launcher_summary_with_no_rank(catalog: Catalog, tmp_path: Path) -> None:
    # Chinese-LLaMA-Alpaca#534 (tests/corpus/holdout80): the fp16 loss scale halved to single
    # digits on rank 0, then torchrun's ChildFailedError.
    text = ("[2023-06-07 22:24:46,260] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 "
            "Skipping step. Attempted loss scale: 4, reducing to 2\n"
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n")
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["owner"] == "user_code"
    assert doc["root_cause"]["signature_id"] == "deepspeed.loss_scale_near_minimum"


def test_a_low_loss_scale_in_a_run_that_goes_on_is_healthy(catalog: Catalog, tmp_path: Path) -> None:
    text = ("[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: 4, reducing to 2\n"
            + "".join(f"{{'loss': 2.0{i}, 'learning_rate': 0.0002, 'epoch': 0.{i}}}\n" for i in range(1, 5)))
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["status"] == "healthy"


def test_a_caught_oom_names_the_cause_of_a_cut_traceback(catalog: Catalog, tmp_path: Path) -> None:
    # sd_dreambooth_extension#852 (tests/corpus/holdout80): the batch-halving retries ran out.
    text = ("OOM Detected, reducing batch/grad size to 12/1.\nTraceback (most recent call last):\n"
            '  File "E:\\sd\\venv\\lib\\site-packages\\torch\\nn\\modules\\module.py", line 1194, in _call_impl\n'
            "    return forward_call(*input, **kwargs)\n")
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["owner"] == "capacity"


def test_nan_loss_lines_that_are_progress_do_not_recover_each_other(catalog: Catalog, tmp_path: Path) -> None:
    lines = [f"{{'loss': nan, 'learning_rate': 2e-05, 'epoch': {e / 10}}}" for e in range(1, 6)]
    doc = diagnose_files(catalog, tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert doc["status"] == "failed"
    assert doc["owner"] == "user_code"


def test_one_nan_then_finite_progress_recovers(catalog: Catalog, tmp_path: Path) -> None:
    lines = ["{'loss': nan, 'learning_rate': 2e-05, 'epoch': 0.1}"]
    lines += [f"{{'loss': 0.{e}5, 'learning_rate': 2e-05, 'epoch': 0.{e}}}" for e in range(2, 6)]
    doc = diagnose_files(catalog, tmp_path, {"train.log": "\n".join(lines) + "\n"})
    assert doc["status"] == "healthy"


def test_unprefixed_warning_explains_every_ranks_timeout(catalog: Catalog, tmp_path: Path) -> None:
    # DeepSpeed PR 5008 (tests/corpus/holdout14): ZeRO-3 trace invalidated, then ALLGATHER timeouts.
    text = ("  3%|▎         | 270/9847 [05:50<3:17:42,  1.24s/it]Invalidate trace cache @ step 1: expected module 25, "
            "but got module 323\n"
            + "".join(f"[E ProcessGroupNCCL.cpp:467] [Rank {r}] Watchdog caught collective operation timeout: "
                      f"WorkNCCL(SeqNum=211067, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1800127 "
                      f"milliseconds before timing out.\n" for r in (1, 7, 2)))
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["owner"] == "framework"
    assert "Invalidate trace cache" in doc["root_cause"]["evidence"][0]["text"]


ARCH_WARNING = ("UserWarning: \nTesla T4 with CUDA capability sm_75 is not compatible with the current PyTorch installation.\n"
                "The current PyTorch install supports CUDA capabilities sm_35 sm_52 sm_60 sm_61 sm_70{ptx}.\n")


def test_arch_warning_with_ptx_of_the_same_generation_is_harmless(catalog: Catalog, tmp_path: Path) -> None:
    # SageMaker DLC on a T4 (tests/corpus/holdout36): compute_70 PTX is compiled for sm_75 and the job finishes.
    doc = diagnose_files(catalog, tmp_path, {"train.log": ARCH_WARNING.format(ptx=" compute_70") + "epoch 1 done\n"})
    assert doc["status"] == "healthy"


def test_arch_warning_without_ptx_is_the_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": ARCH_WARNING.format(ptx="")})
    assert doc["status"] == "failed"
    assert doc["owner"] == "driver"


SM86_WARNING = ("UserWarning: NVIDIA RTX A6000 with CUDA capability sm_86 is not compatible with the current "
                "PyTorch installation.\n")
NO_KERNEL = "RuntimeError: CUDA error: no kernel image is available for execution on the device\n"


def test_no_kernel_image_alone_is_the_packages_to_fix(catalog: Catalog, tmp_path: Path) -> None:
    # sglang#5338 (holdout107): sgl-kernel's wheel had no Blackwell code; nothing else is said.
    doc = diagnose_files(catalog, tmp_path, {"serve.log": NO_KERNEL})
    assert doc["owner"] == "framework"


def test_pytorch_arch_warning_gives_no_kernel_image_its_owner_and_keeps_the_error_as_root(
        catalog: Catalog, tmp_path: Path) -> None:
    # eva#56 (tests/corpus/holdout5): a PyTorch wheel without sm_86 warns, then the first kernel fails.
    doc = diagnose_files(catalog, tmp_path, {"train.log": SM86_WARNING + "loading model\n" + NO_KERNEL})
    assert doc["owner"] == "driver"
    assert "no kernel image" in doc["root_cause"]["evidence"][0]["text"]
    assert "warning_names_owner" in {r["rule"] for r in doc["rules_fired"]}


def test_no_warning_explains_an_interrupt(catalog: Catalog, tmp_path: Path) -> None:
    # A ZeRO-3 run stopped with Ctrl-C (tests/corpus/holdout210): DeepSpeed's trace-cache warning
    # earlier in the output is not why it stopped.
    text = ("Invalidate trace cache @ step 56836: expected module 842, but got module 422\n"
            "{'loss': 1.25, 'learning_rate': 1e-05, 'epoch': 0.5}\n"
            "Traceback (most recent call last):\n"
            "KeyboardInterrupt\n")
    doc = diagnose_files(catalog, tmp_path, {"output.log": text})
    assert doc["root_cause"]["signature_id"] == "python.keyboard_interrupt"
    assert doc["owner"] == "user_code"
    assert "warning_names_cause" not in {r["rule"] for r in doc["rules_fired"]}
