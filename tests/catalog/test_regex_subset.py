from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from denpex.catalog.regex_subset import needs_utf8, required_literals, subset_violations

CASES = [
    ("xid", r"NVRM: Xid \(PCI:[0-9a-f:]+\): 79,", {"nvrm: xid (pci:"}),
    ("alternation", r"(?:CUDA|HIP) error: out of memory", {" error: out of memory"}),
    ("branch union", r"(?:foo bar|baz qux)", {"foo bar", "baz qux"}),
    ("no literal", r"a{1,3}b", None),
]


@pytest.mark.parametrize(("name", "pattern", "expected"), CASES)
def test_required_literals(name: str, pattern: str, expected: set[str] | None) -> None:
    got = required_literals(pattern)
    assert (None if got is None else set(got)) == expected


@pytest.mark.parametrize("pattern", [r"(?=abc)d", r"(a)\1", r"(?P<x>a)", r"(?<!x)y", "a\\nb"])
def test_subset_rejects_what_hyperscan_cannot_do(pattern: str) -> None:
    assert subset_violations(pattern)


@given(st.text(max_size=40))
def test_subset_check_never_raises(pattern: str) -> None:
    subset_violations(pattern)


@pytest.mark.parametrize(("pattern", "expected"), [
    (r"NVRM: Xid \(PCI:[0-9a-f:]+\): 79,", False),
    (r"exitcode: -?\d+ \(pid", False),
    (r"Watchdog caught .*timeout", False),
    (r"foo\s+bar", True),
    (r"host [^,]+,", True),
    (r"a\Wb", True),
    (r"[^\n]+x", False),
])
def test_can_match_newline(pattern: str, expected: bool) -> None:
    from denpex.catalog.regex_subset import can_match_newline

    assert can_match_newline(pattern) is expected


@pytest.mark.parametrize(("pattern", "trimmed"), [
    (r"exitcode: -?\d+", r"exitcode: -?\d"),
    (r"foo \S+", r"foo \S"),
    (r"a [^,]*", "a "),
    (r"x\d{2,5}", r"x\d{2}"),
    (r"abc\+", r"abc\+"),
    (r"foo (?:a|b)+", r"foo (?:a|b)+"),
    (r"a\s*$", r"a\s*$"),
    (r"\d*", r"\d*"),
])
def test_trim_trailing_repeats(pattern: str, trimmed: str) -> None:
    from denpex.catalog.regex_subset import trim_trailing_repeats

    assert trim_trailing_repeats(pattern) == trimmed


@given(st.text(alphabet="ab \n,:0123456789", max_size=40))
def test_trimmed_catalog_patterns_match_the_same_lines(text: str) -> None:
    import re

    from denpex.catalog.regex_subset import trim_trailing_repeats

    for pat in (r"a: -?\d+", r"a \S+", r"b [^,]*", r"a\d{2,5}", r"ab*", r"a.?b?"):
        for line in text.split("\n"):
            assert bool(re.search(pat, line)) == bool(re.search(trim_trailing_repeats(pat), line))


@pytest.mark.parametrize(("pattern", "wide"), [
    ("a.*b", False), (r"\S+ failed", False), ("[^,]+:", False), ("[a-z]+", False), (r"\d{2,5}", False),
    ("a.b", True), ("(?:a.)+", True), (r"x\S", True), ("é", True), (".{0,3}x", True), (r"\S{3,}", True),
])
def test_needs_utf8_only_for_single_or_bounded_wide_atoms(pattern: str, wide: bool) -> None:
    assert needs_utf8(pattern) is wide


@pytest.mark.parametrize(("pattern", "piece"), [
    (r"NCCL INFO (?:\w+ )?comm 0x[0-9a-f]+ rank \d+ .*Init COMPLETE", "Init COMPLETE"),
    (r"(?i)saving.+checkpoint to", "(?i)checkpoint to"),
    (r"a|b.*c", None),  # a top-level alternation is not cut
    (r"(?:x.*y)z", None),  # a gap inside a group is not a top-level gap
    (r"Model architectures \[.*\] are not supported", r"Model architectures \["),
    (r"x\.*y", None),  # an escaped dot is a literal
])
def test_key_piece_of_free_gaps(pattern: str, piece: str | None) -> None:
    from denpex.catalog.regex_subset import key_piece

    assert key_piece(pattern) == piece


