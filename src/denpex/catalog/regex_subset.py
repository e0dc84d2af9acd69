"""The regex subset every catalog pattern must stay within, and its required literals.

Patterns must compile both in Python ``re`` and in Hyperscan, so that the optional fast
engine gives the same findings as the stdlib one: no look-arounds, back-references,
named or conditional groups. Fields are pulled out afterwards by the ``extract`` regexes,
which run in ``re`` on the few lines that matched.

The required literals feed the stdlib engine's prefilter: a line that contains none of a
pattern's literals cannot match it, so the engine never runs that pattern on it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

MIN_LITERAL = 3

_FORBIDDEN = {
    sre_c.ASSERT: "look-ahead/look-behind",
    sre_c.ASSERT_NOT: "negative look-around",
    sre_c.GROUPREF: "back-reference",
    sre_c.GROUPREF_EXISTS: "conditional group",
}


def subset_violations(pattern: str) -> list[str]:
    """Reasons why ``pattern`` falls outside the shared re/Hyperscan subset (empty: fine)."""
    try:
        parsed = sre_parse.parse(pattern)
    except re.error as exc:
        return [f"does not compile: {exc}"]
    problems: list[str] = []
    if parsed.state.groupdict:
        problems.append("named group (put field captures in 'extract')")
    _walk_forbidden(parsed, problems)
    if "\n" in pattern or "\\n" in pattern:
        problems.append("matches across lines")
    return problems


def _walk_forbidden(seq: Any, problems: list[str]) -> None:
    for op, av in seq:
        if op in _FORBIDDEN:
            problems.append(_FORBIDDEN[op])
        if op is sre_c.SUBPATTERN:
            _walk_forbidden(av[3], problems)
        elif op is sre_c.BRANCH:
            for branch in av[1]:
                _walk_forbidden(branch, problems)
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
            _walk_forbidden(av[2], problems)
        elif op is sre_c.ATOMIC_GROUP:
            _walk_forbidden(av, problems)


def required_literals(pattern: str) -> frozenset[str] | None:
    """A set of lower-case strings at least one of which occurs in every match.

    None when the pattern has no literal of at least ``MIN_LITERAL`` characters that every
    match must contain; such a pattern would have to run on every line.
    """
    parsed = sre_parse.parse(pattern)
    best = _required(list(parsed))
    if best is None:
        return None
    # ASCII case folding only, as the engines match (re.ASCII, Hyperscan's caseless).
    return frozenset(_ascii_lower(s) for s in best)


# Words that occur on a large share of ordinary log lines: a literal made of little else
# would flag most lines, so it counts for half its length when choosing the prefilter key.
COMMON_WORDS = ("warning", "error", "info", "debug", "nccl info", "nccl warn", "failed", "timeout",
                "exception", "traceback", "iteration")


def _weight(lit: str) -> int:
    low = lit.lower().strip(" :[]()=")
    return len(lit) // 2 if low in COMMON_WORDS else len(lit)


def _score(cands: frozenset[str]) -> tuple[int, int]:
    return (min(_weight(c) for c in cands), -len(cands))


def required_literal_sets(pattern: str, keep_case: bool = False) -> list[frozenset[str]]:
    """Every literal choice a match must make: one string of each set occurs in every match.

    ``required_literals`` is the most selective of these; checking the others too on the few
    lines that pass it spares most of the regex runs a prefilter would otherwise leave.
    The literals are lower-cased unless ``keep_case``, which only a pattern matched case
    sensitively throughout may ask for (see ``is_case_exact``).
    """
    options = _options(list(sre_parse.parse(pattern)))
    if keep_case:
        return [frozenset(opt) for opt in options]
    return [frozenset(_ascii_lower(s) for s in opt) for opt in options]


def is_case_exact(pattern: str, case_insensitive: bool) -> bool:
    """Whether every literal of ``pattern`` must occur in a match with its case as written."""
    if case_insensitive:
        return False
    try:
        parsed = sre_parse.parse(pattern)
    except re.error:
        return False
    return _parsed_case_exact(parsed)


def _parsed_case_exact(parsed: Any) -> bool:
    return not parsed.state.flags & sre_c.SRE_FLAG_IGNORECASE and not _has_caseless_group(list(parsed))


def literal_sets_for_prefilter(pattern: str, case_insensitive: bool) -> tuple[list[frozenset[str]],
                                                                             list[frozenset[str]] | None]:
    """``required_literal_sets`` lower-cased, and kept in case where ``is_case_exact``; one parse."""
    parsed = sre_parse.parse(pattern)
    options = _options(list(parsed))
    lower = [frozenset(_ascii_lower(s) for s in opt) for opt in options]
    exact = None if case_insensitive or not _parsed_case_exact(parsed) else [frozenset(opt) for opt in options]
    return lower, exact


def _has_caseless_group(seq: list[tuple[Any, Any]]) -> bool:
    """Whether a group of ``seq`` (at any depth) turns case-insensitive matching on: ``(?i:...)``."""
    for op, av in seq:
        if op is sre_c.SUBPATTERN:
            if av[1] & sre_c.SRE_FLAG_IGNORECASE or _has_caseless_group(list(av[3])):
                return True
        elif op is sre_c.BRANCH:
            if any(_has_caseless_group(list(b)) for b in av[1]):
                return True
        elif op in _REPEATS:
            if _has_caseless_group(list(av[2])):
                return True
        elif op is sre_c.ATOMIC_GROUP and _has_caseless_group(list(av)):
            return True
    return False


def _ascii_lower(s: str) -> str:
    return "".join(c.lower() if c.isascii() else c for c in s)


def _required(seq: list[tuple[Any, Any]]) -> frozenset[str] | None:
    options = _options(seq)
    if not options:
        return None
    return max(options, key=_score)


def _options(seq: list[tuple[Any, Any]]) -> list[frozenset[str]]:
    """Literal sets that every match of ``seq`` needs: one string of each set occurs."""
    options: list[frozenset[str]] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) >= MIN_LITERAL:
            options.append(frozenset(["".join(run)]))
        run.clear()

    for op, av in seq:
        if op is sre_c.LITERAL:
            run.append(chr(av))
            continue
        flush()
        if op is sre_c.SUBPATTERN:
            options.extend(_options(list(av[3])))  # a group taken once needs all its literals
        elif op is sre_c.BRANCH:
            alts = [_required(list(b)) for b in av[1]]
            if alts and all(a is not None for a in alts):
                options.append(frozenset().union(*[a for a in alts if a is not None]))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT) and av[0] >= 1:
            options.extend(_options(list(av[2])))
    flush()
    return options


_NEWLINE_CATEGORIES = {sre_c.CATEGORY_SPACE, sre_c.CATEGORY_NOT_WORD, sre_c.CATEGORY_NOT_DIGIT,
                       sre_c.CATEGORY_LINEBREAK, sre_c.CATEGORY_UNI_LINEBREAK}


def can_match_newline(pattern: str) -> bool:
    """Whether any part of ``pattern`` could consume a newline (``\\s``, ``[^x]``, ``\\W``, ...).

    A pattern that cannot, matched by a multi-line scanner, matches within one line, exactly
    as ``re`` does on that line; the fast engine then needs no per-line confirmation.
    """
    try:
        return _consumes_newline(sre_parse.parse(pattern))
    except re.error:
        return True


def _consumes_newline(seq: Any) -> bool:
    return _any_atom(seq, lambda op, av: (op is sre_c.LITERAL and av == 10)
                     or (op is sre_c.NOT_LITERAL and av != 10)  # '.' never matches a newline without DOTALL
                     or (op is sre_c.IN and _set_has_newline(av)))


def _any_atom(seq: Any, hit: Callable[[Any, Any], bool],
              skip: Callable[[Any, Any], bool] = lambda op, av: False) -> bool:
    """Whether some atom of a parsed pattern, looking through groups, branches and repeats, is a ``hit``."""
    for op, av in seq:
        if skip(op, av):
            continue
        if op is sre_c.SUBPATTERN:
            children = [av[3]]
        elif op is sre_c.BRANCH:
            children = list(av[1])
        elif op in _REPEATS:
            children = [av[2]]
        elif op is sre_c.ATOMIC_GROUP:
            children = [av]
        else:
            if hit(op, av):
                return True
            continue
        if any(_any_atom(c, hit, skip) for c in children):
            return True
    return False


_WIDE_CATEGORIES = {sre_c.CATEGORY_NOT_WORD, sre_c.CATEGORY_NOT_DIGIT, sre_c.CATEGORY_NOT_SPACE}
_REPEATS = (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT)


def needs_utf8(pattern: str) -> bool:
    """Whether matching ``pattern`` on UTF-8 bytes can differ from ``re`` on the decoded text.

    On bytes, ``.`` or ``[^x]`` take one byte of a multi-byte character where ``re`` takes the
    whole character. Under an unbounded repeat (``.*``, ``\\S+``) that changes nothing, so
    such patterns run byte-wise as they are; a single or bounded wide atom, or a non-ASCII
    literal, needs ``widen_for_bytes`` and confirmation by ``re``.
    """
    try:
        return _needs_utf8(sre_parse.parse(pattern))
    except re.error:
        return True


def _wide(op: Any, av: Any) -> bool:
    if op is sre_c.ANY or op is sre_c.NOT_LITERAL:
        return True
    if op is sre_c.IN:
        for iop, iav in av:
            if iop is sre_c.NEGATE or (iop is sre_c.CATEGORY and iav in _WIDE_CATEGORIES):
                return True
            if (iop is sre_c.LITERAL and iav > 127) or (iop is sre_c.RANGE and iav[1] > 127):
                return True
    return False


def _needs_utf8(seq: Any) -> bool:
    return _any_atom(seq, lambda op, av: (op is sre_c.LITERAL and av > 127) or _wide(op, av), _free_wide_repeat)


def _free_wide_repeat(op: Any, av: Any) -> bool:
    """One wide atom repeated without bound (``.*``, ``\\S+``): bytes and characters agree."""
    if op not in _REPEATS or av[0] > 1 or av[1] != sre_c.MAXREPEAT:
        return False
    body = list(av[2])
    return len(body) == 1 and _wide(*body[0])


def _set_has_newline(items: Any) -> bool:
    negate = any(op is sre_c.NEGATE for op, _ in items)
    hit = any((op is sre_c.LITERAL and av == 10) or (op is sre_c.RANGE and av[0] <= 10 <= av[1])
              or (op is sre_c.CATEGORY and av in _NEWLINE_CATEGORIES) for op, av in items)
    return hit != negate


# A simple atom and its quantifier at the very end of a pattern: \d+  [^,]*  .?  \S{2,}
_TAIL = re.compile(r"(\\[dDsSwW]|\[(?:\\.|[^\]\\])*\]|\.|\\[^dDsSwWbBAZz0-9]|[^\\\[\]()|.*+?{}^$])"
                   r"(\+|\*|\?|\{(\d+)(?:,\d*)?\})$")


def trim_trailing_repeats(pattern: str) -> str:
    """The same set of matching lines, with fewer match ends to report.

    A pattern that is not anchored at its end matches a line exactly when the pattern with its
    trailing repeats cut to their minimum does (``X+`` -> ``X``, ``X*``/``X?`` -> nothing,
    ``X{m,n}`` -> ``X{m}``). Hyperscan reports every position where a match can end, so
    ``error: \\S+`` would report once per character; trimmed it reports once.
    """
    while True:
        m = _TAIL.search(pattern)
        if m is None or _escaped(pattern, m.start(2)):
            return pattern
        atom, quant, low = m.group(1), m.group(2), m.group(3)
        if quant == "+":
            pattern = pattern[: m.start()] + atom
            return pattern  # the atom itself now ends the pattern; stop (it is required)
        if quant in ("*", "?") or (low is not None and int(low) == 0):
            pattern = pattern[: m.start()]
            if not pattern or pattern.endswith(("|", "(")):
                return pattern + atom + quant if not pattern else m.string
            continue
        return pattern[: m.start()] + atom + "{" + str(low) + "}"


def key_piece(pattern: str) -> str | None:
    """The part of ``pattern`` between free ``.*`` gaps that is cheapest to look for, or None.

    ``A.*B`` matches a line only if both ``A`` and ``B`` do, so a multi-pattern engine may
    look for one of them and leave the whole to ``re`` on the lines it finds. The piece kept
    is the one with the most selective literal (see ``required_literals``): in
    ``NCCL INFO comm 0x.. rank .. cudaDev \\d+ .*Init COMPLETE``, Hyperscan otherwise keeps
    the whole prefix alive across every ``NCCL INFO`` line. None when the pattern has no such
    gap at its top level, has a top-level alternation, or no piece has a literal.
    """
    pieces = _top_level_pieces(pattern)
    if pieces is None or len(pieces) < 2:
        return None
    scored = [(_score(lits), i) for i, piece in enumerate(pieces)
              if (lits := _piece_literals(piece)) is not None]
    if not scored:
        return None
    return pieces[max(scored)[1]]


def _piece_literals(piece: str) -> frozenset[str] | None:
    try:
        return required_literals(piece)
    except (re.error, sre_c.error, OverflowError, RecursionError):
        return None


def _top_level_pieces(pattern: str) -> list[str] | None:
    """``pattern`` cut at every ``.*``/``.+`` outside groups; flags-only groups lead each piece."""
    flags = ""
    pieces: list[str] = []
    cur: list[str] = []
    depth = 0
    i, n = 0, len(pattern)
    while i < n:
        atom, i = _next_atom(pattern, i)
        quant, i = _quantifier(pattern, i)
        if atom.startswith("(?"):
            if atom.endswith(")") and depth == 0 and not cur and not pieces:
                flags += atom  # "(?i)": applies to every piece
                continue
            if not re.fullmatch(r"\(\?[aiLmsux-]*:", atom):
                return None  # named groups, look-arounds: not cut
            depth += 1
        elif atom == "(":
            depth += 1
        elif atom == ")":
            depth -= 1
        elif atom == "|" and depth == 0:
            return None
        elif atom == "." and depth == 0 and quant.rstrip("?") in ("*", "+"):
            if cur:
                pieces.append("".join(cur))
            cur = []
            continue
        cur.append(atom + quant)
    if cur:
        pieces.append("".join(cur))
    return [flags + p for p in pieces]


def _escaped(pattern: str, pos: int) -> bool:
    n = 0
    i = pos - 1
    while i >= 0 and pattern[i] == "\\":
        n += 1
        i -= 1
    return n % 2 == 1


_WIDE_ESCAPES = ("\\S", "\\W", "\\D")


def widen_for_bytes(pattern: str) -> str | None:
    """The pattern for a byte-wise engine, matching every line it matches on the decoded text.

    A character is one to four bytes of UTF-8 (and an undecodable byte becomes one character
    too), so each wide atom (``.``, ``[^x]``, ``\\S``, ``\\W``, ``\\D``) taken once or a bounded
    number of times is allowed four times as many bytes: ``.`` -> ``.{1,4}``, ``x{2,5}`` ->
    ``x{2,20}``. The result may match more lines, never fewer, so its hits are confirmed by
    ``re``. None when the pattern holds non-ASCII text, which bytes cannot stand for.
    """
    def widen(atom: str, quant: str) -> str:
        wide = atom == "." or atom in _WIDE_ESCAPES or atom.startswith("[^") or (
            atom.startswith("[") and any(e in atom for e in _WIDE_ESCAPES))
        return atom + (_widened(quant) if wide else quant)

    return _rewrite_atoms(pattern, widen)


def _rewrite_atoms(pattern: str, rewrite: Callable[[str, str], str | None]) -> str | None:
    """``pattern`` with each atom and its quantifier replaced by ``rewrite(atom, quantifier)``.

    None when the pattern is not ASCII (bytes cannot stand for other text) or ``rewrite``
    gives None for some atom.
    """
    if not pattern.isascii():
        return None
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        atom, i = _next_atom(pattern, i)
        quant, i = _quantifier(pattern, i)
        piece = rewrite(atom, quant)
        if piece is None:
            return None
        out.append(piece)
    return "".join(out)


def _next_atom(p: str, i: int) -> tuple[str, int]:
    if p[i] == "\\":
        return p[i:i + 2], i + 2
    if p[i] == "[":
        j = i + 1
        if j < len(p) and p[j] == "^":
            j += 1
        if j < len(p) and p[j] == "]":
            j += 1  # a ']' first in a class is a literal
        while j < len(p) and p[j] != "]":
            j += 2 if p[j] == "\\" else 1
        return p[i:j + 1], j + 1
    if p[i] == "(" and p.startswith("(?", i):
        # a group opener with flags or a name: keep it whole, it is not an atom to repeat
        j = i + 2
        while j < len(p) and p[j] not in ":)":
            j += 1
        return p[i:j + 1], j + 1
    return p[i], i + 1


def _quantifier(p: str, i: int) -> tuple[str, int]:
    if i < len(p) and p[i] in "*+?":
        j = i + 1
    elif i < len(p) and p[i] == "{":
        close = p.find("}", i)
        if close < 0 or not re.fullmatch(r"\{\d+(?:,\d*)?\}", p[i:close + 1]):
            return "", i
        j = close + 1
    else:
        return "", i
    if j < len(p) and p[j] in "?+":
        j += 1  # lazy or possessive
    return p[i:j], j


def _widened(quant: str) -> str:
    base = quant.rstrip("?+") if quant[:1] == "{" else quant[:1]
    suffix = quant[len(base):]
    if base == "":
        return "{1,4}"
    if base == "?":
        return "{0,4}" + suffix
    if _unbounded(quant):
        return quant  # bytes and characters agree
    m = re.fullmatch(r"\{(\d+)(?:(,)(\d*))?\}", base)
    assert m is not None
    low, comma, high = m.group(1), m.group(2), m.group(3)
    top = int(high) if comma else int(low)
    return f"{{{low},{4 * top}}}" + suffix


# White space but the newline: the catalog's regexes run with re.ASCII, so \s is these and the
# newline, which a line never holds and a multi-line scan must not cross.
_PY_SPACE = r"\t\x0b\x0c\r "
_HIGH = r"\x80-\xff"
# A character that is not ASCII: one to four bytes at or above 0x80 (an undecodable byte too).
_NON_ASCII_CHAR = r"[\x80-\xff]{1,4}"
# Single atoms: (their ASCII bytes, whether the atom also takes non-ASCII characters)
_LINE_ATOMS = {
    ".": (r"[^\n" + _HIGH + "]", True),
    "\\s": ("[" + _PY_SPACE + "]", False),
    "\\S": (r"[^\n" + _PY_SPACE + _HIGH + "]", True),
    "\\W": (r"[^\w\n" + _HIGH + "]", True),
    "\\D": (r"[^\d\n" + _HIGH + "]", True),
}


def line_exact_for_bytes(pattern: str) -> str | None:
    """The pattern for a byte-wise, multi-line scan that matches exactly as ``re`` does on ASCII lines.

    On a line of ASCII text it accepts exactly the lines ``re`` accepts on the decoded line:
    no atom can take the newline (``\\s``, ``[^x]``, ``\\W``, ``\\D`` are kept inside the
    line). On a line with other bytes it accepts
    at least those lines (an atom that takes any character takes one to four high bytes),
    so hits there are confirmed by ``re``. None when the pattern holds what this cannot
    carry over (non-ASCII text, a newline, a class holding a negated category).
    """
    return _rewrite_atoms(pattern, _line_atom)


def _line_atom(atom: str, quant: str) -> str | None:
    if atom in ("\\n", "\\Z", "\\A", "\\z"):
        return None
    if atom in _LINE_ATOMS:
        ascii_part, wide = _LINE_ATOMS[atom]
    elif atom.startswith("[") and len(atom) > 1:
        got = _line_class(atom)
        if got is None:
            return None
        ascii_part, wide = got
    else:
        return atom + quant
    if wide and _unbounded(quant):
        # Under an unbounded repeat, characters and bytes agree: let high bytes through as bytes.
        return ascii_part.replace(_HIGH, "") + quant
    if wide:
        return f"(?:{ascii_part}|{_NON_ASCII_CHAR})" + quant
    return ascii_part + quant


def _unbounded(quant: str) -> bool:
    base = quant.rstrip("?+") if quant[:1] == "{" else quant[:1]
    return base in ("*", "+") or (base.startswith("{") and base.endswith(",}"))


def _line_class(atom: str) -> tuple[str, bool] | None:
    """A bracket class kept inside the line, with ``re``'s \\s; None when that cannot be said simply."""
    negated = atom.startswith("[^")
    body = atom[2:-1] if negated else atom[1:-1]
    if any(e in body for e in ("\\S", "\\W", "\\D", "\\n")):
        return None
    body = body.replace("\\s", _PY_SPACE)
    if negated:
        return "[^" + body + "\\n" + _HIGH + "]", True
    rebuilt = "[" + body + "]"
    try:
        if re.compile(rebuilt.encode("ascii")).match(b"\n"):
            return None  # a range that spans the newline
    except re.error:
        return None
    return rebuilt, False


