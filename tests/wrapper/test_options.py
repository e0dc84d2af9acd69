from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from denpex.collect.wrapper import parse_duration, parse_size

MIB = 1024 * 1024


@pytest.mark.parametrize(("text", "expected"), [
    ("0", 0), ("512", 512), ("512K", 512 * 1024), ("64M", 64 * MIB), ("64MiB", 64 * MIB), ("1.5G", 1536 * MIB),
    ("16mb", 16 * MIB), (" 2G ", 2048 * MIB),
])
def test_sizes_in_binary_units(text: str, expected: int) -> None:
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "M", "-1M", "12X", "1.2.3M", "ten"])
def test_bad_sizes_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="not a size"):
        parse_size(text)


@pytest.mark.parametrize(("text", "expected"), [
    ("45", 45.0), ("90s", 90.0), ("30m", 1800.0), ("2h", 7200.0), ("1h30m", 5400.0), ("1h 30m", 5400.0),
    ("500ms", 0.5), ("1d", 86400.0),
])
def test_durations(text: str, expected: float) -> None:
    assert parse_duration(text) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["", "0", "0s", "m", "30x", "-5m", "5m garbage"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError, match="not a duration"):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(["", "K", "M", "G"]))
def test_size_round_trip(n: int, unit: str) -> None:
    assert parse_size(f"{n}{unit}") == n * {"": 1, "K": 1024, "M": MIB, "G": 1024 * MIB}[unit]


@given(st.text(max_size=12))
def test_size_parser_never_crashes(text: str) -> None:
    with contextlib.suppress(ValueError):
        assert parse_size(text) >= 0


@given(st.text(max_size=12))
def test_duration_parser_never_crashes(text: str) -> None:
    with contextlib.suppress(ValueError):
        assert parse_duration(text) > 0
