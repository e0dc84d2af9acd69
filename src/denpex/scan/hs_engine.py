"""Hyperscan engine (extra ``denpex[fast]``): one multi-pattern pass over each block.

Each pattern is compiled as ``(?:P)[^\\n]*\\n``, so Hyperscan reports it at most once per line,
at the line's end, instead of at every place a match could end. Everything runs byte-wise on
the raw bytes (no UTF-8 check of the input). Patterns are rewritten so that on a line of ASCII
text they accept exactly what ``re`` accepts (no atom crosses the newline, ``\\s`` as ``re``
means it) and on other lines at least that (an atom that takes any character takes one to
four high bytes): a hit needs the signature's Python regex only on a line that is not ASCII.
A pattern that cannot be rewritten so has every hit confirmed. Patterns Hyperscan cannot compile fall back to
the stdlib engine for their signatures only. The compiled database is cached on disk, keyed
by the patterns, so a CLI run does not pay the compile time twice.

A second, "quiet" database differs only in that context signatures that flood (rank maps,
network facts) report once per scan: most of a block is scanned with it, and the main
database lists a flood's lines only from where one still wanted turns up (see ``_limited_hits``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import re
import sys
from collections import deque
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from denpex.cache import cache_dir, write_atomic
from denpex.catalog.model import Signature
from denpex.catalog.regex_subset import (
    can_match_newline,
    key_piece,
    line_exact_for_bytes,
    literal_sets_for_prefilter,
    needs_utf8,
    trim_trailing_repeats,
    widen_for_bytes,
)
from denpex.scan.engine import Candidate, Limits, ReEngine

hyperscan: Any
try:  # optional extra
    import hyperscan
except ImportError:  # pragma: no cover - exercised where the extra is absent
    hyperscan = None


def available() -> bool:
    return hyperscan is not None


class HyperscanEngine:
    name = "hyperscan"

    def __init__(self, signatures: Sequence[Signature], cache: bool = True) -> None:
        if hyperscan is None:
            raise RuntimeError("hyperscan is not installed (pip install 'denpex[fast]')")
        self.signatures = list(signatures)
        progress = {i for i, sig in enumerate(self.signatures) if sig.category == "progress"}
        # A progress signature that prints every training step (its only field is the step
        # number, where a checkpoint or epoch line names more) reports once per block in the
        # main database (that it occurs); a database of its own then finds its lines in the
        # stretches the scanner asks for. Rarer progress lines (epochs, checkpoints) are listed.
        per_step = {i for i in progress
                    if {n for rx in self.signatures[i].compiled_extract for n in rx.groupindex} <= PER_STEP_FIELDS}
        self.listed_progress = frozenset(progress - per_step)
        # The per-step signatures are left out of the main database: their words ("iteration",
        # "step") come several times on most lines of a training log, and Hyperscan pays for
        # each even once a pattern has reported (a tenth of the whole scan on the bench corpus).
        # The scanner searches windows of every block for them with their own databases, which
        # it did anyway to pick the lines it keeps.
        self._per_step = per_step
        self._main_sigs = set(range(len(self.signatures))) - per_step
        self.db, self._owner, self._confirm, fallback = self._database(self._main_sigs, set(), cache, markers=True)
        self.markers: set[str] = set()
        # One database per progress signature: a sparse one searched across a whole block must
        # not drag every dense one's lines through Python with it.
        self._p_dbs = {i: self._database({i}, set(), cache) for i in sorted(per_step)}
        self.fallback_sigs = fallback.union(*(p[3] for p in self._p_dbs.values()))
        self.searched_progress = frozenset(per_step - self.fallback_sigs)
        # Per searched signature, the literals a block must hold for any of its patterns to match
        # (see ``may_hold``): a signature absent from a block then costs a few byte searches
        # instead of a pass of its database over the whole block.
        self._needs = {i: _block_needs(self.signatures[i]) for i in self.searched_progress}
        self._owner = [-1 if o in self.fallback_sigs and o >= 0 else o for o in self._owner]
        self._fallback_ids = sorted(self.fallback_sigs)
        self._fallback = ReEngine([self.signatures[i] for i in self._fallback_ids]) if self._fallback_ids else None
        # Per signature, the main database's patterns whose hits need no confirmation (on any
        # line, or on an ASCII line): only those can be left out under a limit, since a hit
        # still to confirm may turn out not to count.
        self._exact_pids: dict[int, list[int]] = {}
        self._confirmed_pids: dict[int, list[int]] = {}  # the others: re must confirm every hit
        self._ascii_exact = frozenset(pid for pid, need in enumerate(self._confirm) if need == CONFIRM_NON_ASCII)
        for pid, (sig, need) in enumerate(zip(self._owner, self._confirm, strict=True)):
            if sig >= 0 and need != CONFIRM_ALWAYS:
                self._exact_pids.setdefault(sig, []).append(pid)
            elif sig >= 0:
                self._confirmed_pids.setdefault(sig, []).append(pid)
        self._limited_cache: dict[tuple[int, ...], tuple[list[int], list[int]]] = {}
        # Signatures whose lines come by the thousand and are wanted only up to a cap (rank
        # maps, network facts): blocks are scanned with the "quiet" database, where each
        # reports at most once, and with the main database where they still want lines.
        # Built on first use.
        self._floods = frozenset(i for i, s in enumerate(self.signatures)
                                 if s.role == "context" and s.category != "progress" and i not in self.fallback_sigs)
        self._cache = cache
        self._quiet: Any = None

    def _database(self, only: set[int] | None, single: set[int], cache: bool,
                  markers: bool = False) -> tuple[Any, list[int], list[int], set[int]]:
        chosen = [(i, s) for i, s in enumerate(self.signatures) if only is None or i in only]
        # Keyed by the patterns and the code that rewrites them, so a cached run skips the
        # pattern analysis too and a changed rewrite never meets a database built by the old one.
        key = hashlib.sha256(repr([(_FORMAT, markers, i, s.case_insensitive, s.patterns, s.end_of_source, i in single)
                                   for i, s in chosen]).encode() + _code_hash())
        base = cache_dir() / f"hs-{getattr(hyperscan, '__version__', 'x')}-{key.hexdigest()[:24]}"
        db_path, meta_path = base.with_name(base.name + ".db"), base.with_name(base.name + ".json")
        loaded = _load(db_path, meta_path) if cache else None
        if loaded is None:
            db, owners, confirm, fallback = _compile(chosen, single, markers)
            if cache:
                write_atomic(db_path, hyperscan.dumpb(db))
                meta = {"owners": owners, "confirm": confirm, "fallback": sorted(fallback)}
                write_atomic(meta_path, json.dumps(meta).encode())
        else:
            db, owners, confirm, fallback = loaded
        # Patterns of a signature that falls back never report: one engine decides per signature.
        return db, [-1 if o in fallback and o >= 0 else o for o in owners], confirm, fallback

    def scan(self, block: bytes, limits: Limits | None = None) -> list[Candidate]:
        self.markers = set()
        hits = self._limited_hits(block, limits) if limits else _all_hits(self.db, block)
        out = self._candidates(hits, self._owner, self._confirm, block, 0, self.markers)
        if self._fallback is not None:
            ids = self._fallback_ids
            out.extend((ls, le, ids[i], need) for ls, le, i, need in self._fallback.scan(block))
            out.sort()
        return out

    def _limited_pids(self, limits: Limits) -> tuple[list[int], list[int]]:
        """Per pattern, the limited signature it counts for (-1: not limited), built once per set of signatures.

        The second list names the flood signature of each pattern whose hits re must confirm:
        those are confirmed here while the flood still wants lines and dropped once it has its
        fill, so a capped flood costs nothing past its cap whatever its patterns.
        A scanner passes the same signatures on every block, only their counts change.
        """
        key = tuple(limits)
        got = self._limited_cache.get(key)
        if got is None:
            limited = [-1] * len(self._owner)
            verified = [-1] * len(self._owner)
            for sig in limits:
                for pid in self._exact_pids.get(sig, ()):
                    limited[pid] = sig
                if sig in self._floods:
                    for pid in self._confirmed_pids.get(sig, ()):
                        verified[pid] = sig
            got = self._limited_cache[key] = (limited, verified)
        return got

    def progress_candidates(self, block: bytes, start: int, end: int, sig: int) -> list[Candidate]:
        if sig in self.fallback_sigs:
            assert self._fallback is not None
            ids = self._fallback_ids
            return [(ls, le, ids[i], need) for ls, le, i, need
                    in self._fallback.progress_candidates(block, start, end, ids.index(sig))]
        if sig in self.listed_progress:  # scan() lists these: the main database has every line
            found = self._candidates(_all_hits(self.db, block, start, end), self._owner, self._confirm, block, 0)
            return [c for c in found if c[2] == sig]
        db, owner, confirm, _ = self._p_dbs[sig]
        return self._candidates(_all_hits(db, block, start, end), owner, confirm, block, 0)

    def may_hold(self, block: bytes, sig: int) -> bool:
        needs = self._needs.get(sig)
        if needs is None:
            return True
        # Some pattern must find, in each of its literal sets, one literal somewhere in the block.
        return any(all(any(lit in block for lit in lits) for lits in sets) for sets in needs)

    def _quiet_db(self) -> Any:
        """The main database with every flood signature reporting at most once per scan.

        Same expressions in the same order, so pattern ids, owners and confirmations are the
        main database's; None when that does not hold (never seen) or there is nothing to quiet.
        """
        if self._quiet is None:
            db, owner, confirm, fallback = self._database(self._main_sigs, set(self._floods), self._cache, markers=True)
            same = owner == self._owner and confirm == self._confirm and fallback <= self.fallback_sigs
            self._quiet = db if same and self._floods else False
        return self._quiet or None

    def _limited_hits(self, block: bytes, limits: Limits) -> list[tuple[int, int]]:
        """(end, pattern) of every hit the caller can use under ``limits``, in order.

        A limited signature's exact hits: the first ``head`` lines are listed, then only the
        latest ``tail`` are kept; the lines between are dropped as they arrive, so a flood never
        reaches Python's loops. Several patterns of one signature on the same line count once
        (a suffixed pattern ends past the newline, a "$" one at it).

        Most of a block is scanned with the quiet database, where flood signatures report
        once: that spares Hyperscan its work on their lines and Python a callback for each.
        A quiet scan stops at the first line of a flood signature that still wants lines; what
        it found before that line stands (every other pattern reports there as in the main
        database), and from that line on a stretch is scanned with the main database, which
        lists the flood's lines, before the next quiet scan. A flood that keeps stopping the
        quiet scans close to where they start gets longer stretches, doubling each time.
        """
        limited, verified = self._limited_pids(limits)
        sigs = self.signatures
        hits: list[tuple[int, int]] = []
        append = hits.append
        head = {sig: h for sig, (h, _) in limits.items()}
        tails: dict[int, deque[tuple[int, int]]] = {sig: deque(maxlen=t) for sig, (_, t) in limits.items() if t > 0}
        last_line: dict[int, int] = {}
        check_ascii = self._ascii_exact if not block.isascii() else frozenset()
        rfind = block.rfind
        base = 0  # where the stretch being scanned starts in the block
        size = len(block)

        shift = 0  # what turns an end Hyperscan reports into an offset in the block (see ``_pieces``)

        def on_match(pid: int, start: int, end: int, flags: int, ctx: object) -> None:
            end += shift
            sig = limited[pid]
            if sig < 0:
                sig = verified[pid]
                if sig < 0:
                    append((end, pid))  # not limited
                    return
                if head[sig] <= 0:
                    return  # a flood that has had its fill
                le = end - 1 if end and block[end - 1] == 10 else block.find(b"\n", end)
                le = size if le < 0 else le
                if not sigs[sig].matches(block[rfind(b"\n", 0, le) + 1:le].decode("utf-8", "replace")):
                    return
            elif pid in check_ascii and not block[rfind(b"\n", 0, end - 1) + 1:end].isascii():
                append((end, pid))  # a hit that re must still confirm
                return
            line = end if end and block[end - 1] == 10 else end + 1
            if last_line.get(sig) == line:
                return
            last_line[sig] = line
            if head[sig] > 0:
                head[sig] -= 1
                append((end, pid))
            elif sig in tails:
                tails[sig].append((end, pid))

        owner = self._owner
        floods = self._floods
        quiet = self._quiet_db() if floods else None
        width = QUIET_FIRST
        found: list[tuple[int, int]] = []  # one quiet scan's hits
        stop_at: list[int] = []  # where it stopped

        def on_quiet(pid: int, start: int, end: int, flags: int, ctx: object) -> bool:
            sig = owner[pid]
            if sig in floods and head.get(sig, 1) > 0:
                stop_at.append(end + shift)
                return True  # the main database must list this flood's lines from here
            found.append((end + shift, pid))
            return False

        while base < size:
            if quiet is not None:
                found.clear()
                stop_at.clear()
                with contextlib.suppress(hyperscan.ScanTerminated):
                    for buf, piece_shift in _pieces(block, base, size):
                        shift = piece_shift  # read by the handlers
                        quiet.scan(buf, match_event_handler=on_quiet)
                # ``found`` holds block offsets: on_match is handed them less the shift it adds.
                if not stop_at:
                    for end, pid in found:
                        on_match(pid, 0, end - shift, 0, None)
                    break
                # The stopping line and everything after it are the main database's to scan.
                stop = stop_at[0]
                line_start = rfind(b"\n", base, stop - 1 if block[stop - 1] == 10 else stop) + 1 or base
                for end, pid in found:
                    if end <= line_start:
                        on_match(pid, 0, end - shift, 0, None)
                width = 2 * width if line_start - base < width else QUIET_FIRST
                base = line_start
            stop = size if quiet is None or size - base <= width else (block.find(b"\n", base + width) + 1 or size)
            for buf, piece_shift in _pieces(block, base, stop):
                shift = piece_shift
                self.db.scan(buf, match_event_handler=on_match)
            base = stop
        kept_tails = [hit for tail in tails.values() for hit in tail]
        if kept_tails:
            hits.extend(kept_tails)
            hits.sort()
        return hits

    @staticmethod
    def _candidates(hits: list[tuple[int, int]], owner: list[int], confirm: list[int], block: bytes, shift: int,
                    markers: set[str] | None = None) -> list[Candidate]:
        """Candidates from (end, pattern) hits in order of where they end."""
        find = block.find
        # Line end -> {signature: the least confirmation any hit on that line asks for}. Hits
        # come in order of where they end, so a line's hits arrive together.
        lines: list[tuple[int, dict[int, int]]] = []
        cur_le = -1
        cur: dict[int, int] = {}
        ordered = True
        for end, pid in hits:
            sig = owner[pid]
            if sig < 0:
                if sig <= _MARKER_BASE and markers is not None:
                    markers.add(MARKERS[_MARKER_BASE - sig][0])
                continue
            # A suffixed pattern ends just past the newline; a "$" one ends at it (or the block's end).
            le = end - 1 if end and block[end - 1] == 10 else find(b"\n", end)
            if le != cur_le:
                if le < cur_le:
                    ordered = False
                cur_le, cur = le, {}
                lines.append((le, cur))
            need = confirm[pid]
            if cur.get(sig, CONFIRM_ALWAYS + 1) > need:
                cur[sig] = need
        if not ordered:  # never seen; kept so that correctness does not rest on the report order
            merged: dict[int, dict[int, int]] = {}
            for le, found in lines:
                into = merged.setdefault(le, {})
                for sig, need in found.items():
                    into[sig] = min(need, into.get(sig, need))
            lines = sorted(merged.items())
        out: list[Candidate] = []
        rfind = block.rfind
        for le, found in lines:
            ls = rfind(b"\n", 0, le) + 1
            ascii_line: bool | None = None
            for sig in sorted(found):
                need = found[sig]
                if need == CONFIRM_NON_ASCII:
                    if ascii_line is None:
                        ascii_line = block[ls:le].isascii()
                    confirm_it = not ascii_line
                else:
                    confirm_it = need == CONFIRM_ALWAYS
                out.append((ls + shift, le + shift, sig, confirm_it))
        return out


def _block_needs(sig: Signature) -> list[list[tuple[bytes, ...]]] | None:
    """Per pattern of ``sig``, literal sets of which a block must hold one of each; None: no test.

    Only a case-sensitive signature is tested (a block is searched as written), and only if
    every pattern has a literal set: a pattern without one may match anywhere.
    """
    if sig.case_insensitive:
        return None
    needs: list[list[tuple[bytes, ...]]] = []
    for pat in sig.patterns:
        _, kept_case = literal_sets_for_prefilter(pat, False)
        if not kept_case:
            return None
        needs.append([tuple(lit.encode("utf-8") for lit in sorted(lits)) for lits in kept_case])
    return needs


def _all_hits(db: Any, block: bytes, start: int = 0, stop: int | None = None) -> list[tuple[int, int]]:
    """(end, pattern) of every report on the lines of ``block[start:stop]``, in the order Hyperscan gives them.

    Ends are offsets in the block.
    """
    found: list[tuple[int, int]] = []
    for buf, shift in _pieces(block, start, len(block) if stop is None else stop):
        db.scan(buf, match_event_handler=lambda pid, s, end, flags, ctx, shift=shift: found.append((end + shift, pid)))
    return found


def _pieces(block: bytes, start: int, stop: int) -> Iterator[tuple[bytes | memoryview, int]]:
    """``block[start:stop]`` as buffers that each begin with a newline, each with what turns its ends into offsets.

    Anchored patterns look for the newline before a line (``newline_anchor``). A stretch
    that starts inside the block has it as the byte before; at the block's start only the
    first line lacks one, and only that line is copied behind a newline.
    """
    if stop <= start:
        return
    view = memoryview(block)
    if start > 0:
        yield view[start - 1:stop], start - 1
        return
    first = block.find(b"\n", 0, stop) + 1 or stop
    yield b"".join((b"\n", view[:first])), -1
    if first < stop:
        yield view[first - 1:stop], first - 1


def newline_anchor(expr: str) -> str:
    """``expr`` with a leading line-start anchor written as the newline before the line.

    Hyperscan runs a database about a fifth faster when its anchored patterns begin with a
    literal newline instead of a multi-line ``^`` (measured on the bench corpus: 0.157 s ->
    0.127 s for 64 MiB; 8% over the whole 1 GiB), and the lines it reports are the same as long
    as every scanned stretch starts behind a newline (``_pieces``). Only a ``^`` that opens the
    expression (after any opening groups) is rewritten: one inside an alternative keeps its
    meaning, which a scan behind a newline also keeps.
    """
    i = 0
    while expr.startswith("(?:", i):
        i += 3
    return expr[:i] + "\\n" + expr[i + 1:] if expr.startswith("^", i) else expr


_LEADING_SPACE = re.compile(r"^((?:\(\?:)*)\^(?:\\s|\[[^\]]*\]| )[*+]")


def unanchor_leading_space(pattern: str) -> str | None:
    """``pattern`` without a leading ``^\\s*`` (``^ +``, ``^[ \\t]*``), or None when it has none.

    Hyperscan 5.4 (the ``hyperscan`` wheel) drops matches when two patterns of one database
    both begin with a line-start anchor and an unbounded repeat of spaces: with
    ``^\\s*=+ +Invalid __global__ ...`` (compute-sanitizer) in the database, ``^ +eval_loss +=
    +nan`` no longer matched the HF Trainer's metrics table after another indented line, though
    each alone did. Without the anchor Hyperscan looks for the rest anywhere in the line (more
    lines, never fewer) and ``re`` decides on each with the whole pattern. A rest of under
    three characters is left anchored: alone it would be reported on nearly every line.
    """
    m = _LEADING_SPACE.match(pattern)
    if m is None or len(pattern) - m.end() < 3:
        return None
    return pattern[:m.start()] + m.group(1) + pattern[m.end():]


# Fields of progress lines printed every logging step: the HF Trainer's metrics dict names the
# epoch on every one, so an epoch signature floods like a step counter.
PER_STEP_FIELDS = frozenset({"step", "epoch"})
QUIET_FIRST = 8 * 1024  # scanned with the main database after a wanted flood line stopped a quiet scan

# Launcher prefixes the scanner collects ranks from: Hyperscan says in passing whether a block
# has any, so the scanner's own regexes run only where they will find something.
MARKERS = (("rank", rb"\[(?:rank|default)"), ("mpi", rb"\]<std"))
_MARKER_BASE = -2  # owner ids -2, -3, ... stand for MARKERS[0], MARKERS[1], ...
_FORMAT = 8  # bump when the expressions built from a pattern change
# How a pattern's hits are confirmed by re: never, on lines that are not ASCII, always.
CONFIRM_NEVER, CONFIRM_NON_ASCII, CONFIRM_ALWAYS = 0, 1, 2


@functools.cache
def _code_hash() -> bytes:
    """The source of the modules that turn patterns into Hyperscan expressions."""
    from denpex.catalog import regex_subset

    digest = hashlib.sha256()
    for module in (regex_subset, sys.modules[__name__]):
        with contextlib.suppress(OSError, TypeError):
            digest.update(Path(module.__file__ or "").read_bytes())
    return digest.digest()


def _load(db_path: Path, meta_path: Path) -> tuple[Any, list[int], list[int], set[int]] | None:
    """A cached database and what goes with it; anything unreadable means compile afresh."""
    try:
        meta = json.loads(meta_path.read_bytes())
        db = hyperscan.loadb(db_path.read_bytes(), mode=hyperscan.HS_MODE_BLOCK)
        db.scratch = hyperscan.Scratch(db)  # a deserialised database has none
        return db, [int(x) for x in meta["owners"]], [int(x) for x in meta["confirm"]], set(meta["fallback"])
    except Exception:  # a stale or corrupt cache is recompiled, never trusted
        return None


def _compile(chosen: list[tuple[int, Signature]], single: set[int],
             markers: bool = False) -> tuple[Any, list[int], list[int], set[int]]:
    exprs: list[bytes] = []
    flags: list[int] = []
    owners: list[int] = []
    confirm: list[int] = []
    if markers:
        for i, (_, rx) in enumerate(MARKERS):
            exprs.append(rx)
            flags.append(hyperscan.HS_FLAG_SINGLEMATCH)
            owners.append(_MARKER_BASE - i)
            confirm.append(CONFIRM_NEVER)
    unfit: set[int] = set()
    for idx, sig in chosen:
        if sig.end_of_source:
            continue  # the scanner tests these on a source's last lines only
        built = []
        for pat in sig.patterns:
            loose = unanchor_leading_space(pat)
            expr = trim_trailing_repeats(pat if loose is None else loose)
            # Only the most selective piece of "A.*B" is looked for; re decides on its lines.
            piece = key_piece(expr)
            expr = piece if piece is not None else expr
            exact = line_exact_for_bytes(expr)
            if exact is not None:
                need = CONFIRM_NEVER if exact == expr else CONFIRM_NON_ASCII
                expr = exact
            else:
                need = CONFIRM_ALWAYS if can_match_newline(pat) else CONFIRM_NEVER
                if needs_utf8(expr):
                    # Byte-wise with room for multi-byte characters; re on the line decides.
                    wide = widen_for_bytes(expr)
                    if wide is None:
                        unfit.add(idx)
                        break
                    expr, need = wide, CONFIRM_ALWAYS
            if piece is not None or loose is not None:
                need = CONFIRM_ALWAYS
            f = hyperscan.HS_FLAG_MULTILINE
            if idx in single:
                f |= hyperscan.HS_FLAG_SINGLEMATCH
            if sig.case_insensitive:
                f |= hyperscan.HS_FLAG_CASELESS
            if "$" not in expr:
                expr = f"(?:{expr})[^\\n]*\\n"
            expr = newline_anchor(expr)
            built.append((expr.encode("utf-8"), f, need))
        else:
            for expr_b, f, need in built:
                exprs.append(expr_b)
                flags.append(f)
                owners.append(idx)
                confirm.append(need)
    fallback: set[int] = set(unfit)
    keep_e, keep_f, keep_i = list(exprs), list(flags), list(range(len(exprs)))
    while True:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        try:
            db.compile(expressions=keep_e, ids=keep_i, elements=len(keep_e), flags=keep_f)
            return db, owners, confirm, fallback
        except hyperscan.error as exc:
            bad = _bad_index(str(exc))
            if bad is None or bad >= len(keep_e):
                # The message did not say which expression: find every bad one alone.
                bad_set = [i for i, (e, f) in enumerate(zip(keep_e, keep_f, strict=True)) if not _compiles(e, f)]
                if not bad_set:
                    raise
            else:
                bad_set = [bad]
            # A signature with any pattern Hyperscan rejected runs wholly on the stdlib engine.
            for b in sorted(bad_set, reverse=True):
                if owners[keep_i[b]] < 0:
                    raise  # a marker of our own: never expected to fail
                fallback.add(owners[keep_i[b]])
                del keep_e[b], keep_f[b], keep_i[b]
            if not keep_e:
                raise


def _compiles(expr: bytes, flags: int) -> bool:
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        db.compile(expressions=[expr], ids=[0], elements=1, flags=[flags])
        return True
    except hyperscan.error:
        return False


def _bad_index(message: str) -> int | None:
    """Hyperscan names the failing expression: 'Expression 17 ...' / '... at index 17'."""
    m = re.search(r"(?:Expression|expression|index)\D{0,12}(\d+)", message)
    return int(m.group(1)) if m else None
