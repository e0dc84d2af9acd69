from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from denpex.collect.lineinfo import looks_srun_labelled, normalize_pci, parse_line_info

CASES = [
    ("torchrun", "[rank3]:[E ProcessGroupNCCL.cpp:563] [Rank 3] Watchdog", {"rank": 3}),
    ("torchrun tee", "[default5]:RuntimeError: boom", {"rank": 5}),
    ("mpirun", "[1,5]<stderr>:RuntimeError: x", {"rank": 5}),
    ("srun", "3: Traceback (most recent call last):", {"rank": 3}),
    ("nccl", "node01:1234:5678 [3] NCCL INFO comm 0x55 rank 3", {"host": "node01", "pid": 1234, "gpu_index": 3}),
    ("xid", "NVRM: Xid (PCI:0000:3b:00): 79, pid=1", {"pci_bus_id": "0000:3b:00.0"}),
    ("journal host", "2024-05-01T12:00:00+0000 gpu02 kernel: NVRM: Xid (PCI:0000:3b:00): 79", {"host": "gpu02"}),
    ("c10d", "[PG 0 (default_pg) Rank 7] Watchdog caught", {"rank": 7}),
    ("uuid", "GPU-6f2a9c3e-8d1b-4c7a-9e02-3b5d7f1a0c44 lost", {"uuid": "GPU-6f2a9c3e-8d1b-4c7a-9e02-3b5d7f1a0c44"}),
]


@pytest.mark.parametrize(("name", "line", "want"), CASES)
def test_parse_line_info(name: str, line: str, want: dict[str, object]) -> None:
    info = parse_line_info(line, srun_labels=True)
    for k, v in want.items():
        assert getattr(info, k) == v, (name, k)


@pytest.mark.parametrize(("raw", "norm"), [("3b000", "0000:3b:00.0"), ("0000:3b:00", "0000:3b:00.0"),
                                           ("00000000:3B:00.0", "0000:3b:00.0")])
def test_normalize_pci(raw: str, norm: str) -> None:
    assert normalize_pci(raw) == norm


@given(st.text(max_size=300), st.booleans())
def test_parse_line_info_never_raises(line: str, srun: bool) -> None:
    parse_line_info(line, srun)


def test_two_line_srun_excerpt_is_labelled() -> None:
    # E3SM on Perlmutter (tests/corpus/holdout11): rank 2047's two lines, both "2047: ".
    lines = ["2047: cudaSetDevice(cuda_device_id) error( cudaErrorDevicesUnavailable): CUDA-capable device(s) is/are busy",
             "2047: MPICH ERROR [Rank 2047] [job id 57638547.0] - Abort(1) (rank 2047 in comm 432)"]
    assert looks_srun_labelled(lines)
    assert not looks_srun_labelled([lines[0], "Traceback (most recent call last):"])
    assert not looks_srun_labelled(lines[:1])
