"""Lines behind a node's name (pdsh, clush, talosctl) or mpirun's tag match as they do without it, and say who spoke."""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.collect.lineinfo import host_prefixes
from denpex.scan.engine import ReEngine, default_engine
from tests.helpers import diagnose_files, scan_incident

# DeepSpeed on ALCF Polaris (tests/corpus/holdout134): the pdsh runner prefixes the node's name.
POLARIS = "x3202c0s31b0n0: AssertionError: Micro batch size per gpu: 0 has to be greater than 0\n"

# A two-node DeepSpeed run: the launcher's own lines, then both nodes' output behind their names.
TWO_NODES = """[2024-03-01 10:00:00,000] [INFO] [runner.py:568:main] cmd = pdsh -S -f 1024 -w worker-0,worker-1
worker-0: [2024-03-01 10:00:05,100] [INFO] [launch.py:145:main] WORLD INFO DICT: {'worker-0': [0, 1], 'worker-1': [0, 1]}
worker-1: [2024-03-01 10:00:05,200] [INFO] [launch.py:145:main] WORLD INFO DICT: {'worker-0': [0, 1], 'worker-1': [0, 1]}
worker-0: [rank0]: step 1 loss 2.5
worker-1: [rank2]: step 1 loss 2.5
worker-1: [rank3]: Traceback (most recent call last):
worker-1: [rank3]:   File "/home/u/train.py", line 88, in <module>
worker-1: [rank3]:     loss = model(batch)
worker-1: [rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity of 79.10 GiB
worker-0: [rank0]: step 2 loss 2.4
"""


