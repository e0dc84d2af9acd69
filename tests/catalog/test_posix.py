"""Patterns written as POSIX ERE for the grep comparison find the same lines as re."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from denpex.catalog import Catalog
from denpex.catalog.examples import example_files, parse_examples
from denpex.catalog.loader import RULES_DIR
from denpex.catalog.posix import to_ere


def test_groups_alternations_and_categories_become_ere() -> None:
    assert to_ere(r"(?:\D|$)x") == "([^[:digit:]]|$)x"
    assert to_ere(r"[^\s=*]") == "[^[:space:]=*]"
    assert to_ere(r"(?i:ab)c") == "([aA][bB])c"
    assert to_ere(r"a.*?b") == "a.*b"
    assert to_ere(r"[\w.-]+") == "[[:alnum:]_.-]+"


@pytest.mark.skipif(shutil.which("grep") is None, reason="grep not installed")
def test_grep_finds_the_example_lines_re_finds(catalog: Catalog, tmp_path: Path) -> None:
    lines = sorted({ex.line for p in example_files(RULES_DIR) for ex in parse_examples(p)} - {""})
    sample = tmp_path / "lines.txt"
    sample.write_text("\n".join(lines) + "\n")
    patterns = tmp_path / "patterns.txt"
    eres = [(sig, pat, to_ere(pat, sig.case_insensitive)) for sig in catalog.signatures for pat in sig.patterns]
    patterns.write_text("\n".join(e for _, _, e in eres if e is not None) + "\n")
    grep = subprocess.run(["grep", "-n", "-E", "-f", str(patterns), str(sample)],
                          capture_output=True, text=True, check=False)
    found = {int(line.split(":", 1)[0]) for line in grep.stdout.splitlines()}
    compiled = [sig.compiled[sig.patterns.index(pat)] for sig, pat, e in eres if e is not None]
    expected = {n for n, line in enumerate(lines, 1) if any(rx.search(line) for rx in compiled)}
    assert sum(e is None for _, _, e in eres) < 10
    assert found == expected
