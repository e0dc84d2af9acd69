from __future__ import annotations

import pytest
from hypothesis import given, settings
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


_NOISE = ["", " ", "x", "\u00a0", "é", ":", "a:", "\t", "12:", "_", "-", ".", "g", "[", "]", "0"]
_NCCL_LINE = st.tuples(st.sampled_from(_NOISE), st.sampled_from(_NOISE),
                       st.sampled_from(["node01", "gpu-a016", "h.x", "_n", "é1", "1a", "", "a:b", "a b"]),
                       st.sampled_from(["12", "433246", "x", "\u0663"]), st.sampled_from(["5", "99", ""]),
                       st.sampled_from(["1", "12", "x"]), st.sampled_from(["", "init.cc:42 ", "(tid) ", "a.cc:1 (t) "]),
                       st.sampled_from(["NCCL ", "NCCL", "nccl "]), st.sampled_from(_NOISE)).map(
    lambda t: f"{t[0]}{t[1]}{t[2]}:{t[3]}:{t[4]} [{t[5]}] {t[6]}{t[7]}{t[8]}")
_PCI_TEXT = st.tuples(st.sampled_from(_NOISE), st.sampled_from(["", "0000", "00000000", "000000000", "abc", "g0000"]),
                      st.sampled_from([":", ""]), st.sampled_from(["3b", "3B", "zz", "3"]), st.sampled_from(["00", "0"]),
                      st.sampled_from(["0", "7", "8"]), st.sampled_from([*_NOISE, "a"])).map(
    lambda t: f"{t[0]}{t[1]}{t[2]}{t[3]}:{t[4]}.{t[5]}{t[6]}")


@settings(max_examples=600, deadline=None)
@given(st.lists(st.one_of(_NCCL_LINE, _PCI_TEXT, st.sampled_from(_NOISE)), max_size=4))
def test_literal_led_prefix_searches_find_what_the_plain_regexes_find(parts: list[str]) -> None:
    # The literal-led searches replace regexes that tried every position of a line's head;
    # they must give the very match the plain regexes give.
    from denpex.collect import lineinfo

    head = "".join(parts)
    m = lineinfo._NCCL.search(head)
    want = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4))) if m else None
    assert lineinfo.find_nccl_prefix(head) == want
    m = lineinfo._PCI_FULL.search(head)
    want_pci = f"{m.group(1)}:{m.group(2)}:{m.group(3)}.{m.group(4)}" if m else None
    assert lineinfo.find_pci_full(head) == want_pci


def test_nccl_and_pci_prefixes_of_real_lines() -> None:
    from denpex.collect import lineinfo

    line = "2024-06-20T20:29:53.138Z 3: gpu-a064:3454074:3454300 [5] NCCL INFO comm 0x1b rank 15 nranks 16"
    assert lineinfo.find_nccl_prefix(line) == ("gpu-a064", 3454074, 3454300, 5)
    assert lineinfo.find_pci_full("GPU 00000000:3B:00.0: Detected Critical Xid Error") == "00000000:3B:00.0"
    assert lineinfo.find_pci_full("at 20:29:53.138 nothing") is None
