from __future__ import annotations

from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from denpex.collect.timestamps import YEAR_UNKNOWN, parse_stamp

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
