"""The validated catalog is cached by content; a stale or damaged cache is never trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from denpex.catalog.loader import CatalogError, load_catalog
from tests.helpers import site_catalog


@pytest.fixture(autouse=True)
def private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("DENPEX_CACHE", str(cache))
    return cache


def test_cached_catalog_equals_a_fresh_one(private_cache: Path) -> None:
    first = load_catalog()
    assert list(private_cache.glob("catalog-*.json"))
    again = load_catalog()
    fresh = load_catalog(use_cache=False)
    assert again.signatures == fresh.signatures == first.signatures
    assert again.sha256 == fresh.sha256
    sig = again.by_id["xid.79"]
    assert sig.matches("NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.")


def test_cached_digit_shapes_are_the_ones_the_patterns_give(private_cache: Path) -> None:
    # The cache carries each signature's digit shape so a scan need not parse its patterns again.
    from denpex.catalog.regex_subset import digit_shape

    load_catalog()
    cached = load_catalog()
    assert all("digit_shape" in sig.__dict__ for sig in cached.signatures)
    assert all(sig.digit_shape == digit_shape(sig.patterns) for sig in cached.signatures)


def test_a_cached_digit_shape_that_is_not_ten_digits_rebuilds_the_cache(private_cache: Path) -> None:
    import json

    load_catalog()
    for f in private_cache.glob("catalog-*.json"):
        doc = json.loads(f.read_text())
        doc["signatures"][0]["digit_map"] = "01"
        f.write_text(json.dumps(doc))
    first = load_catalog().signatures[0]
    from denpex.catalog.regex_subset import digit_shape

    assert first.digit_shape == digit_shape(first.patterns)


def test_damaged_cache_is_rebuilt(private_cache: Path) -> None:
    load_catalog()
    for f in private_cache.glob("catalog-*.json"):
        f.write_text("{not json")
    assert len(load_catalog().signatures) == len(load_catalog(use_cache=False).signatures)


def test_edited_file_is_validated_again(tmp_path: Path) -> None:
    site = site_catalog(tmp_path, "site.first", "first marker", "A test signature for the cache.")
    assert "site.first" in load_catalog([site]).by_id
    toml = site / "site" / "first.toml"
    toml.write_text(toml.read_text().replace("'first marker'", "'broken ( pattern'"))
    with pytest.raises(CatalogError):
        load_catalog([site])