_DIGITS = range(0x30, 0x3A)


@functools.lru_cache(maxsize=4096)
def digit_shape(patterns: tuple[str, ...]) -> bytes:
    """A byte translation that puts together the digits no pattern tells apart.

    Two digits every atom treats alike (``\\d``, ``[0-9a-f]``, ``.``) are interchangeable: a
    line matches exactly when it matches with one put for the other. So each digit becomes the
    least digit of its class (all of them '0' for most patterns; ``[1-9]`` keeps '0' apart from
    the rest, a literal ``21`` keeps '1' and '2' apart), and a pattern's answer for a line can be
    remembered under that shape: log lines repeat with other numbers far more than other words.
    """
    atoms: list[tuple[Any, Any]] = []
    for pattern in patterns:
        try:
            parsed = sre_parse.parse(pattern)
        except re.error:
            return bytes(range(256))
        _any_atom(parsed, lambda op, av: _collect(atoms, op, av))
    vectors = {d: tuple(_digit_in(op, av, d) for op, av in atoms) for d in _DIGITS}
    table = bytearray(range(256))
    for d in _DIGITS:
        table[d] = min(e for e in _DIGITS if vectors[e] == vectors[d])
    return bytes(table)


def _collect(into: list[tuple[Any, Any]], op: Any, av: Any) -> bool:
    into.append((op, av))
    return False  # keep walking


def _digit_in(op: Any, av: Any, d: int) -> object:
    """How one atom sees digit ``d``: the same value for two digits means it cannot tell them apart."""
    if op in (sre_c.LITERAL, sre_c.NOT_LITERAL):
        return av == d
    if op is sre_c.IN:
        return _in_set(av, d)
    if op in (sre_c.ANY, sre_c.AT, sre_c.CATEGORY):
        return True
    return d  # anything else: every digit on its own


def _in_set(items: Any, ch: int) -> object:
    hit = False
    negate = False
    for op, av in items:
        if op is sre_c.NEGATE:
            negate = True
        elif op is sre_c.LITERAL:
            hit = hit or av == ch
        elif op is sre_c.RANGE:
            hit = hit or av[0] <= ch <= av[1]
        elif op is sre_c.CATEGORY:
            hit = hit or av in (sre_c.CATEGORY_DIGIT, sre_c.CATEGORY_WORD, sre_c.CATEGORY_NOT_SPACE)
        else:
            return ch
    return hit != negate
