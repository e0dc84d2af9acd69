"""The raising frame of a traceback, and the owner it gives a generic exception."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.scan.frames import owner_of_frame, raising_frame
from tests.helpers import diagnose_files

# openrlhf#312 (tests/corpus/holdout33): DeepSpeed's own check fails inside the library.
LIBRARY_RAISES = """\
Traceback (most recent call last):
  File "/root/train_ppo.py", line 88, in <module>
    trainer.fit()
  File "/root/miniconda3/envs/open/lib/python3.11/site-packages/deepspeed/runtime/zero/partitioned_param_coordinator.py", line 194, in record_parameters
    raise RuntimeError(f"still have inflight params {[p.ds_summary() for p in self.__inflight_param_registry.keys()]}")
RuntimeError: still have inflight params [{'id': 3, 'status': 'AVAILABLE'}]
"""

# A job's own script raises; the stdlib frame below it is passed over.
OWN_CODE_RAISES = """\
[rank5]: Traceback (most recent call last):
[rank5]:   File "/home/u/ms-swift/swift/llm/template/base.py", line 512, in encode
[rank5]:     raise MaxLengthError(f'Current length of row({length}) is larger than the max_length({self.max_length}).')
[rank5]: swift.llm.template.base.MaxLengthError: Current length of row(7756) is larger than the max_length(4096).
"""


def _ls(text: str, needle: str) -> tuple[bytes, int]:
    data = text.encode()
    return data, data.index(needle.encode())


def test_the_last_frame_above_the_exception_is_where_it_was_raised() -> None:
    data, ls = _ls(LIBRARY_RAISES, "RuntimeError: still")
    assert raising_frame(data, ls) is not None
    assert "site-packages/deepspeed" in (raising_frame(data, ls) or "")


def test_frames_of_pythons_standard_library_are_passed_over() -> None:
    text = ('  File "/home/u/fetch.py", line 9, in get\n    socket.create_connection(addr)\n'
            '  File "/usr/lib/python3.10/socket.py", line 845, in create_connection\n    raise err\n'
            "ConnectionRefusedError: [Errno 111] Connection refused\n")
    data, ls = _ls(text, "ConnectionRefusedError")
    assert raising_frame(data, ls) == "/home/u/fetch.py"


def test_no_frame_past_a_blank_line_or_the_traceback_header() -> None:
    data, ls = _ls('  File "/a/b.py", line 1, in f\n\nRuntimeError: boom\n', "RuntimeError")
    assert raising_frame(data, ls) is None
    data, ls = _ls("Traceback (most recent call last):\nRuntimeError: boom\n", "RuntimeError")
    assert raising_frame(data, ls) is None


def test_installed_libraries_are_the_frameworks_and_other_files_the_users() -> None:
    assert owner_of_frame("/opt/conda/lib/python3.10/site-packages/torch/nn/functional.py") == "framework"
    assert owner_of_frame("C:\\envs\\x\\Lib\\site-packages\\torch\\serialization.py") == "framework"
    assert owner_of_frame("/usr/lib/python3/dist-packages/yaml/__init__.py") == "framework"
    assert owner_of_frame("/content/yolov5/utils/dataloaders.py") == "user_code"


@given(st.binary(max_size=400), st.integers(min_value=0, max_value=400))
def test_any_bytes_give_a_path_or_nothing(data: bytes, at: int) -> None:
    got = raising_frame(data, min(at, len(data)))
    assert got is None or isinstance(got, str)


def test_a_generic_error_raised_in_a_library_is_the_frameworks(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": LIBRARY_RAISES})
    assert doc["owner"] == "framework"
    assert any(r["rule"] == "raising_frame" for r in doc["rules_fired"])


def test_a_generic_error_raised_in_the_jobs_own_code_is_the_users(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"rank5.log": OWN_CODE_RAISES})
    assert doc["owner"] == "user_code"


def test_an_error_with_its_own_owner_keeps_it(catalog: Catalog, tmp_path: Path) -> None:
    text = LIBRARY_RAISES.replace("RuntimeError: still have inflight params [{'id': 3, 'status': 'AVAILABLE'}]",
                                  "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["owner"] == "capacity"


def test_masked_paths_keep_what_the_owner_rests_on() -> None:
    # --identity masking keeps the site-packages and lib/pythonX.Y tails (minimize/detectors.py).
    assert owner_of_frame("<path:1a5565ad>/site-packages/torch/nn/functional.py") == "framework"
    text = ('  File "<path:77aa01>/train.py", line 9, in main\n    fetch()\n'
            '  File "<path:1a5565ad>/lib/python3.10/socket.py", line 845, in create_connection\n    raise err\n'
            "OSError: [Errno 101] Network is unreachable\n")
    data, ls = _ls(text, "OSError")
    assert raising_frame(data, ls) == "<path:77aa01>/train.py"


def test_the_text_report_says_why_the_owner_is_not_the_signatures(catalog: Catalog, tmp_path: Path) -> None:
    from denpex.report.text import render_text

    # The same RuntimeError raised by the job's own script: owner framework -> user_code, and why.
    own = LIBRARY_RAISES.replace("/root/miniconda3/envs/open/lib/python3.11/site-packages/deepspeed/runtime/zero/"
                                 "partitioned_param_coordinator.py", "/root/train_ppo.py")
    doc = diagnose_files(catalog, tmp_path, {"train.log": own})
    assert doc["owner"] == "user_code"
    assert "owner: the exception was raised in the job's own code" in render_text(doc)


def test_an_error_raised_in_an_engines_source_checkout_is_the_engines(catalog: Catalog, tmp_path: Path) -> None:
    # The frame is not under site-packages, but it is SGLang's own package in a source checkout:
    # the frame rule gives it to the framework before the packaged-engine rule would.
    text = ("Traceback (most recent call last):\n"
            '  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 1788, in run_batch\n'
            "    raise RuntimeError(f'seqlens_k must have shape (batch_size)')\n"
            "RuntimeError: seqlens_k must have shape (batch_size)\n")
    doc = diagnose_files(catalog, tmp_path, {"server.log": text})
    assert doc["owner"] == "framework"
    assert [r["rule"] for r in doc["rules_fired"] if r["rule"] in ("raising_frame", "inside_packaged_engine")] == [
        "raising_frame"]


def test_a_not_implemented_error_is_the_frameworks_unless_the_jobs_code_raised_it(catalog: Catalog,
                                                                                  tmp_path: Path) -> None:
    # torchtitan#441 (tests/corpus/holdout78): no frame above it, the class's default stands.
    bare = "NotImplementedError: 2D state_dict is under development.\n"
    assert diagnose_files(catalog, tmp_path, {"train.log": bare})["owner"] == "framework"
    own = ("Traceback (most recent call last):\n"
           '  File "/home/me/project/models/my_model.py", line 12, in forward\n'
           "    raise NotImplementedError\n"
           "NotImplementedError\n")
    doc = diagnose_files(catalog, tmp_path / "own", {"train.log": own})
    assert doc["owner"] == "user_code"
    assert any(r["rule"] == "raising_frame" for r in doc["rules_fired"])


def test_a_frameworks_package_in_a_source_checkout_is_the_frameworks() -> None:
    # tests/corpus/holdout90: Megatron-Core in a container's /opt/megatron-lm, not site-packages.
    assert owner_of_frame("/opt/megatron-lm/megatron/core/dist_checkpointing/validation.py") == "framework"
    assert owner_of_frame("/workspace/pypacks/accelerate/state.py") == "user_code"  # glue: left to site-packages
    assert owner_of_frame("/home/me/torch_experiments/train.py") == "user_code"


def test_attribute_error_raised_inside_a_library_is_the_librarys(catalog: Catalog, tmp_path: Path) -> None:
    # DeepSpeed#7833 (tests/corpus/holdout125): DeepSpeed calls an API its installed peer lacks.
    text = ("Traceback (most recent call last):\n"
            '  File "/opt/venv/lib/python3.12/site-packages/deepspeed/runtime/engine.py", line 1204, in _configure\n'
            "    mpu.get_model_parallel_rank()\n"
            "AttributeError: 'NoneType' object has no attribute 'get_model_parallel_rank'\n")
    assert diagnose_files(catalog, tmp_path, {"train.log": text})["owner"] == "framework"
    own = text.replace("/opt/venv/lib/python3.12/site-packages/deepspeed/runtime/engine.py", "/home/u/train.py")
    assert diagnose_files(catalog, tmp_path / "own", {"train.log": own})["owner"] == "user_code"


def test_native_frames_of_pytorchs_stack_dump_are_nobodys_file() -> None:
    # Megatron-Bridge checkpoint save (tests/corpus/holdout221): c10 writes C++ frames as
    # 'File "<unknown>", line 0'; they must not make the exception the job's own code.
    text = (' 93: !!!!!!! Segfault encountered !!!!!!!\n'
            ' 93:   File "<unknown>", line 0, in crc32_16bytes(void const*, unsigned long, unsigned int)\n'
            ' 93:   File "<unknown>", line 0, in mz_crc32\n')
    data, ls = _ls(text, 'File "<unknown>", line 0, in mz_crc32')
    assert raising_frame(data, ls) is None
