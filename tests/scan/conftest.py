"""Fixtures for the scanner's tests: blocks and parts small enough to make test files split."""

from __future__ import annotations

import pytest

from denpex.collect import inputs
from denpex.scan import scanner


@pytest.fixture()
def small_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "BLOCK", 16 * 1024)
    monkeypatch.setattr(scanner, "BLOCK", 16 * 1024)
    monkeypatch.setattr(inputs, "SPLIT_SEARCH", 2048)
    monkeypatch.setattr(scanner, "SPLIT_MIN_BYTES", 64 * 1024)
    monkeypatch.setattr(scanner, "SPLIT_PART_BYTES", 16 * 1024)
    monkeypatch.setattr(scanner, "MAX_EVENTS_PER_SIGNATURE", 25)
    monkeypatch.setattr(scanner, "_WINDOW", 512)
