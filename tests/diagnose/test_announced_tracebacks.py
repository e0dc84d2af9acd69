"""Lines that announce what follows them: survivable tracebacks, and the C++ message under 'terminate called'."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

# stable-diffusion-webui-forge#1139 (tests/corpus/holdout49): xFormers probes for Triton on Windows.
XFORMERS_PROBE = """\
WARNING:xformers:A matching Triton is not available, some optimizations will not be enabled
Traceback (most recent call last):
  File "C:\\webui\\system\\python\\lib\\site-packages\\xformers\\__init__.py", line 57, in _is_triton_available
    import triton  # noqa
ModuleNotFoundError: No module named 'triton'
xformers version: 0.0.27
"""

# DeepSpeed#5723 (tests/corpus/holdout49): the extension failed to load; its destructor's traceback echoes it.
CPU_ADAM = """\
[rank1]: ImportError: /home/nlp/.cache/torch_extensions/py310_cu121/cpu_adam/cpu_adam.so: cannot open shared object file: No such file or directory
Exception ignored in: <function DeepSpeedCPUAdam.__del__ at 0x77ba6e033640>
Traceback (most recent call last):
  File "/opt/conda/lib/python3.10/site-packages/deepspeed/ops/adam/cpu_adam.py", line 102, in __del__
    self.ds_opt_adam.destroy_adam(self.opt_id)
AttributeError: 'DeepSpeedCPUAdam' object has no attribute 'ds_opt_adam'
"""

# ms-swift#5297 (tests/corpus/holdout47): an allocator error at exit.
TERMINATE = """\
terminate called after throwing an instance of 'c10::Error'
  what():  Trying to free a pointer not allocated here
Exception raised from raw_delete at /pytorch/torch/csrc/cuda/CUDAPluggableAllocator.cpp:151 (most recent call first):
"""


def test_a_warning_logged_with_its_traceback_is_not_a_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"console.log": XFORMERS_PROBE})
    assert doc["status"] == "healthy"


def test_the_same_import_error_alone_is_a_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"console.log": "ModuleNotFoundError: No module named 'triton'\n"})
    assert doc["status"] == "failed"


def test_an_exception_python_ignored_does_not_hide_the_error_before_it(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": CPU_ADAM})
    assert "cpu_adam.so: cannot open shared object file" in doc["root_cause"]["evidence"][0]["text"]


def test_an_ignored_exception_far_below_is_not_cleared(catalog: Catalog, tmp_path: Path) -> None:
    filler = "".join(f"step {i} loss 1.0\n" for i in range(30))
    text = "Exception ignored in: <function Foo.__del__ at 0x1>\n" + filler + "KeyError: 'weight'\n"
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["status"] == "failed"


def test_the_what_line_under_terminate_is_the_root(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": TERMINATE})
    assert doc["root_cause"]["evidence"][0]["text"].strip() == "what():  Trying to free a pointer not allocated here"


def test_bad_alloc_is_host_memory(catalog: Catalog, tmp_path: Path) -> None:
    # A Jupyter kernel running MXNet (tests/corpus/holdout8): the allocation failure is the whole story.
    text = "terminate called after throwing an instance of 'std::bad_alloc'\n  what():  std::bad_alloc\n"
    doc = diagnose_files(catalog, tmp_path, {"jupyter-server.log": text})
    assert doc["owner"] == "capacity"
    assert doc["root_cause"]["evidence"][0]["text"].startswith("terminate called")


# PyTorch forums #187207 (tests/corpus/holdout54): FSDP all-gather timed out on both ranks.
WATCHDOG_ABORT = """\
[E ProcessGroupNCCL.cpp:828] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=388923, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1804615 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:828] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=388923, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1804360 milliseconds before timing out.
terminate called after throwing an instance of 'std::runtime_error'
  what():  [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=388923, OpType=_ALLGATHER_BASE, Timeout(ms)=1800000) ran for 1804360 milliseconds before timing out.
Fatal Python error: Aborted
"""


def test_the_interpreter_abort_is_not_the_root_of_what_it_echoes(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": WATCHDOG_ABORT})
    assert doc["root_cause"]["signature_id"] != "python.fatal_error_aborted"
    assert "Watchdog caught collective operation timeout" in doc["root_cause"]["evidence"][0]["text"]


def test_a_generic_exception_yields_to_the_specific_failure_on_its_line(catalog: Catalog, tmp_path: Path) -> None:
    # NeMo#833 (tests/corpus/holdout): PyTorch wraps NCCL's result in a RuntimeError.
    text = ("RuntimeError: NCCL error in: ../torch/lib/c10d/ProcessGroupNCCL.cpp:535, unhandled system error, "
            "NCCL version 2.7.5\n")
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    assert doc["root_cause"]["signature_id"].startswith("nccl.")
    assert doc["owner"] == "unknown"


def test_a_bare_runtime_error_is_the_librarys_to_look_at(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": "RuntimeError: view size is not compatible with input\n"})
    assert doc["owner"] == "framework"
