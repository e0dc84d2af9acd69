"""Code faults inside a packaged inference engine are the engine's; the same fault in a script is the user's."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

ASSERT = ("/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:92: operator(): block: [0,0,0], thread: [0,0,0] "
          "Assertion `-sizes[i] <= index && index < sizes[i] && \"index out of bounds\"` failed.\n"
          "RuntimeError: CUDA error: device-side assert triggered\n")
SGLANG_FRAME = '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1788, in run_batch\n'


def test_device_assert_inside_sglang_is_the_framework(catalog: Catalog, tmp_path: Path) -> None:
    # sglang#271 (tests/corpus/holdout15): over-long prompts hit an index assert in the server.
    doc = diagnose_files(catalog, tmp_path, {"server.log": SGLANG_FRAME + ASSERT})
    assert doc["owner"] == "framework"
    assert "inside_packaged_engine" in {r["rule"] for r in doc["rules_fired"]}


def test_device_assert_in_a_training_script_is_the_user(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": '  File "train.py", line 88, in step\n' + ASSERT})
    assert doc["owner"] == "user_code"


def test_value_error_naming_a_setting_stays_with_the_user(catalog: Catalog, tmp_path: Path) -> None:
    # TGI#1354 (tests/corpus/holdout5): 71 heads cannot be sharded over 2 GPUs.
    text = ("2024-01-12T10:00:01.123Z ERROR text_generation_launcher: Error when initializing model\n"
            "ValueError: `num_heads` must be divisible by `num_shards` (got `num_heads`: 71 and `num_shards`: 2)\n")
    doc = diagnose_files(catalog, tmp_path, {"tgi.log": text})
    assert doc["owner"] == "user_code"


VLLM_REJECTED = ("ERROR 07-12 09:46:12 [serving_chat.py:222] ValueError: This model's maximum context length is 8192 "
                 "tokens. However, you requested 8205 tokens. Please reduce the length of the messages or completion.\n"
                 'INFO:     127.0.0.1:46346 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request\n')
SERVED = 'INFO:     127.0.0.1:46350 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'


def test_server_that_keeps_answering_after_a_rejected_request_is_healthy(catalog: Catalog, tmp_path: Path) -> None:
    # tests/corpus/holdout28 healthy vLLM server: 400s for over-long prompts, then 200s.
    doc = diagnose_files(catalog, tmp_path, {"server.log": VLLM_REJECTED + SERVED * 3})
    assert doc["status"] == "healthy"


def test_worker_prefixed_exception_inside_vllm_is_the_framework(catalog: Catalog, tmp_path: Path) -> None:
    # vllm#31173 (tests/corpus/holdout33): an AttributeError in a TP worker, then the engine dies.
    text = ("(Worker_TP1_EP1 pid=1533438) ERROR 12-22 10:52:18 [multiproc_executor.py:824] AttributeError: "
            "'CutlassMLAImpl' object has no attribute '_workspace_buffer'\n"
            "(EngineCore_DP0 pid=1533143) ERROR 12-22 10:52:18 [core.py:870] EngineCore encountered a fatal error.\n")
    doc = diagnose_files(catalog, tmp_path, {"server.log": text})
    assert doc["owner"] == "framework"
    assert "AttributeError" in doc["root_cause"]["evidence"][0]["text"]


RAY_SEGV = ("(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=233, ip=10.20.1.125) *** SIGSEGV received at "
            "time=1762945937 on cpu 6 ***\n"
            "(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=233, ip=10.20.1.125) Fatal Python error: Segmentation fault\n")
VLLM_LINE = "(APIServer pid=445) INFO 11-12 11:11:32 [utils.py:243] vLLM API server version 0.11.0\n"


def test_native_crash_in_a_vllm_ray_worker_is_the_engines(catalog: Catalog, tmp_path: Path) -> None:
    # ROCm#5656 (tests/corpus/holdout114): an AITER kernel segfaults in vLLM's Ray worker on rank 1.
    doc = diagnose_files(catalog, tmp_path, {"serve.log": VLLM_LINE + RAY_SEGV})
    assert doc["status"] == "failed"
    assert doc["root_cause"]["signature_id"] == "python.fatal_error"
    assert doc["owner"] == "framework"


def test_native_crash_in_a_script_names_no_owner(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": "Fatal Python error: Segmentation fault\n"})
    assert doc["owner"] == "unknown"
