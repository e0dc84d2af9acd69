"""Engines that find which signatures match which lines of a chunk of text.

An engine sees a chunk of whole lines (joined by ``\\n``) and yields ``(line_start,
line_end, signature_index)`` for every line a signature matches. The stdlib engine is the
reference: a literal prefilter finds the few lines that could match anything, and only there
are the signatures' own regexes run. Optional engines (Hyperscan) must give identical hits;
a differential test holds them to it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Protocol

from denpex.catalog.model import Signature
from denpex.catalog.regex_subset import required_literals

Hit = tuple[int, int, int]


class Engine(Protocol):
    name: str

    def scan(self, chunk: str) -> Iterator[Hit]:
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


class ReEngine:
    """Standard-library engine: literal prefilter over the whole chunk, then per-line confirm."""

    name = "re"

    def __init__(self, signatures: Sequence[Signature]) -> None:
        self.signatures = list(signatures)
        lit_to_sigs: dict[str, set[int]] = {}
        self.unfiltered: list[int] = []
        for idx, sig in enumerate(self.signatures):
            lits: set[str] = set()
            ok = True
            for pat in sig.patterns:
                req = required_literals(pat)
                if req is None:
                    ok = False
                    break
                lits |= req
            if not ok:
                self.unfiltered.append(idx)
                continue
            for lit in lits:
                lit_to_sigs.setdefault(lit, set()).add(idx)
        self.literals = sorted(lit_to_sigs)
        # A greedy trie match returns the longest literal at a position; every shorter literal
        # that also matches there is a prefix of it, so precompute that closure.
        self._sigs_for_hit: dict[str, frozenset[int]] = {}
        for lit in self.literals:
            acc: set[int] = set()
            for other in self.literals:
                if lit.startswith(other):
                    acc |= lit_to_sigs[other]
            self._sigs_for_hit[lit] = frozenset(acc)
        self._prefilter = re.compile(_trie_regex(self.literals)) if self.literals else None

    def candidates(self, low_line: str) -> set[int]:
        """Signature indices whose literals occur in a lower-cased line."""
        found: set[int] = set(self.unfiltered)
        rx = self._prefilter
        if rx is None:
            return found
        pos = 0
        n = len(low_line)
        while pos < n:
            m = rx.search(low_line, pos)
            if m is None:
                break
            start = m.start()
            found |= self._sigs_for_hit[m.group()]
            # literals starting inside this hit are found by matching at each later offset
            for q in range(start + 1, m.end()):
                m2 = rx.match(low_line, q)
                if m2 is not None and m2.group():
                    found |= self._sigs_for_hit[m2.group()]
            pos = start + 1 if m.end() == start else m.end()
        return found

    def scan(self, chunk: str) -> Iterator[Hit]:
        sigs = self.signatures
        if self.unfiltered:
            yield from self._scan_every_line(chunk)
            return
        rx = self._prefilter
        if rx is None:
            return
        low = chunk.lower()
        # str.lower() can change length for a few non-ASCII characters; fall back then.
        if len(low) != len(chunk):
            yield from self._scan_every_line(chunk)
            return
        done_until = -1
        for m in rx.finditer(low):
            if m.start() < done_until or not m.group():
                continue
            ls = chunk.rfind("\n", 0, m.start()) + 1
            le = chunk.find("\n", m.start())
            if le < 0:
                le = len(chunk)
            done_until = le
            line = chunk[ls:le]
            for idx in sorted(self.candidates(low[ls:le])):
                if sigs[idx].matches(line):
                    yield (ls, le, idx)

    def _scan_every_line(self, chunk: str) -> Iterator[Hit]:
        pos = 0
        n = len(chunk)
        while pos <= n:
            le = chunk.find("\n", pos)
            if le < 0:
                le = n
            line = chunk[pos:le]
            if line:
                for idx in sorted(self.candidates(line.lower())):
                    if self.signatures[idx].matches(line):
                        yield (pos, le, idx)
            pos = le + 1


def match_line(engine: Engine, line: str) -> list[int]:
    """Signature indices matching one line, through the same path the scanner uses."""
    return sorted({idx for _, _, idx in engine.scan(line)})


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
