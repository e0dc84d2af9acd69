"""Engines that find which signatures may match which lines of a block.

An engine sees a block of whole lines (UTF-8 bytes, every line ending in ``\\n``) and returns
candidates ``(line_start, line_end, signature_index, confirm)`` in line order, where
``line_end`` is the offset of the line's newline. ``confirm`` says the hit still has to be
checked with the signature's own Python regex on the decoded line; the scanner does that only
for the candidates it keeps, so a flood of progress lines costs little.

The stdlib engine is the reference: a literal prefilter, remembered per line shape, finds the
few lines that could match anything. Optional engines (Hyperscan) must give the same
confirmed hits; a differential test holds them to it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol

from denpex.catalog.model import Signature
from denpex.catalog.regex_subset import required_literals

Candidate = tuple[int, int, int, bool]


class Engine(Protocol):
    """``scan`` finds every candidate, except that a progress signature may be reported only
    once per block (its presence); ``progress_candidates`` then lists a stretch's progress lines."""

    name: str
    signatures: list[Signature]

    def scan(self, block: bytes) -> list[Candidate]:
        ...

    def progress_candidates(self, block: bytes, start: int, end: int, sig: int) -> list[Candidate]:
        ...


def _trie_regex(words: Sequence[str]) -> str:
    """One regex alternation shaped as a trie, so ``re`` checks shared prefixes once."""
    trie: dict[str, dict] = {}  # type: ignore[type-arg]
    for w in words:
        node = trie
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def build(node: dict) -> str:  # type: ignore[type-arg]
        ends = "" in node
        alts = [re.escape(ch) + build(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        body = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        if ends:
            return "(?:" + body + ")?"
        return body

    return build(trie)


def _shape_table() -> bytes:
    table = bytearray(range(256))
    for c in range(ord("A"), ord("Z") + 1):
        table[c] = c + 32
    for c in range(ord("0"), ord("9") + 1):
        table[c] = ord("0")
    return bytes(table)


# A line's shape: ASCII lower-cased, every digit a '0'. Log lines repeat with different
# numbers (steps, times, ranks), so most lines have a shape seen before; literals are put in
# the same shape, so a literal in a line is always in the line's shape.
SHAPE = _shape_table()
_CACHE_LINE = 1024  # longer lines are rarely repeated; not worth remembering
_CACHE_ENTRIES = 200_000


class ReEngine:
    """Standard-library engine: literal prefilter per line shape, confirmed by the scanner."""

    name = "re"

    def __init__(self, signatures: Sequence[Signature]) -> None:
        self.signatures = list(signatures)
        lit_to_sigs: dict[str, set[int]] = {}
        self.unfiltered: list[int] = []
        for idx, sig in enumerate(self.signatures):
            lits: set[str] = set()
            for pat in sig.patterns:
                req = required_literals(pat)
                if req is None:
                    self.unfiltered.append(idx)
                    break
                lits |= {lit.encode("utf-8").translate(SHAPE).decode("latin-1") for lit in req}
            else:
                for lit in lits:
                    lit_to_sigs.setdefault(lit, set()).add(idx)
        literals = sorted(lit_to_sigs)
        # A greedy trie match returns the longest literal at a position; every shorter literal
        # that also matches there is a prefix of it, so precompute that closure.
        self._sigs_for_hit: dict[bytes, frozenset[int]] = {}
        for lit in literals:
            acc: set[int] = set(self.unfiltered)
            for other in literals:
                if lit.startswith(other):
                    acc |= lit_to_sigs[other]
            self._sigs_for_hit[lit.encode("latin-1")] = frozenset(acc)
        self._prefilter = re.compile(_trie_regex(literals).encode("latin-1")) if literals else None
        self._always = tuple(sorted(self.unfiltered))
        self._shapes: dict[bytes, tuple[int, ...]] = {}

    def _for_shape(self, shape: bytes) -> tuple[int, ...]:
        """Signature indices whose literals occur in a line of this shape."""
        rx = self._prefilter
        if rx is None:
            return self._always
        found: set[int] = set(self.unfiltered)
        pos = 0
        n = len(shape)
        hits = self._sigs_for_hit
        while pos < n:
            m = rx.search(shape, pos)
            if m is None:
                break
            start = m.start()
            if m.end() > start:
                found |= hits[m.group()]
            # literals starting inside this hit are found by matching at each later offset
            for q in range(start + 1, m.end()):
                m2 = rx.match(shape, q)
                if m2 is not None and m2.end() > q:
                    found |= hits[m2.group()]
            pos = start + 1 if m.end() == start else m.end()
        return tuple(sorted(found))

    def scan(self, block: bytes) -> list[Candidate]:
        return self._lines(block, 0, len(block), None)

    def progress_candidates(self, block: bytes, start: int, end: int, sig: int) -> list[Candidate]:
        return self._lines(block, start, end, frozenset([sig]))

    def _lines(self, block: bytes, start: int, end: int, only: frozenset[int] | None) -> list[Candidate]:
        """Candidates of the whole lines in ``block[start:end]`` (of the signatures ``only``)."""
        out: list[Candidate] = []
        shapes = self._shapes
        get = shapes.get
        pos = start
        if start > 0 or end < len(block):
            block = block[start:end]
        for line in block.translate(SHAPE).split(b"\n")[:-1]:
            cands = get(line)
            if cands is None:
                cands = self._for_shape(line)
                if len(line) <= _CACHE_LINE:
                    if len(shapes) >= _CACHE_ENTRIES:
                        shapes.clear()
                    shapes[line] = cands
            le = pos + len(line)
            for idx in cands:
                if only is None or idx in only:
                    out.append((pos, le, idx, True))
            pos = le + 1
        return out


def all_hits(engine: Engine, block: bytes) -> list[tuple[int, int, int]]:
    """Every confirmed ``(line_start, line_end, signature_index)`` of a block, progress lines too.

    The scanner asks for less (it needs only some progress lines); this is what tests compare.
    """
    sigs = engine.signatures
    out: set[tuple[int, int, int]] = set()
    progress: set[int] = set()

    def confirmed(ls: int, le: int, idx: int, need: bool) -> None:
        if not need or sigs[idx].matches(block[ls:le].decode("utf-8", "replace")):
            out.add((ls, le, idx))

    for ls, le, idx, need in engine.scan(block):
        if sigs[idx].category == "progress":
            progress.add(idx)
        else:
            confirmed(ls, le, idx, need)
    for idx in progress:
        for ls, le, _, need in engine.progress_candidates(block, 0, len(block), idx):
            confirmed(ls, le, idx, need)
    return sorted(out)


def match_line(engine: Engine, line: str) -> list[int]:
    """Signature indices matching one line, through the same path the scanner uses."""
    from denpex.collect.inputs import normalize_block

    return sorted({idx for _, _, idx in all_hits(engine, normalize_block((line + "\n").encode("utf-8")))})


ENGINES = ("auto", "re", "hyperscan")


def default_engine(signatures: Sequence[Signature], name: str | None = None) -> Engine:
    """Hyperscan when the 'fast' extra is installed, else the stdlib engine; same findings either way.

    ``DENPEX_ENGINE`` (or ``name``) forces one: auto | re | hyperscan.
    """
    import os

    choice = name or os.environ.get("DENPEX_ENGINE", "auto")
    if choice not in ENGINES:
        raise ValueError(f"unknown engine {choice!r}; choose one of {', '.join(ENGINES)}")
    key = (choice, hash(tuple((s.id, s.case_insensitive, s.patterns) for s in signatures)))
    cached = _ENGINES.get(key)
    if cached is not None:
        return cached
    engine: Engine
    if choice in ("auto", "hyperscan"):
        from denpex.scan import hs_engine

        if hs_engine.available():
            engine = hs_engine.HyperscanEngine(signatures)
        elif choice == "hyperscan":
            raise ValueError("the hyperscan engine needs the 'fast' extra: pip install 'denpex[fast]'")
        else:
            engine = ReEngine(signatures)
    else:
        engine = ReEngine(signatures)
    _ENGINES[key] = engine
    return engine


# Engines are immutable once built; a process that diagnoses many times (tests, a service)
# builds each one once.
_ENGINES: dict[tuple[str, int], Engine] = {}
