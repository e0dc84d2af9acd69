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

from collections.abc import Callable, Sequence
from itertools import accumulate, compress, count
from typing import Protocol, cast

from denpex.catalog.model import Signature
from denpex.catalog.regex_subset import literal_sets_for_prefilter

Candidate = tuple[int, int, int, bool]
Limits = dict[int, tuple[int, int]]  # signature -> (first lines wanted, last lines wanted)


class Engine(Protocol):
    """``scan`` finds every candidate, except that a progress signature not in ``listed_progress``
    may be reported only once per block (its presence), and one in ``searched_progress`` not at
    all; ``progress_candidates`` then lists a stretch's lines of it.

    ``limits`` (signature -> (head, tail)) says how many lines of a signature the caller can
    still use in this block: its first ``head`` lines and, after those, its last ``tail``.
    An engine may leave out lines of it between those that need no confirmation; it may also
    ignore ``limits`` and list everything. A flood of a line already kept a thousand times
    then costs the engine nothing."""

    name: str
    signatures: list[Signature]
    listed_progress: frozenset[int]  # progress signatures whose every line scan() lists
    searched_progress: frozenset[int]  # progress signatures scan() never reports: look in every block
    markers: set[str]  # after scan(): launcher prefixes the block may hold ("rank", "mpi")

    def scan(self, block: bytes, limits: Limits | None = None) -> list[Candidate]:
        ...

    def progress_candidates(self, block: bytes, start: int, end: int, sig: int) -> list[Candidate]:
        ...

    def may_hold(self, block: bytes, sig: int) -> bool:
        """False only where ``block`` cannot hold a line of the searched progress signature ``sig``."""
        ...


def _table(blur_hex: bool) -> bytes:
    table = bytearray(range(256))
    for c in range(ord("A"), ord("Z") + 1):
        table[c] = c + 32
    for c in b"0123456789abcdefABCDEF" if blur_hex else b"0123456789":
        table[c] = ord("0")
    return bytes(table)


# Two shapes of a line, both ASCII lower-cased. The blurred one turns every hex digit into
# '0': log lines repeat with different numbers, ids and addresses (steps, times, ranks,
# 0x7f3a...), so most blurred lines have been seen before and their answer is remembered. The
# plain one turns only decimal digits into '0' and keeps the letters the blur loses, so the
# remembered answer is checked against it with a few substring tests. Literals are put in
# the same shapes, so a literal in a line is always in both of the line's shapes.
BLUR = _table(blur_hex=True)
PLAIN = _table(blur_hex=False)
_CACHE_LINE = 1024  # longer lines are rarely repeated; not worth remembering
_CACHE_ENTRIES = 100_000
# Launcher prefixes a line may carry (looked for as Hyperscan's markers are, case kept: the
# marks only tell the scanner where to look for ranks).
_MARK_SETS = {(False, False): frozenset(), (True, False): frozenset({"rank"}), (False, True): frozenset({"mpi"}),
              (True, True): frozenset({"rank", "mpi"})}
# The blurred shape from the plain one: the hex letters the plain shape keeps become '0' too.
_PLAIN_TO_BLUR = bytes.maketrans(b"abcdef", b"000000")
# Answers are remembered per line with its decimal digits made '0' and its case kept (lines
# repeat with other numbers, almost never in another case); the plain shape is that, lower-cased.
FOLD = bytes.maketrans(b"123456789", b"000000000")
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
Answer = tuple[tuple[int, bool], ...]  # (signature, whether the scanner must still confirm the hit)

LiteralSets = tuple[tuple[bytes, ...], ...]  # one literal of each set must occur
LiteralTest = tuple[bool, LiteralSets]  # (on the line with its case kept, else on the plain shape; the sets)
# Per passing pattern, the plain-shape literal sets a line must hold (None: nothing to check),
# and the signatures that then are candidates. Signatures sharing the same test share a check:
# a hundred CUDA codes all need "cuda" and "error" in the line, tested once.
Check = tuple[tuple[LiteralTest, ...] | None, tuple[int, ...]]


_WHOLE = b"\x00"  # an index key that stands for a whole word of the shape, not a piece of one


def _information(shaped: bytes) -> int:
    """Bytes of a blurred literal that a blurred shape keeps apart (not '0' or a space)."""
    return len(shaped) - shaped.count(b"0") - shaped.count(b" ")