def test_a_python_exception_behind_a_node_name_is_found(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": POLARIS})
    assert doc["status"] == "failed"
    assert doc["owner"] == "user_code"
    assert doc["root_cause"]["evidence"][0]["text"] == POLARIS.strip()  # shown as written


def test_the_failing_node_and_its_rank_come_from_the_prefixes(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": TWO_NODES})
    assert doc["owner"] == "capacity"
    assert doc["initiating_rank"] == 3
    assert "worker-1" in doc["affected"]["hosts"]


def test_hosts_are_told_apart_from_log_levels_and_labels() -> None:
    assert host_prefixes(TWO_NODES) == ("worker-0", "worker-1")
    assert host_prefixes(POLARIS) == ("x3202c0s31b0n0",)
    plain = "INFO: start\nWARNING: slow\nerror: bad\n" * 5
    assert host_prefixes(plain) == ()
    slurm = "slurmstepd-gpu20-15: error: Detected 1 oom-kill event(s)\n" * 4
    assert host_prefixes(slurm) == ()
    srun = "0: step 1\n1: step 1\n0: step 2\n"
    assert host_prefixes(srun) == ()


def test_a_few_prefixed_lines_in_a_long_log_do_not_make_it_prefixed() -> None:
    text = "".join(f"step {i} loss 1.0\n" for i in range(100)) + "node-1: hello\n" * 3
    assert host_prefixes(text) == ()


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab1-.: \n[]xyz"), max_size=400))
def test_host_prefixes_only_names_prefixes_the_text_has(text: str) -> None:
    hosts = host_prefixes(text)
    lines = text.split("\n")
    for host in hosts:
        assert any(ln.startswith(host + ": ") for ln in lines)
        assert not host.isdigit()


def _prefixed_log(path: Path, seed: int = 11) -> None:
    """Four nodes' output behind their names, with tracebacks, floods and a failure in one node."""
    rng = random.Random(seed)
    out = ["[2024-03-01 10:00:00,000] [INFO] [runner.py:568:main] cmd = pdsh -w node-[1-4]"]
    for i in range(4000):
        node = f"node-{rng.randint(1, 4)}"
        kind = rng.random()
        if kind < 0.5:
            out.append(f"{node}: [rank{rng.randint(0, 31)}]: iteration {i:6d}/ 500000 | lm loss: 2.{i % 1000:03d}E+00 |")
        elif kind < 0.7:
            out.append(f"{node}: {node}:{1000 + i % 7}:{2000 + i % 7} [{i % 8}] NCCL INFO Using network IB")
        elif kind < 0.8:
            out.append(f"{node}: UserWarning: deprecated call {i}")
        else:
            out.append(f"{node}: [2024-03-01 10:{i // 60 % 60:02d}:{i % 60:02d},000] [INFO] step {i}")
        if i == 3000:
            out.append("node-3: [rank17]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
            out.append("node-3: RuntimeError: CUDA error: an illegal memory access was encountered")
    path.write_text("\n".join(out) + "\n")


def test_nvidia_smi_output_gathered_by_pdsh_is_read_as_nvidia_smi(catalog: Catalog, tmp_path: Path) -> None:
    # "pdsh -w node[1-2] nvidia-smi -q": each value line behind its node's name.
    # The value lines are matched only at a line's start ("^\s*Uncorrectable Error : N").
    text = "".join(f"node{n}:     Remapped Rows\nnode{n}:         Correctable Error         : 0\n"
                   f"node{n}:         Uncorrectable Error       : {v}\n" for n, v in ((1, 0), (2, 2)))
    doc = diagnose_files(catalog, tmp_path, {"nvidia-smi-q.txt": text})
    assert doc["root_cause"]["signature_id"] == "ecc.rows_remapped_uncorrectable"
    assert doc["root_cause"]["evidence"][0]["text"].startswith("node2:")


# Horovod under mpirun --tag-output: every line behind "[jobid,rank]<stream>:", no space after it.
HOROVOD = """[1,0]<stdout>:Epoch 1/10
[1,1]<stdout>:Epoch 1/10
[1,1]<stderr>:Traceback (most recent call last):
[1,1]<stderr>:  File "train.py", line 41, in <module>
[1,1]<stderr>:    probs = dataset_proba.sum()
[1,1]<stderr>:AttributeError: 'list' object has no attribute 'sum'
[1,0]<stderr>:[2024-05-02 10:00:00.000000: W horovod/common/stall_inspector.cc:107] One or more tensors were submitted to be reduced by a subset of ranks
"""


def test_a_python_exception_behind_mpiruns_tag_is_found_with_its_rank(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"horovod.log": HOROVOD})
    assert doc["root_cause"]["signature_id"] == "python.attribute_error"
    assert doc["root_cause"]["evidence"][0]["text"].startswith("[1,1]<stderr>:AttributeError")  # as written
    assert doc["root_cause"]["evidence"][0]["rank"] == 1


def _tagged_log(path: Path, seed: int = 5) -> None:
    """Sixteen ranks' tagged output (ranks of one and two digits), a failure in rank 12."""
    rng = random.Random(seed)
    out = []
    for i in range(4000):
        rank = rng.randint(0, 15)
        stream = "stdout" if rng.random() < 0.7 else "stderr"
        out.append(f"[1,{rank}]<{stream}>:step {i} loss 1.{i % 1000:03d}")
        if i == 2500:
            out.append("[1,12]<stderr>:torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
    path.write_text("\n".join(out) + "\n")


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize(("write", "shown"), [(_prefixed_log, "'node-3'"), (_tagged_log, "'[1,12]<stderr>:")],
                         ids=["host names", "mpirun tags"])
def test_engines_and_splits_agree_on_a_prefixed_source(catalog: Catalog, tmp_path: Path,
                                                       write: Callable[[Path], None], shown: str) -> None:
    log = tmp_path / "train.log"
    write(log)
    one = scan_incident(catalog, log, 1, ReEngine(catalog.signatures))
    assert one == scan_incident(catalog, log, 1, default_engine(catalog.signatures, "auto"))
    assert one == scan_incident(catalog, log, 2, default_engine(catalog.signatures, "auto"))
    assert '"owner": "capacity"' in one and shown in one
