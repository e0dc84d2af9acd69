"""Leak test: a seeded slice of the benchmark corpus (tools/bench_masking.py) masks to nothing."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

TOOL = Path(__file__).resolve().parents[2] / "tools" / "bench_masking.py"


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_masking", TOOL)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_masking"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_no_planted_secret_survives_and_no_diagnostic_line_changes() -> None:
    bench = _bench()
    corpus = bench.generate(seed=11, n_secrets=130)
    assert len({p.kind for p in corpus.planted}) >= 20
    for identity in (False, True):
        masked, _ = bench.denpex_mask(corpus.text, identity=identity)
        survived = [(p.kind, p.value[:30]) for p in corpus.planted if bench.survives(p.value, masked)]
        assert not survived
        assert [d for d in corpus.diagnostic_lines if d not in masked] == []
        assert masked.count("\n") == corpus.text.count("\n")


def test_corpus_is_deterministic_for_a_seed() -> None:
    bench = _bench()
    assert bench.generate(3, 40).text == bench.generate(3, 40).text
    assert bench.generate(3, 40).text != bench.generate(4, 40).text