_GAP_ATOMS = ["ab", "b", "cab", r"\d+", "[ac]", r"\bab\b", "(?:a|bc)", "x?", "^a", "b$", ":"]


@given(st.lists(st.sampled_from(_GAP_ATOMS), min_size=2, max_size=4), st.lists(st.booleans(), min_size=3, max_size=3),
       st.text(alphabet="abc x:01\n", max_size=40))
def test_key_piece_matches_every_line_its_pattern_matches(atoms: list[str], plus: list[bool], text: str) -> None:
    # Hyperscan looks only for the key piece and re confirms: it must never miss a line.
    import re

    from denpex.catalog.regex_subset import key_piece

    pattern = "".join(a + (".+" if p else ".*") for a, p in zip(atoms[:-1], plus, strict=False)) + atoms[-1]
    piece = key_piece(pattern)
    if piece is None:
        return
    for line in text.split("\n"):
        if re.search(pattern, line):
            assert re.search(piece, line), (pattern, piece, line)


@pytest.mark.parametrize(("pattern", "case_insensitive", "exact"), [
    (r"\| lm loss: (?:nan|inf)\b", False, True),
    (r"Xid \(PCI:", False, True),
    (r"(?i:checkpoint saved to )", False, False),
    (r"foo (?:a|(?:x(?i:b)))", False, False),
    (r"(?i)abc", False, False),
    (r"abc", True, False),
    (r"(?:INFO|WARNING) \d\d-\d\d", False, True),
])
def test_is_case_exact(pattern: str, case_insensitive: bool, exact: bool) -> None:
    from denpex.catalog.regex_subset import is_case_exact

    assert is_case_exact(pattern, case_insensitive) is exact


_CASE_ATOMS = ["Inf", "inf", "(?:nan|Inf)", "INFO", r"\d", "[Ee]rr", "(?i:er)", " ", "x?", "(?:ab|AB)c"]


@given(st.lists(st.sampled_from(_CASE_ATOMS), min_size=1, max_size=4), st.text(alphabet="InfoNAaBbcEeRr0 x", max_size=30))
def test_literals_kept_in_case_occur_in_every_match(atoms: list[str], text: str) -> None:
    # The stdlib prefilter tests a case-exact pattern's literals on the line with its case kept:
    # a line the pattern matches must hold one literal of every set, as written.
    import re

    from denpex.catalog.regex_subset import is_case_exact, required_literal_sets

    pattern = "".join(atoms)
    if not is_case_exact(pattern, False):
        return
    if re.search(pattern, text, re.ASCII):
        for opt in required_literal_sets(pattern, keep_case=True):
            assert any(lit in text for lit in opt), (pattern, text, opt)


def test_prefilter_literal_sets_agree_with_their_parts_on_every_catalog_pattern() -> None:
    from denpex.catalog.loader import load_catalog
    from denpex.catalog.regex_subset import is_case_exact, literal_sets_for_prefilter, required_literal_sets

    for sig in load_catalog().signatures:
        for pattern in sig.patterns:
            lower, kept = literal_sets_for_prefilter(pattern, sig.case_insensitive)
            assert lower == required_literal_sets(pattern)
            exact = is_case_exact(pattern, sig.case_insensitive)
            assert (kept is not None) is exact
            if exact:
                assert kept == required_literal_sets(pattern, keep_case=True)


@given(st.text(alphabet="ab1-.:[] 9x", max_size=40))
def test_a_host_prefix_extract_led_by_a_lookbehind_finds_what_the_plain_one_finds(text: str) -> None:
    # NCCL's host:pid:tid extract starts with "(?<![\w.-])" so that re does not retry "[\w.-]+"
    # from every character of a word (2-3x faster per line); a match can only start at a word.
    import re

    plain = re.compile(r"(?P<host>[\w.-]+):(?P<pid>\d+):\d+ \[(?P<gpu_index>\d+)\]", re.ASCII)
    led = re.compile(r"(?<![\w.-])(?P<host>[\w.-]+):(?P<pid>\d+):\d+ \[(?P<gpu_index>\d+)\]", re.ASCII)
    for line in (text, f"x{text}", f"{text} gpu-a1:12:34 [5] NCCL", f"[default3]:{text}h.1:2:3 [4]"):
        a, b = plain.search(line), led.search(line)
        assert (a.groupdict() if a else None) == (b.groupdict() if b else None)
