from __future__ import annotations

from pathlib import Path

import pytest

from denpex.catalog import Catalog, load_catalog

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    return load_catalog()


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO
