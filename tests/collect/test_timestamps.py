from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.collect.timestamps import STAMP_BYTES, YEAR_UNKNOWN, may_hold_stamp, parse_stamp, parse_stamp_general

CASES = [
    ("dmesg -T", "[Tue May  7 12:00:00 2024] NVRM: Xid", datetime(2024, 5, 7, 12, 0), None),
    ("dmesg", "[ 1234.567890] NVRM: Xid", None, 1234.56789),
    ("syslog", "May  7 12:00:00 gpu01 kernel: NVRM", datetime(YEAR_UNKNOWN, 5, 7, 12, 0), None),
    ("journalctl iso", "2024-05-01T12:00:00.123+0000 gpu01 kernel: x", datetime(2024, 5, 1, 12, 0, 0, 123000), None),
    ("python logging", "[2024-05-01 12:00:00,123] torch.distributed", datetime(2024, 5, 1, 12, 0, 0, 123000), None),
    ("glog in rank prefix", "[rank0]:[E1106 03:18:44.585000 8213 ProcessGroupNCCL.cpp:616] x",
     datetime(YEAR_UNKNOWN, 11, 6, 3, 18, 44, 585000), None),
    ("date", "Tue May  7 12:00:00 UTC 2024", datetime(2024, 5, 7, 12, 0), None),
]


@pytest.mark.parametrize(("name", "line", "time", "boot"), CASES)
def test_parse_stamp(name: str, line: str, time: datetime | None, boot: float | None) -> None:
    st_ = parse_stamp(line)
    assert st_ is not None
    assert st_.time == time
    assert st_.boot_seconds == boot


def test_syslog_host_is_captured() -> None:
    st_ = parse_stamp("May  7 12:00:00 gpu-node01 kernel: NVRM: Xid")
    assert st_ is not None and st_.host == "gpu-node01"


def test_no_stamp() -> None:
    assert parse_stamp("RuntimeError: CUDA error: out of memory") is None


@given(st.text(max_size=200))
def test_parse_stamp_never_raises(line: str) -> None:
    parse_stamp(line)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(list("0123456789-:T .,Z+x")), min_size=0, max_size=4),
       st.lists(st.integers(0, 23), min_size=4, max_size=4), st.sampled_from(["", " a", "1", "+0530 h", ":00"]))
def test_fast_iso_path_agrees_with_the_general_parser(noise: list[str], where: list[int], tail: str) -> None:
    chars = list("2024-06-20T21:00:27.005Z")
    for ch, pos in zip(noise, where, strict=False):
        chars[pos] = ch
    line = "".join(chars) + tail
    assert parse_stamp(line) == parse_stamp_general(line)


_STAMPISH = st.sampled_from(["2024-06-20T21:00:27.005Z ", "[ 123.456] ", "[Tue May  7 12:00:00 2024] ", "May  7 12:00:00 node ",
                             "E1129 14:07:47.123456 12345 ", "[default3]:", "\x1c[ 1.5]", "12:00:00 ", "[\u3000 1.5]",
                             "\u0661\u0662:00:00 ", "x" * 118, "\u00e9", " "])


@settings(max_examples=600, deadline=None)
@given(st.lists(_STAMPISH | st.text(max_size=12), max_size=6))
def test_a_line_ruled_out_by_the_bytes_check_has_no_stamp(pieces: list[str]) -> None:
    # The scanner skips decoding and parsing lines this check rules out; it must never rule out a stamp.
    line = "".join(pieces).replace("\n", " ")
    raw = line.encode("utf-8", "surrogatepass")
    if not may_hold_stamp(raw, 0, len(raw)):
        assert parse_stamp(line) is None
        assert parse_stamp(raw[:STAMP_BYTES].decode("utf-8", "replace")) is None


def test_only_the_head_of_a_long_line_is_needed_for_its_stamp() -> None:
    line = "2024-06-20T21:00:27Z " + "\u2588" * 50_000
    head = line.encode()[:STAMP_BYTES].decode("utf-8", "replace")
    assert parse_stamp(head) == parse_stamp(line)