def _has_all(sets: LiteralSets, text: bytes) -> bool:
    # Loops, not all()/any() over generators: this runs for every line not seen before.
    for opt in sets:
        for lit in opt:
            if lit in text:
                break
        else:
            return False
    return True


class ReEngine:
    """Standard-library engine: literal prefilter per line shape, confirmed by the scanner.

    Each pattern is indexed under one three-byte piece (without white space) of its most
    selective required literal. A blurred shape not seen before is cut into words, each word
    into its three-byte pieces (remembered per word: words repeat far more than lines); only
    patterns indexed under one of them are looked at, and such a pattern passes only when
    every literal it requires (one of each set) is in the shape. The passing patterns'
    literals are then looked up in the plain shape, and the answer is remembered under it.
    """

    name = "re"

    def __init__(self, signatures: Sequence[Signature]) -> None:
        self.signatures = list(signatures)
        self.listed_progress = frozenset(i for i, sig in enumerate(self.signatures) if sig.category == "progress")
        self.searched_progress: frozenset[int] = frozenset()
        self.unfiltered: list[int] = []
        # (blurred key literal, other blurred sets, signature, pattern number)
        entries: list[tuple[bytes, LiteralSets, int, int]] = []
        self._cr_safe = True
        # Per pattern: the literal sets a line must hold past the blurred shape's test, or None
        # when the blur loses nothing of them. A pattern matched case-sensitively throughout is
        # tested on the line with its case kept (Megatron's "| lm loss: ... nan|inf" then stops
        # passing on every "INFO" line); others on the plain, lower-cased shape.
        self._plain: dict[tuple[int, int], LiteralTest | None] = {}
        for idx, sig in enumerate(self.signatures):
            if sig.end_of_source:
                continue  # the scanner tests these on a source's last lines only
            mine: list[tuple[bytes, LiteralSets, int, int]] = []
            for no, pat in enumerate(sig.patterns):
                sets, kept_case = literal_sets_for_prefilter(pat, sig.case_insensitive)
                if any("\r" in lit for opt in sets for lit in opt):
                    self._cr_safe = False  # see _lines: progress-bar lines are then looked at whole
                if not sets:
                    break
                pairs = [tuple(sorted((lit.encode("utf-8").translate(BLUR), lit.encode("utf-8").translate(PLAIN))
                                      for lit in opt)) for opt in sets]
                # The key is the set whose literals keep the most letters the blur does not lose.
                best = max(pairs, key=lambda st: (min(_information(b) for b, _ in st), -len(st)))
                others = tuple(tuple(b for b, _ in st) for st in pairs if st is not best)
                if kept_case is not None:
                    exact = tuple(tuple(sorted(lit.encode("utf-8").translate(FOLD) for lit in opt))
                                  for opt in kept_case)
                    self._plain[(idx, no)] = (True, exact)
                else:
                    lossless = all(b == p for st in pairs for b, p in st)
                    plain_sets = tuple(tuple(p for _, p in st) for st in pairs)
                    self._plain[(idx, no)] = None if lossless else (False, plain_sets)
                mine.extend((b, others, idx, no) for b, _ in best)
            else:
                entries.extend(mine)
                continue
            self.unfiltered.append(idx)
        self._by_gram: dict[bytes, list[tuple[bytes, LiteralSets, int, int]]] = {}
        self._spanning: list[tuple[bytes, LiteralSets, int, int]] = []
        for entry in entries:
            grams = [g for g in (entry[0][i:i + 3] for i in range(len(entry[0]) - 2)) if g.split() == [g]]
            if not grams:
                self._spanning.append(entry)  # every piece holds white space: checked on every new shape
                continue
            # A piece with blurred characters ('0': digits, hex letters) turns up in most lines
            # (time stamps, ids): it would bring its patterns up for checking on nearly every shape.
            gram = min(grams, key=lambda g: (g.count(b"0"), len(self._by_gram.get(g, ())), g))
            if b"0" in gram:
                # Then a word the literal holds whole (spaces on both sides) is the better key: a
                # line can hold it only as a word of its own (Xid's ") detected on ": every time
                # stamp holds the pieces of "00t00t00", no time stamp is that word).
                inner = [w for w in entry[0].split(b" ")[1:-1] if w.split() == [w]]
                if inner and max(map(len, inner)) > 3:
                    gram = _WHOLE + max(inner, key=lambda w: (len(w) - w.count(b"0"), len(w), w))
            self._by_gram.setdefault(gram, []).append(entry)
        self._grams = frozenset(self._by_gram)
        self._shapes: dict[bytes, tuple[Check, ...]] = {}
        # The final answer per line with digits folded: most lines differ from an earlier one only in numbers.
        self._answers: dict[bytes, Answer] = {}
        self._marked: dict[bytes, frozenset[str]] = {}  # remembered lines that carry launcher prefixes
        self.markers: set[str] = set()
        self._words: dict[bytes, frozenset[bytes]] = {}
        # Per signature met so far, its patterns' searches where a digit-folded line settles
        # it, else None (built on first use: most signatures never pass the prefilter).
        self._searches: dict[int, tuple[Callable[[str], object], ...] | None] = {}

    def _for_shape(self, shape: bytes) -> tuple[Check, ...]:
        """Signatures that may match a line of this blurred shape, with what the plain shape must hold."""
        words = self._words
        grams: set[bytes] = set()
        for word in set(shape.split()):
            got = words.get(word)
            if got is None:
                got = frozenset(word[i:i + 3] for i in range(len(word) - 2)) & self._grams
                if _WHOLE + word in self._grams:
                    got |= {_WHOLE + word}
                if len(words) >= _CACHE_ENTRIES:
                    words.clear()
                words[word] = got
            if got:
                grams |= got
        passing: dict[int, set[int]] = {}
        candidates = [e for g in grams for e in self._by_gram[g]] + self._spanning
        for lit, others, idx, no in candidates:
            if lit in shape and _has_all(others, shape):
                passing.setdefault(idx, set()).add(no)
        groups: dict[tuple[LiteralTest, ...] | None, list[int]] = {None: list(self.unfiltered)}
        for idx in sorted(passing):
            plain = [self._plain[(idx, no)] for no in sorted(passing[idx])]
            key = None if any(p is None for p in plain) else tuple(sorted({p for p in plain if p is not None}))
            groups.setdefault(key, []).append(idx)
        return tuple((pats, tuple(idxs)) for pats, idxs in groups.items() if idxs)

    def scan(self, block: bytes, limits: Limits | None = None) -> list[Candidate]:
        # A signature the caller can use no more lines of (a flood past its cap) is left out:
        # its lines are neither listed nor, on lines not seen before, confirmed.
        done = frozenset(i for i, (head, tail) in limits.items() if head <= 0 and tail <= 0) if limits else None
        return self._lines(block, 0, len(block), None, done or None)

    def progress_candidates(self, block: bytes, start: int, end: int, sig: int) -> list[Candidate]:
        return self._lines(block, start, end, sig)

    def may_hold(self, block: bytes, sig: int) -> bool:
        return True  # searches nothing on its own (no searched progress signatures)

    def _lines(self, block: bytes, start: int, end: int, only: int | None,
               done: frozenset[int] | None = None) -> list[Candidate]:
        """Candidates of the whole lines in ``block[start:end]`` (of signature ``only``; none of ``done``).

        Per line there is only a dictionary lookup, done for all lines at once; Python looks
        at a line itself only when its shape is new or it may match something.
        """
        answers = self._answers
        get = answers.get
        if start > 0 or end < len(block):
            block = block[start:end]
        lines = block.translate(FOLD).split(b"\n")
        lines.pop()  # after the block's last newline
        found: list[Answer | None] = list(map(get, lines))
        unkept: set[str] = set()  # marks of new lines too long to remember
        at = -1
        while True:
            try:
                at = found.index(None, at + 1)
            except ValueError:
                break
            line = lines[at]
            got = get(line)
            if got is None:
                key = line
                if len(line) > _CACHE_LINE and self._cr_safe and b"\r" in line:
                    # A progress bar redrawn with carriage returns: no literal holds a carriage
                    # return, so the distinct stretches between them hold the same literals as the
                    # whole line, and (digits folded) they repeat from one such line to the next.
                    key = b"\r".join(dict.fromkeys(line.split(b"\r")))
                    got = get(key)
                if got is None:
                    got = self._answer(key, settle=key is line, unsettled=done)
                    if len(key) <= _CACHE_LINE * (1 if key is line else 8):
                        if len(answers) >= _CACHE_ENTRIES:
                            answers.clear()
                            self._marked.clear()
                        answers[key] = got
                        marks = self._marked_line(key)
                        if marks:
                            self._marked[key] = marks
                if key is not line or len(line) > _CACHE_LINE:
                    unkept.update(self._marked.get(key) or self._marked_line(key))
            found[at] = got
        answered = cast("list[Answer]", found)
        if only is None:
            # Lines keep the hash their lookup computed: this is a set operation in C.
            self.markers = set(unkept)
            for line in self._marked.keys() & lines if self._marked else ():
                self.markers.update(self._marked[line])
        ends = list(accumulate(map(len, lines)))
        out: list[Candidate] = []
        append = out.append
        # Equal answers are filtered once: a flood's lines share a handful of them.
        left: dict[Answer, Answer] = {}
        for i in compress(count(), answered):
            hit = answered[i]
            if done:
                kept = left.get(hit)
                if kept is None:
                    kept = left[hit] = tuple(h for h in hit if h[0] not in done)
                if not kept:
                    continue
                hit = kept
            le = ends[i] + i + start
            ls = le - len(lines[i])
            if only is not None:
                out.extend([(ls, le, idx, need) for idx, need in hit if idx == only])
            elif len(hit) == 1:  # most lines: no list built for one candidate
                append((ls, le, *hit[0]))
            else:
                out.extend([(ls, le, idx, need) for idx, need in hit])
        return out

    @staticmethod
    def _marked_line(line: bytes) -> frozenset[str]:
        """Launcher prefixes the line may carry ("rank", "mpi"), as written: the tokens are lower-case."""
        rank = b"[rank" in line or b"[default" in line
        mpi = b"]<std" in line
        return _MARK_SETS[rank, mpi]

    def _answer(self, folded: bytes, settle: bool = True, unsettled: frozenset[int] | None = None) -> Answer:
        """Signatures that may match a line with these digits folded, and which the answer settles.

        A settled signature is in the answer only when its regex matches ``folded``, and needs
        no confirmation; ``settle`` is False when ``folded`` stands for a line it is not equal
        to (a progress bar's repeated stretches joined once). Signatures in ``unsettled`` (floods
        the caller has no use for now) are left to confirm: an answer to remember is never wrong,
        only less settled.
        """
        plain = folded.translate(_LOWER)
        shape = plain.translate(_PLAIN_TO_BLUR)
        checks = self._shapes.get(shape)
        if checks is None:
            checks = self._for_shape(shape)
            if len(shape) <= _CACHE_LINE:
                if len(self._shapes) >= _CACHE_ENTRIES:
                    self._shapes.clear()
                self._shapes[shape] = checks
        hit: list[int] = []
        for pats, idxs in checks:
            if pats is None:
                hit.extend(idxs)
                continue
            for exact, sets in pats:
                if _has_all(sets, folded if exact else plain):
                    hit.extend(idxs)
                    break
        if not hit:
            return ()
        if len(hit) > 1:
            hit.sort()
        if not settle:
            return tuple((idx, True) for idx in hit)
        text: str | None = None
        out: list[tuple[int, bool]] = []
        searches = self._searches
        for idx in hit:
            # A signature whose patterns tell no two digits apart gives the same answer on the
            # folded line as on any line it stands for, so the answer settles it (a line that
            # only passed the literal prefilter, like Megatron's "lm loss" lines for the NaN
            # signature, costs nothing more however often it repeats).
            found = searches.get(idx, ())
            if found == ():
                sig = self.signatures[idx]
                found = searches[idx] = tuple(rx.search for rx in sig.compiled) if sig.folds_all_digits else None
            if found is None or (unsettled is not None and idx in unsettled):
                out.append((idx, True))
                continue
            if text is None:
                text = folded.decode("utf-8", "replace")
            for search in found:
                if search(text):
                    out.append((idx, False))
                    break
        return tuple(out)


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
        if sigs[idx].category == "progress" and idx not in engine.listed_progress:
            progress.add(idx)
        else:
            confirmed(ls, le, idx, need)
    for idx in progress | engine.searched_progress:
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
