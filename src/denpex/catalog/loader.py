"""Load and validate the signature catalog.

The bundled catalog lives in ``rules/<family>/*.toml``; a site adds or overrides signatures
without forking by pointing ``DENPEX_CATALOG_PATH`` at folders of the same shape (a site
signature with an existing id replaces the bundled one). Everything is validated the same way,
and the catalog's sha256 covers every file that was loaded, so an incident says exactly which
rules produced it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tomllib
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from denpex import __version__
from denpex.cache import cache_dir, write_atomic
from denpex.catalog.model import RMA_LEVELS, ROLES, SEVERITIES, STATUSES, WHO, Signature, Step
from denpex.catalog.regex_subset import subset_violations
from denpex.owners import OWNERS

RULES_DIR = Path(__file__).parent / "rules"
REDIRECTS_FILE = "_redirects.toml"
_ID_RX = re.compile(r"^[a-z0-9_]+(?:\.[a-z0-9_]+)+$")
_REQUIRED = ("id", "title", "patterns", "owner", "category", "severity", "role", "explanation", "steps",
             "references")
_KNOWN = set(_REQUIRED) | {"case_insensitive", "extract", "priority", "rma", "clear_when", "missing",
                           "status", "since", "detail_follows", "end_of_source",
                           "clears_next_failure", "clears_prior_failure", "clears_line", "frame_owner",
                           "quote_line_above"}


class CatalogError(Exception):
    """A catalog file is unreadable or a signature breaks a convention."""


@dataclass
class Catalog:
    signatures: tuple[Signature, ...]
    sha256: str
    files: tuple[Path, ...]
    redirects: dict[str, str] = field(default_factory=dict)
    by_id: dict[str, Signature] = field(default_factory=dict)
    dirs: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        self.by_id = {s.id: s for s in self.signatures}

    def get(self, sig_id: str) -> Signature | None:
        """Look a signature up by id, following renames through the redirect table."""
        seen: set[str] = set()
        while sig_id in self.redirects and sig_id not in seen:
            seen.add(sig_id)
            sig_id = self.redirects[sig_id]
        return self.by_id.get(sig_id)

    @property
    def families(self) -> list[str]:
        return sorted({s.family for s in self.signatures})


def catalog_dirs() -> list[Path]:
    dirs = [RULES_DIR]
    extra = os.environ.get("DENPEX_CATALOG_PATH", "")
    dirs.extend(Path(p) for p in extra.split(os.pathsep) if p.strip())
    return dirs


def load_catalog(dirs: list[Path] | None = None, use_cache: bool = True) -> Catalog:
    """The validated catalog; a copy validated before is reused while its files are unchanged.

    Parsing and validating ~900 signatures costs about half a second, more than scanning a
    large log takes, so the validated form is cached keyed by the sha256 of every file.
    """
    dirs = catalog_dirs() if dirs is None else dirs
    digest = hashlib.sha256()
    listing: list[tuple[Path, Path, bytes]] = []
    for root in dirs:
        if not root.is_dir():
            raise CatalogError(f"catalog folder not found: {root}")
        for path in sorted(root.rglob("*.toml")):
            rel = path.relative_to(root).as_posix()
            try:
                raw = path.read_bytes()
            except OSError as exc:
                raise CatalogError(f"{path}: {exc.strerror or exc}") from exc
            digest.update(rel.encode() + b"\0" + raw + b"\0")
            listing.append((root, path, raw))
    sha = digest.hexdigest()
    files = tuple(p for _, p, _ in listing)
    # Signatures record the file they came from, so the same files elsewhere are another entry.
    where = hashlib.sha256("\0".join([sha, *map(str, dirs)]).encode()).hexdigest()
    cache_path = cache_dir() / f"catalog-{__version__}-{_CACHE_FORMAT}-{where[:32]}.json"
    if use_cache:
        cached = _read_cache(cache_path, sha)
        if cached is not None:
            sigs, redirects = cached
            return Catalog(signatures=sigs, sha256=sha, files=files, redirects=redirects, dirs=tuple(dirs))
    sigs, redirects = _validate(dirs, listing)
    if use_cache:
        write_atomic(cache_path, _dump_cache(sha, sigs, redirects))
    return Catalog(signatures=sigs, sha256=sha, files=files, redirects=redirects, dirs=tuple(dirs))


_CACHE_FORMAT = 8
_DIGITLESS = bytes(range(256))  # a digit shape is this table with the digits' entries replaced


def _dump_cache(sha: str, sigs: tuple[Signature, ...], redirects: dict[str, str]) -> bytes:
    rows = []
    for sig in sigs:
        row = {f.name: getattr(sig, f.name) for f in fields(Signature)}
        row["steps"] = [asdict(st) for st in sig.steps]
        # Costly to derive (a parse of every pattern, ten ways) and needed by every scan that
        # confirms the signature: the digits it tells apart are kept with it.
        row["digit_map"] = sig.digit_shape[48:58].decode("ascii")
        rows.append(row)
    return json.dumps({"sha256": sha, "signatures": rows, "redirects": redirects}).encode()


def _read_cache(path: Path, sha: str) -> tuple[tuple[Signature, ...], dict[str, str]] | None:
    try:
        doc = json.loads(path.read_bytes())
        if doc.get("sha256") != sha:
            return None
        sigs = []
        for row in doc["signatures"]:
            row["steps"] = tuple(Step(**st) for st in row["steps"])
            for key in _TUPLE_FIELDS:
                row[key] = tuple(row[key])
            digit_map = row.pop("digit_map").encode("ascii")
            if len(digit_map) != 10 or not digit_map.isdigit():
                return None
            sig = Signature(**row)
            sig.__dict__["digit_shape"] = _DIGITLESS[:48] + digit_map + _DIGITLESS[58:]
            sigs.append(sig)
        return tuple(sigs), {str(k): str(v) for k, v in doc["redirects"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None  # unreadable or from another layout: validate afresh


_TUPLE_FIELDS = ("patterns", "references", "extract", "clear_when", "missing")


def _validate(dirs: list[Path], listing: list[tuple[Path, Path, bytes]]) -> tuple[tuple[Signature, ...],
                                                                                  dict[str, str]]:
    by_id: dict[str, Signature] = {}
    redirects: dict[str, str] = {}
    for root, path, raw in listing:
        data = _parse_toml(path, raw)
        if path.name == REDIRECTS_FILE:
            redirects.update(_parse_redirects(path, data))
            continue
        family = path.relative_to(root).parts[0] if len(path.relative_to(root).parts) > 1 else path.stem
        local: set[str] = set()
        for entry in data.get("signature", []):
            sig = _build(entry, family, path)
            if sig.id in local:
                raise CatalogError(f"{path}: duplicate signature id {sig.id}")
            local.add(sig.id)
            if sig.id in by_id and root == dirs[0]:
                raise CatalogError(f"{path}: signature id {sig.id} already defined in "
                                   f"{by_id[sig.id].source_file}")
            by_id[sig.id] = sig
    return tuple(sorted(by_id.values(), key=lambda s: s.id)), redirects


def _parse_toml(path: Path, raw: bytes) -> dict[str, Any]:
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CatalogError(f"{path}: {exc}") from exc


def _parse_redirects(path: Path, data: dict[str, Any]) -> dict[str, str]:
    table = data.get("redirects", {})
    if not isinstance(table, dict) or not all(isinstance(v, str) for v in table.values()):
        raise CatalogError(f"{path}: [redirects] must map old ids to new ids")
    return {str(k): str(v) for k, v in table.items()}


def _fail(path: Path, sig_id: str, msg: str) -> CatalogError:
    return CatalogError(f"{path}: {sig_id or '<no id>'}: {msg}")


def _str_list(path: Path, sid: str, raw: dict[str, Any], key: str) -> tuple[str, ...]:
    val = raw.get(key, [])
    if isinstance(val, str):
        val = [val]
    if not isinstance(val, list) or not all(isinstance(v, str) for v in val):
        raise _fail(path, sid, f"'{key}' must be a list of strings")
    return tuple(val)


def _build(raw: dict[str, Any], family: str, path: Path) -> Signature:
    sid = str(raw.get("id", ""))
    missing = [k for k in _REQUIRED if k not in raw]
    if missing:
        raise _fail(path, sid, f"missing {', '.join(missing)}")
    unknown = set(raw) - _KNOWN
    if unknown:
        raise _fail(path, sid, f"unknown keys {', '.join(sorted(unknown))}")
    if not _ID_RX.match(sid):
        raise _fail(path, sid, "id must look like family.name (lower case, digits, underscores)")
    if sid.split(".")[0] != family:
        raise _fail(path, sid, f"id must start with its family '{family}.'")
    checks = (("owner", OWNERS), ("severity", SEVERITIES), ("role", ROLES),
              ("rma", RMA_LEVELS), ("status", STATUSES))
    for key, allowed in checks:
        if key in raw and raw[key] not in allowed:
            raise _fail(path, sid, f"{key} '{raw[key]}' not one of {', '.join(allowed)}")
    patterns = _str_list(path, sid, raw, "patterns")
    if not patterns:
        raise _fail(path, sid, "needs at least one pattern")
    flags = re.ASCII | (re.IGNORECASE if raw.get("case_insensitive", False) else 0)
    compiled = []
    for pat in patterns:
        problems = subset_violations(pat)
        if problems:
            raise _fail(path, sid, f"pattern {pat!r}: {'; '.join(problems)}")
        compiled.append(re.compile(pat, flags))
    extract = _str_list(path, sid, raw, "extract")
    compiled_extract = []
    for pat in extract:
        try:
            compiled_extract.append(re.compile(pat, flags))
        except re.error as exc:
            raise _fail(path, sid, f"extract {pat!r}: {exc}") from exc
    steps = []
    for s in raw["steps"]:
        if not isinstance(s, dict) or "step" not in s:
            raise _fail(path, sid, "each step needs a 'step' text")
        who = s.get("who", "user")
        if who not in WHO:
            raise _fail(path, sid, f"step who '{who}' not one of {', '.join(WHO)}")
        steps.append(Step(step=str(s["step"]), command=s.get("command"), who=who,
                          disruptive=bool(s.get("disruptive", False))))
    quote_above = raw.get("quote_line_above", "")
    if not isinstance(quote_above, str):
        raise _fail(path, sid, "quote_line_above must be a regex string")
    try:
        compiled_quote = re.compile(quote_above, flags) if quote_above else None
    except re.error as exc:
        raise _fail(path, sid, f"quote_line_above {quote_above!r}: {exc}") from exc
    priority = raw.get("priority", 50)
    if not isinstance(priority, int) or not 0 <= priority <= 100:
        raise _fail(path, sid, "priority must be an integer 0-100")
    sig = Signature(
        id=sid, family=family, title=str(raw["title"]), patterns=patterns, owner=raw["owner"],
        category=str(raw["category"]), severity=raw["severity"], role=raw["role"],
        explanation=str(raw["explanation"]).strip(), steps=tuple(steps),
        references=_str_list(path, sid, raw, "references"), source_file=str(path),
        case_insensitive=bool(raw.get("case_insensitive", False)), extract=extract,
        priority=priority, rma=raw.get("rma", "none"),
        clear_when=_str_list(path, sid, raw, "clear_when"),
        missing=_str_list(path, sid, raw, "missing"), status=raw.get("status", "stable"),
        since=str(raw.get("since", "0.1.0")), detail_follows=bool(raw.get("detail_follows", False)),
        end_of_source=bool(raw.get("end_of_source", False)),
        clears_next_failure=bool(raw.get("clears_next_failure", False)),
        clears_prior_failure=bool(raw.get("clears_prior_failure", False)),
        clears_line=bool(raw.get("clears_line", False)),
        frame_owner=bool(raw.get("frame_owner", False)),
        quote_line_above=quote_above,
    )
    # Validation compiled them already; keep them rather than compile twice.
    sig.__dict__["compiled"] = tuple(compiled)
    sig.__dict__["compiled_extract"] = tuple(compiled_extract)
    sig.__dict__["compiled_quote_above"] = compiled_quote
    return sig
