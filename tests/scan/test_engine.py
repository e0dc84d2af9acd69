"""The prefiltered engine must find exactly what running every regex on every line finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.catalog.examples import example_files, parse_examples
from denpex.catalog.loader import RULES_DIR
from denpex.scan.engine import ReEngine


def naive(catalog: Catalog, chunk: str) -> set[tuple[int, int, int]]:
    out = set()
    pos = 0
    for line in chunk.split("\n"):
        end = pos + len(line)
        for idx, sig in enumerate(catalog.signatures):
            if sig.matches(line):
                out.add((pos, end, idx))
        pos = end + 1
    return out


@pytest.fixture(scope="module")
def engine(catalog: Catalog) -> ReEngine:
    return ReEngine(catalog.signatures)


@pytest.fixture(scope="module")
def example_lines() -> list[str]:
    return [ex.line for path in example_files(RULES_DIR) for ex in parse_examples(path)]


def test_engine_equals_naive_on_all_examples(catalog: Catalog, engine: ReEngine, example_lines: list[str]) -> None:
    chunk = "\n".join(example_lines)
    assert set(engine.scan(chunk)) == naive(catalog, chunk)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_engine_equals_naive_on_mixed_lines(catalog: Catalog, engine: ReEngine, example_lines: list[str],
                                            data: st.DataObject) -> None:
    picked = data.draw(st.lists(st.sampled_from(example_lines), max_size=12))
    noise = data.draw(st.lists(st.text(max_size=60).map(lambda s: s.replace("\n", " ")), max_size=6))
    lines = data.draw(st.permutations(picked + noise))
    chunk = "\n".join(lines)
    assert set(engine.scan(chunk)) == naive(catalog, chunk)


def test_non_ascii_lines_fall_back_correctly(catalog: Catalog, engine: ReEngine, tmp_path: Path) -> None:
    chunk = "İstanbul ﬁle ß\n[ 12.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    assert set(engine.scan(chunk)) == naive(catalog, chunk)
