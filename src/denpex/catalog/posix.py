"""Catalog patterns as POSIX extended regexes, for ``grep -E`` (comparisons, not matching).

``grep -E`` knows no ``(?:``, ``(?i:``, ``\\d`` or lazy repeats, and a backslash inside a bracket
expression is a literal backslash there. The pattern is parsed with Python's own parser and
written out again in ERE terms; case-insensitive parts spell each letter as ``[aA]``. GNU grep's
``\\b``, ``\\B`` and ``\\w`` extensions are kept. A pattern that cannot be written so gives None.
"""

from __future__ import annotations

import re
from re import _constants as sre_c  # type: ignore[attr-defined]
from re import _parser as sre_parse  # type: ignore[attr-defined]
from typing import Any

_SPECIAL = set(".[]()*+?{}|^$\\")
_CLASS_OF = {
    sre_c.CATEGORY_DIGIT: "[:digit:]", sre_c.CATEGORY_SPACE: "[:space:]", sre_c.CATEGORY_WORD: "[:alnum:]_",
}
_NOT_CLASS_OF = {
    sre_c.CATEGORY_NOT_DIGIT: "[:digit:]", sre_c.CATEGORY_NOT_SPACE: "[:space:]",
    sre_c.CATEGORY_NOT_WORD: "[:alnum:]_",
}


class _Unsupported(Exception):
    pass


def to_ere(pattern: str, ignore_case: bool = False) -> str | None:
    """``pattern`` (Python syntax, re.ASCII) as an ERE for GNU grep, or None."""
    try:
        parsed = sre_parse.parse(pattern, re.ASCII | (re.IGNORECASE if ignore_case else 0))
        return _seq(parsed, ignore_case)
    except (re.error, _Unsupported):
        return None


def _seq(items: Any, ci: bool) -> str:
    return "".join(_item(op, av, ci) for op, av in items)


def _char(c: int, ci: bool) -> str:
    ch = chr(c)
    if ci and ch.isalpha() and ch.isascii():
        return f"[{ch.lower()}{ch.upper()}]"
    if ch == "\n" or not ch.isprintable():
        raise _Unsupported(ch)
    return "\\" + ch if ch in _SPECIAL else ch


def _item(op: Any, av: Any, ci: bool) -> str:
    if op is sre_c.LITERAL:
        return _char(av, ci)
    if op is sre_c.NOT_LITERAL:
        return "[^" + _bracket_items([(sre_c.LITERAL, av)], ci) + "]"
    if op is sre_c.ANY:
        return "."
    if op is sre_c.IN:
        if len(av) == 1 and av[0][0] is sre_c.CATEGORY and av[0][1] in _NOT_CLASS_OF:
            return "[^" + _NOT_CLASS_OF[av[0][1]] + "]"  # \D, \S, \W
        negate = any(o is sre_c.NEGATE for o, _ in av)
        body = _bracket_items([(o, a) for o, a in av if o is not sre_c.NEGATE], ci)
        return ("[^" if negate else "[") + body + "]"
    if op is sre_c.AT:
        return {sre_c.AT_BEGINNING: "^", sre_c.AT_END: "$", sre_c.AT_BOUNDARY: "\\b",
                sre_c.AT_NON_BOUNDARY: "\\B"}.get(av) or _fail(av)
    if op is sre_c.SUBPATTERN:
        _group, add_flags, _del_flags, body = av
        return "(" + _seq(body, ci or bool(add_flags & re.IGNORECASE)) + ")"
    if op is sre_c.BRANCH:
        return "(" + "|".join(_seq(b, ci) for b in av[1]) + ")"
    if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, sre_c.POSSESSIVE_REPEAT):
        low, high, body = av
        inner = _seq(body, ci)
        if len(body) != 1 or body[0][0] in (sre_c.BRANCH, sre_c.MAX_REPEAT, sre_c.MIN_REPEAT):
            inner = f"({inner})"
        if (low, high) == (0, sre_c.MAXREPEAT):
            return inner + "*"
        if (low, high) == (1, sre_c.MAXREPEAT):
            return inner + "+"
        if (low, high) == (0, 1):
            return inner + "?"
        return inner + (f"{{{low},}}" if high == sre_c.MAXREPEAT else f"{{{low},{high}}}")
    return _fail(op)


def _bracket_items(items: list[tuple[Any, Any]], ci: bool) -> str:
    """Inside a bracket expression: ']' first, '-' last, '^' not first; no backslash escapes."""
    parts: list[str] = []
    close = dash = caret = False
    for op, av in items:
        if op is sre_c.LITERAL:
            chars = {chr(av).lower(), chr(av).upper()} if ci and chr(av).isalpha() else {chr(av)}
            for ch in sorted(chars):
                if ch == "]":
                    close = True
                elif ch == "-":
                    dash = True
                elif ch == "^":
                    caret = True
                elif ch == "\n" or not ch.isprintable():
                    raise _Unsupported(ch)
                else:
                    parts.append(ch)
        elif op is sre_c.RANGE:
            lo, hi = chr(av[0]), chr(av[1])
            if not (lo.isalnum() and hi.isalnum()):
                raise _Unsupported(f"{lo}-{hi}")
            parts.append(f"{lo}-{hi}")
            if ci and lo.isalpha() and hi.isalpha():
                parts.append(f"{lo.swapcase()}-{hi.swapcase()}")
        elif op is sre_c.CATEGORY and av in _CLASS_OF:
            parts.append(_CLASS_OF[av])
        else:
            raise _Unsupported(op)  # a negated category inside a class has no ERE spelling
    return ("]" if close else "") + "".join(parts) + ("^" if caret else "") + ("-" if dash else "")


def _fail(what: object) -> str:
    raise _Unsupported(str(what))
