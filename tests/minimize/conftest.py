from __future__ import annotations

from pathlib import Path

import pytest

from denpex.minimize.masker import Masker

KEY = b"test-key-0123456789abcdef0123456789"


@pytest.fixture(autouse=True)
def denpex_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own DENPEX_HOME, so no test writes a key into the real home."""
    home = tmp_path / "denpex-home"
    monkeypatch.setenv("DENPEX_HOME", str(home))
    return home


@pytest.fixture
def masker() -> Masker:
    return Masker(KEY)


@pytest.fixture
def id_masker() -> Masker:
    return Masker(KEY, identity=True)
