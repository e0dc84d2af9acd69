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
