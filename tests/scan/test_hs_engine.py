"""Hyperscan and the stdlib engine must give identical findings (differential test)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.catalog.examples import example_files, parse_examples
from denpex.catalog.loader import RULES_DIR
from denpex.evaluate.corpus import find_cases
from denpex.report.json_report import render_json
from denpex.scan import hs_engine
from denpex.scan.engine import ReEngine, all_hits, default_engine
from tests.helpers import corpus_incident, site_catalog

pytestmark = pytest.mark.skipif(not hs_engine.available(), reason="hyperscan extra not installed")
REPO = Path(__file__).resolve().parents[2]


def hits(engine: object, chunk: str) -> list[tuple[int, int, int]]:
    return all_hits(engine, (chunk + "\n").encode("utf-8"))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def hs(catalog: Catalog) -> hs_engine.HyperscanEngine:
    return hs_engine.HyperscanEngine(catalog.signatures)


def test_every_catalog_pattern_compiles_in_hyperscan(hs: hs_engine.HyperscanEngine, catalog: Catalog) -> None:
    assert not hs.fallback_sigs, [catalog.signatures[i].id for i in hs.fallback_sigs]


def test_same_hits_on_every_example_line(hs: hs_engine.HyperscanEngine, catalog: Catalog) -> None:
    lines = [ex.line for p in example_files(RULES_DIR) for ex in parse_examples(p)]
    chunk = "\n".join(lines)
    assert hits(hs, chunk) == hits(ReEngine(catalog.signatures), chunk)


def test_same_hits_with_non_ascii_text(hs: hs_engine.HyperscanEngine, catalog: Catalog) -> None:
    chunk = ("Epoch 1: 100%|██████████| 10/10 [00:01<00:00]\n"
             "[ 12.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
             "日本語 RuntimeError: CUDA error: an illegal memory access was encountered")
    assert hits(hs, chunk) == hits(ReEngine(catalog.signatures), chunk)


# Bytes where a byte-wise engine and re on decoded text part ways: separators that are white
# space only to re, white space that must not cross lines, multi-byte and undecodable bytes.
_TRICKY = [b"\x1c", b"\x1f", b"\t", b"\r", b" ", b"\xc3\xa9", b"\xe2\x96\x88", b"\xff", b"\xc3", b"0", b":", b"\n"]
_EXAMPLES = [ex.line.encode("utf-8") for p in example_files(RULES_DIR) for ex in parse_examples(p)]


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_same_hits_on_example_lines_with_awkward_bytes_put_in(hs: hs_engine.HyperscanEngine, catalog: Catalog,
                                                              data: st.DataObject) -> None:
    lines = []
    for line in data.draw(st.lists(st.sampled_from(_EXAMPLES), min_size=1, max_size=4)):
        for _ in range(data.draw(st.integers(0, 3))):
            at = data.draw(st.integers(0, len(line)))
            cut = data.draw(st.integers(0, 2))
            line = line[:at] + data.draw(st.sampled_from(_TRICKY)) + line[at + cut:]
        lines.append(line)
    block = b"\n".join(lines) + b"\n"
    assert all_hits(hs, block) == all_hits(_re_engine(catalog), block)


_RE: dict[int, ReEngine] = {}


def _re_engine(catalog: Catalog) -> ReEngine:
    return _RE.setdefault(id(catalog), ReEngine(catalog.signatures))


def test_same_incident_on_the_whole_corpus(catalog: Catalog) -> None:
    """Hyperscan (the default engine here, its incidents shared with the other corpus tests) vs re."""
    hs = default_engine(catalog.signatures)
    assert isinstance(hs, hs_engine.HyperscanEngine)
    re_engine = ReEngine(catalog.signatures)
    for case in [REPO / "examples" / "demo-job", *find_cases(REPO / "tests" / "corpus")]:
        docs = []
        for engine in (hs, re_engine):
            doc = corpus_incident(catalog, case, engine)
            doc.pop("generated_at")
            docs.append(render_json(doc))
        assert docs[0] == docs[1], case


def test_patterns_hyperscan_rejects_fall_back_to_the_stdlib_engine(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from denpex.catalog.loader import load_catalog

    # a bounded repeat far beyond what Hyperscan accepts, still fine for Python's re
    site = site_catalog(tmp_path, "site.huge_repeat", "hugerepeat:a{1,70000}b",
                        "A test signature with a pattern Hyperscan cannot compile but re can.")
    monkeypatch.setenv("DENPEX_HOME", str(tmp_path / "home"))
    cat = load_catalog([RULES_DIR, site])
    sigs = [s for s in cat.signatures if s.id == "site.huge_repeat" or s.family == "launcher"]
    eng = hs_engine.HyperscanEngine(sigs, cache=False)
    idx = next(i for i, s in enumerate(sigs) if s.id == "site.huge_repeat")
    if idx not in eng.fallback_sigs:
        pytest.skip("this Hyperscan build accepts the pattern")
    assert [h[2] for h in hits(eng, "hugerepeat:aaab")] == [idx]


def _site_hits_in_both_engines(tmp_path: Path, sig_id: str, pattern: str, about: str,
                               chunk: str) -> tuple[list[tuple[int, int, int]], list[tuple[int, int, int]]]:
    """The Hyperscan and stdlib hits of a one-signature site catalog on ``chunk``."""
    from denpex.catalog.loader import load_catalog

    cat = load_catalog([site_catalog(tmp_path, sig_id, pattern, about)])
    return hits(hs_engine.HyperscanEngine(cat.signatures, cache=False), chunk), hits(ReEngine(cat.signatures), chunk)


def test_dot_matches_one_non_ascii_character_in_both_engines(tmp_path: Path) -> None:
    hs, stdlib = _site_hits_in_both_engines(
        tmp_path, "site.dot", "weird marker a.b end",
        "A test signature whose dot must match one character, whatever its UTF-8 length.",
        "weird marker aéb end\nweird marker a€b end\nweird marker ab end")
    assert hs == stdlib
    assert len(hs) == 2


def test_a_wide_class_the_line_rewrite_cannot_carry_still_takes_a_multibyte_character(tmp_path: Path) -> None:
    # Regression: the widening of such patterns once sat under the gap-cutting branch, so a
    # class with \S took one byte of "é" and the line was missed.
    hs, stdlib = _site_hits_in_both_engines(tmp_path, "site.class", r"mark [\S,]x end",
                                            "A test signature whose class holds a negated category.",
                                            "mark éx end\nmark ,x end\nmark  x end")
    assert hs == stdlib
    assert len(hs) == 2


def test_cached_databases_of_different_catalogs_never_collide(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # Regression: cache names once lost everything after the library version's first dot.
    from denpex.catalog.loader import load_catalog

    monkeypatch.setenv("DENPEX_CACHE", str(tmp_path / "cache"))
    one = load_catalog([site_catalog(tmp_path / "a", "site.one", "marker one", "First test signature.")])
    two = load_catalog([site_catalog(tmp_path / "b", "site.two", "marker two", "Second test signature.")])
    hs_engine.HyperscanEngine(one.signatures)
    eng = hs_engine.HyperscanEngine(two.signatures)
    assert hits(eng, "marker two") == [(0, 10, 0)]
    assert hits(eng, "marker one") == []


def test_a_signature_made_end_of_source_never_meets_its_old_cached_database(monkeypatch: pytest.MonkeyPatch,
                                                                          catalog: Catalog, tmp_path: Path) -> None:
    # Regression: the cache key left out end_of_source, so a signature that became one kept
    # reporting from the database built while it was an ordinary one.
    import dataclasses

    monkeypatch.setenv("DENPEX_CACHE", str(tmp_path / "cache"))
    sig = next(s for s in catalog.signatures if s.id == "python.divisibility_assert")
    assert sig.end_of_source
    ordinary = dataclasses.replace(sig, end_of_source=False)
    line = "    assert numerator % denominator == 0, \\"
    assert hits(hs_engine.HyperscanEngine([ordinary]), line) == [(0, len(line), 0)]
    assert hits(hs_engine.HyperscanEngine([sig]), line) == []


def test_invalid_utf8_bytes_are_matched_like_the_characters_they_become(tmp_path: Path) -> None:
    from denpex.catalog.loader import load_catalog

    site = site_catalog(tmp_path, "site.wide", "mark a.b.{2}c end",
                        "A test signature whose single and bounded dots meet undecodable bytes.")
    cat = load_catalog([site])
    block = (b"mark a\xffb\xc3\xa9\xfe c end\nmark a\xe2\x82b\x80\x80c end\nmark ab..c end\n"
             b"mark a\xc3b\xf0\x9f\x98\x80xc end\n")
    hs = hs_engine.HyperscanEngine(cat.signatures, cache=False)
    assert all_hits(hs, block) == all_hits(ReEngine(cat.signatures), block)
    assert [h[0] for h in all_hits(hs, block)] == [block.index(b"mark a\xe2"), block.index(b"mark a\xc3b")]


def test_hits_reported_out_of_order_give_the_same_candidates(hs: hs_engine.HyperscanEngine) -> None:
    block = b"NCCL WARN Cuda failure 'out of memory'\nok\nKilled\n"
    reported: list[tuple[int, int]] = []
    hs.db.scan(block, match_event_handler=lambda pid, start, end, flags, ctx: reported.append((end, pid)))
    in_order = hs._candidates(reported, hs._owner, hs._confirm, block, 0)
    assert len(reported) >= 2
    assert hs._candidates(list(reversed(reported)), hs._owner, hs._confirm, block, 0) == in_order


def test_anchored_patterns_match_on_the_first_line_of_a_block(hs: hs_engine.HyperscanEngine,
                                                              catalog: Catalog) -> None:
    # Hyperscan looks for the newline before a line instead of "^": the first line of a block
    # has none, and is scanned behind one of its own.
    anchored = {i for i, s in enumerate(catalog.signatures) if any(p.startswith("^") for p in s.patterns)}
    re_engine = ReEngine(catalog.signatures)
    seen = set()
    for path in example_files(RULES_DIR):
        for ex in parse_examples(path):
            block = (ex.line + "\n").encode("utf-8")
            got = all_hits(hs, block)
            assert got == all_hits(re_engine, block), ex.line
            seen.update(idx for _, _, idx in got if idx in anchored)
    assert len(seen) > 50


def test_a_stretch_scanned_from_inside_a_block_sees_the_newline_before_it() -> None:
    block = b"Killed\nsecond\nKilled\n"
    assert [(bytes(buf), shift) for buf, shift in hs_engine._pieces(block, 0, len(block))] == [
        (b"\nKilled\n", -1), (b"\nsecond\nKilled\n", 6)]
    assert [(bytes(buf), shift) for buf, shift in hs_engine._pieces(block, 14, len(block))] == [(b"\nKilled\n", 13)]
    assert list(hs_engine._pieces(block, 5, 5)) == []


def test_only_an_opening_line_anchor_becomes_a_newline() -> None:
    assert hs_engine.newline_anchor("(?:^Killed)[^\\n]*\\n") == "(?:\\nKilled)[^\\n]*\\n"
    assert hs_engine.newline_anchor("^Killed\\s*$") == "\\nKilled\\s*$"
    assert hs_engine.newline_anchor("(?:a|^b)c") == "(?:a|^b)c"


def test_two_patterns_opening_with_anchored_spaces_both_still_match(catalog: Catalog) -> None:
    """Hyperscan lost the HF Trainer's NaN eval_loss beside compute-sanitizer's indented pattern.

    Real lines (holdout270, a TinyLlama fine-tune): with both signatures in one database the
    third line was not reported, though each signature alone found it.
    """
    sigs = [s for s in catalog.signatures if s.id in ("torch.loss_nan_logged", "cuda.sanitizer_invalid_access")]
    block = (b"***** eval metrics *****\n"
             b"  epoch                   =        5.0\n"
             b"  eval_loss               =        nan\n")
    eng = hs_engine.HyperscanEngine(sigs, cache=False)
    want = [i for i, s in enumerate(sigs) if s.id == "torch.loss_nan_logged"]
    assert [h[2] for h in all_hits(eng, block)] == want
    assert all_hits(eng, block) == all_hits(ReEngine(sigs), block)


def test_a_leading_anchored_space_run_is_left_to_re() -> None:
    assert hs_engine.unanchor_leading_space(r"^\s*=+ +Invalid __global__") == r"=+ +Invalid __global__"
    assert hs_engine.unanchor_leading_space(r"(?:^ +eval_loss|x)") == r"(?:eval_loss|x)"
    assert hs_engine.unanchor_leading_space(r"^Train: \d+") is None
    assert hs_engine.unanchor_leading_space(r"^\s*$") is None


def test_a_block_without_a_searched_signatures_literals_skips_its_windows(hs: hs_engine.HyperscanEngine,
                                                                         catalog: Catalog) -> None:
    epoch = next(i for i in hs.searched_progress if catalog.signatures[i].id == "progress.epoch")
    step_line = b"{'loss': 1.2345, 'grad_norm': 3.1, 'learning_rate': 4.9e-05, 'epoch': 0.42}\n"
    other = b"gpu-a045:1650372:1650375 [4] NCCL INFO cudaDriverVersion 12040\n" * 100
    assert not hs.may_hold(other, epoch)
    assert hs.may_hold(other + step_line, epoch)
    # Wherever it says no, the windows would have found nothing.
    for block in (other, other + b"epoch 3 of 10\n", other + step_line):
        if not hs.may_hold(block, epoch):
            assert hs.progress_candidates(block, 0, len(block), epoch) == []
