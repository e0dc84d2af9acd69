"""The prefiltered engine must find exactly what running every regex on every line finds."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.catalog.examples import example_files, parse_examples
from denpex.catalog.loader import RULES_DIR
from denpex.scan.engine import ReEngine, all_hits


def naive(catalog: Catalog, chunk: str) -> set[tuple[int, int, int]]:
    """Every regex on every line, offsets in the UTF-8 block."""
    out = set()
    pos = 0
    for line in chunk.split("\n"):
        end = pos + len(line.encode("utf-8"))
        for idx, sig in enumerate(catalog.signatures):
            if not sig.end_of_source and sig.matches(line):  # those are tested where a source ends
                out.add((pos, end, idx))
        pos = end + 1
    return out


def hits(engine: ReEngine, chunk: str) -> set[tuple[int, int, int]]:
    return set(all_hits(engine, (chunk + "\n").encode("utf-8")))


@pytest.fixture(scope="module")
def engine(catalog: Catalog) -> ReEngine:
    return ReEngine(catalog.signatures)


@pytest.fixture(scope="module")
def example_lines() -> list[str]:
    return [ex.line for path in example_files(RULES_DIR) for ex in parse_examples(path)]


def test_engine_equals_naive_on_all_examples(catalog: Catalog, engine: ReEngine, example_lines: list[str]) -> None:
    chunk = "\n".join(example_lines)
    assert hits(engine, chunk) == naive(catalog, chunk)


@settings(max_examples=40, deadline=None)
@given(st.data())
def test_engine_equals_naive_on_mixed_lines(catalog: Catalog, engine: ReEngine, example_lines: list[str],
                                            data: st.DataObject) -> None:
    picked = data.draw(st.lists(st.sampled_from(example_lines), max_size=12))
    noise = data.draw(st.lists(st.text(max_size=60).map(_one_line), max_size=6))
    lines = data.draw(st.permutations(picked + noise))
    chunk = "\n".join(lines)
    assert hits(engine, chunk) == naive(catalog, chunk)


def test_non_ascii_lines_fall_back_correctly(catalog: Catalog, engine: ReEngine, tmp_path: Path) -> None:
    chunk = "İstanbul ﬁle ß\n[ 12.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus."
    assert hits(engine, chunk) == naive(catalog, chunk)


def _one_line(text: str) -> str:
    # What the reader hands an engine: no newline, carriage return or NUL inside a line, valid UTF-8.
    return text.replace("\n", " ").replace("\r", " ").replace("\x00", "").encode("utf-8", "replace").decode("utf-8")


def test_long_progress_bar_lines_give_the_lines_a_full_check_gives(catalog: Catalog, engine: ReEngine,
                                                                    example_lines: list[str]) -> None:
    # A bar redrawn with carriage returns hundreds of times, an example line hidden in one of
    # the redraws; twice, so the second time the answer comes from what the first remembered.
    for failing in example_lines[::97]:
        redraws = [f"Epoch 0: {i % 100:3d}%|{'#' * (i % 10)}| {i}/500 [00:{i % 60:02d}<00:10]" for i in range(300)]
        redraws.insert(150, failing)
        line = "\r".join(redraws)
        chunk = f"{line}\nplain line\n{line}"
        assert hits(engine, chunk) == naive(catalog, chunk)


def test_a_case_exact_pattern_is_not_a_candidate_on_a_line_holding_its_literals_in_another_case() -> None:
    # Megatron's NaN pattern needs "nan" or "inf" as written: every "INFO" line held "inf"
    # lower-cased, so each iteration line went to the regex.
    from dataclasses import replace

    from denpex.catalog.loader import load_catalog

    base = next(s for s in load_catalog().signatures if s.id == "torch.megatron_nan_iteration")
    sig = replace(base, patterns=(r"\| lm loss: (?:nan|inf)\b",))
    engine = ReEngine([sig])
    quiet = b"[INFO] iteration 5 | lm loss: 6.07E+00 |\n"
    loud = b"[INFO] iteration 6 | lm loss: nan |\n"
    assert engine.scan(quiet) == []
    assert [c[2] for c in engine.scan(loud)] == [0]
    assert all_hits(engine, quiet + loud) == [(len(quiet), len(quiet) + len(loud) - 1, 0)]


def test_a_literal_whose_pieces_every_time_stamp_holds_is_keyed_by_its_whole_word() -> None:
    # Xid's ") detected on " blurs to ") 00t00t00 on ": each of its pieces is in every ISO
    # time stamp, so 169 Xid patterns came up for checking on every new line shape.
    from dataclasses import replace

    from denpex.catalog.loader import load_catalog
    from denpex.scan import engine as eng

    base = load_catalog().by_id["xid.10"]
    sig = replace(base, patterns=(r"\bXID 10\([^)]*\) detected on ",))
    engine = ReEngine([sig])
    assert eng._WHOLE + b"00t00t00" in engine._grams
    stamped = b"2024-06-20T20:22:19.539Z 1: NCCL INFO comm 0x7f rank 0\n"
    hit = b"2024-06-20T20:22:19.539Z kernel: XID 10(GPU 3) detected on gpu-a01\n"
    assert engine.scan(stamped) == []
    assert [c[2] for c in engine.scan(stamped + hit)] == [0]


_WORDS = ["detected", "deface", "cafe", "on", "Error", "error", "INFO", "inf", "0xbeef", "12", "a1b2", ")"]
_SEPS = [" ", "  ", "\t", "\r", ":", "", "-"]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), min_size=1, max_size=4), st.booleans(), st.booleans(),
       st.lists(st.tuples(st.sampled_from(_WORDS), st.sampled_from(_SEPS)), max_size=10), st.integers(0, 3))
def test_engine_equals_the_regex_on_patterns_of_words_and_lines_of_the_same_words(
        words: list[str], caseless: bool, inline: bool, parts: list[tuple[str, str]], where: int) -> None:
    # Whole-word index keys, case-kept literal tests and blurred pieces all rest on how a
    # literal's words sit in a line: separators other than a space, case, hex letters, digits.
    import re
    from dataclasses import replace

    from denpex.catalog.loader import load_catalog

    body = " ".join(re.escape(w) for w in words)
    pattern = f"(?i:{body})" if inline else f" {body} "
    sig = replace(load_catalog().by_id["xid.10"], patterns=(pattern,), case_insensitive=caseless)
    engine = ReEngine([sig])
    line = "".join(w + s for w, s in parts)
    pieces = [line, " ".join(words).upper(), f"x {' '.join(words)} y", f"x\t{' '.join(words)} y"]
    lines = pieces[where:] + pieces[:where]
    chunk = "\n".join(lines) + "\n"
    want = set()
    pos = 0
    for text in lines:
        end = pos + len(text.encode("utf-8"))
        if sig.matches(text):
            want.add((pos, end, 0))
        pos = end + 1
    assert set(all_hits(engine, chunk.encode("utf-8"))) == want
