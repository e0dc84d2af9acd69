"""Hyperscan engine (extra ``denpex[fast]``): one multi-pattern pass over each chunk.

Hyperscan reports where each pattern's match ends; the line around that offset is then
confirmed with the signature's own Python regex, so a hit means exactly what it means to
the stdlib engine (Hyperscan's ``[^x]`` and ``\\s`` may run across a newline inside a chunk;
Python, looking at one line, decides). Patterns Hyperscan cannot compile fall back to the
stdlib engine for their signatures only. The compiled database is cached on disk keyed by
the catalog's hash, so a CLI run does not pay the compile time twice.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from denpex.catalog.model import Signature
from denpex.catalog.regex_subset import can_match_newline, trim_trailing_repeats
from denpex.scan.engine import Hit, ReEngine

hyperscan: Any
try:  # optional extra
    import hyperscan
except ImportError:  # pragma: no cover - exercised where the extra is absent
    hyperscan = None


def available() -> bool:
    return hyperscan is not None


def _cache_dir() -> Path:
    """Compiled databases are a cache, not state: $DENPEX_CACHE, else the XDG cache folder."""
    if os.environ.get("DENPEX_CACHE"):
        return Path(os.environ["DENPEX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "denpex"


class HyperscanEngine:
    name = "hyperscan"

    def __init__(self, signatures: Sequence[Signature], cache: bool = True) -> None:
        if hyperscan is None:
            raise RuntimeError("hyperscan is not installed (pip install 'denpex[fast]')")
        self.signatures = list(signatures)
        exprs: list[bytes] = []
        flags: list[int] = []
        owners: list[int] = []
        confirm: list[bool] = []
        for idx, sig in enumerate(self.signatures):
            f = hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_UTF8  # "." is one code point, as in re
            if sig.case_insensitive:
                f |= hyperscan.HS_FLAG_CASELESS
            for pat in sig.patterns:
                exprs.append(trim_trailing_repeats(pat).encode())
                flags.append(f)
                owners.append(idx)
                confirm.append(can_match_newline(pat))
        self._owner = owners
        self._confirm = confirm
        self.fallback_sigs: set[int] = set()
        self.db = self._load_or_compile(exprs, flags, owners, cache)
        self._fallback = ReEngine([self.signatures[i] for i in sorted(self.fallback_sigs)])
        self._fallback_ids = sorted(self.fallback_sigs)

    def _load_or_compile(self, exprs: list[bytes], flags: list[int], owners: list[int], cache: bool) -> Any:
        key = hashlib.sha256(b"\0".join(e + b"|" + str(f).encode() for e, f in zip(exprs, flags, strict=True)))
        version = getattr(hyperscan, "__version__", "x")
        path = _cache_dir() / f"hs-{version}-{key.hexdigest()[:24]}.db"
        bad_path = path.with_suffix(".bad")
        if cache and path.exists():
            try:
                db = hyperscan.loadb(path.read_bytes(), mode=hyperscan.HS_MODE_BLOCK)
                db.scratch = hyperscan.Scratch(db)  # a deserialised database has none
                if bad_path.exists():
                    self.fallback_sigs = {int(x) for x in bad_path.read_text().split()}
                return db
            except Exception:  # a stale or corrupt cache is recompiled, never trusted
                pass
        ids = list(range(len(exprs)))
        keep_e, keep_f, keep_i = list(exprs), list(flags), ids
        while True:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            try:
                db.compile(expressions=keep_e, ids=keep_i, elements=len(keep_e), flags=keep_f)
                break
            except hyperscan.error as exc:
                bad = _bad_index(str(exc))
                if bad is None or bad >= len(keep_e):
                    # The message did not say which expression: find every bad one alone.
                    bad_set = [i for i, (e, f) in enumerate(zip(keep_e, keep_f, strict=True)) if not _compiles(e, f)]
                    if not bad_set:
                        raise
                else:
                    bad_set = [bad]
                for b in sorted(bad_set, reverse=True):
                    self.fallback_sigs.add(owners[keep_i[b]])
                    del keep_e[b], keep_f[b], keep_i[b]
                if not keep_e:
                    raise
        # A signature with any pattern Hyperscan rejected runs wholly on the stdlib engine.
        if cache:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                tmp.write_bytes(hyperscan.dumpb(db))
                os.replace(tmp, path)
                if self.fallback_sigs:
                    bad_path.write_text(" ".join(str(i) for i in sorted(self.fallback_sigs)))
            except OSError:
                pass  # a read-only home only costs the compile next time
        return db

    def scan(self, chunk: str) -> Iterator[Hit]:
        data = chunk.encode("utf-8", "surrogateescape")
        hits: dict[tuple[int, int], bool] = {}
        owner = self._owner
        confirm = self._confirm
        skip = self.fallback_sigs

        def on_match(pid: int, start: int, end: int, flags: int, ctx: object) -> None:
            sig = owner[pid]
            if sig not in skip:
                key = (end, sig)
                hits[key] = hits.get(key, True) and confirm[pid]

        self.db.scan(data, match_event_handler=on_match)
        # (line start, signature) -> whether every hit on it still needs a look by ``re``
        per_line: dict[tuple[int, int], bool] = {}
        for (end, sig), need in hits.items():
            pos = max(end - 1, 0)  # the match's last byte; a newline there ends the line before it
            ls_b = data.rfind(b"\n", 0, pos) + 1 if data[pos:pos + 1] == b"\n" else data.rfind(b"\n", 0, pos + 1) + 1
            key = (ls_b, sig)
            per_line[key] = per_line.get(key, True) and need
        ascii_text = len(data) == len(chunk)
        results: list[Hit] = []
        sigs = self.signatures
        byte_at, char_at = 0, 0  # running byte -> character offset map, for non-ASCII chunks
        for (ls_b, sig), need in sorted(per_line.items()):
            le_b = data.find(b"\n", ls_b)
            if le_b < 0:
                le_b = len(data)
            if ascii_text:
                ls, le = ls_b, le_b
            else:
                char_at += len(data[byte_at:ls_b].decode("utf-8", "surrogateescape"))
                byte_at = ls_b
                ls = char_at
                le = ls + len(data[ls_b:le_b].decode("utf-8", "surrogateescape"))
            if not need or sigs[sig].matches(chunk[ls:le]):
                results.append((ls, le, sig))
        if self._fallback_ids:
            for ls, le, idx in self._fallback.scan(chunk):
                results.append((ls, le, self._fallback_ids[idx]))
        results.sort()
        yield from results


def _compiles(expr: bytes, flags: int) -> bool:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[expr], ids=[0], elements=1, flags=[flags])
        return True
    except hyperscan.error:
        return False


def _bad_index(message: str) -> int | None:
    """Hyperscan names the failing expression: 'Expression 17 ...' / '... at index 17'."""
    import re

    m = re.search(r"(?:Expression|expression|index)\D{0,12}(\d+)", message)
    return int(m.group(1)) if m else None
