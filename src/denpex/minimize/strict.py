"""Strict signature-only payload: what a diagnosis concluded, with no log text at all.

Signature ids, counts, times relative to the root line, ranks, and coarse context (GPU model,
driver, CUDA and NCCL versions, world size). Every string is checked against a narrow shape
before the payload is returned, so free text cannot slip in through a new field; the JSON
schema in ``docs/strict-payload.schema.json`` says the same for outside readers.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from denpex import __version__
from denpex.diagnose.findings import Finding
from denpex.diagnose.model import Diagnosis
from denpex.diagnose.timeline import ordered, seconds_between

SCHEMA = "denpex.strict/v1"
TIMELINE_MAX = 40
RANKS_MAX = 64

# Coarse context, each from a line form that prints it, with the value's allowed shape.
# nvidia-smi: "| NVIDIA-SMI 535.104.05   Driver Version: 535.104.05   CUDA Version: 12.2 |"
# nvidia-smi -q: "Product Name : NVIDIA A100-SXM4-80GB", "Driver Version : 535.104.05"
# torch: "GPU 0: NVIDIA H100 80GB HBM3 (UUID: ...)"; NCCL: "NCCL version 2.18.3+cuda12.2"
_CONTEXT: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("gpu_model", re.compile(r"Product Name\s*:\s*(?P<v>(?:NVIDIA|Tesla|Quadro|GeForce)[ -][\w -]{1,40}?)\s*$")),
    ("gpu_model", re.compile(r"\bGPU \d+: (?P<v>(?:NVIDIA|Tesla|Quadro|GeForce)[ -][\w -]{1,40}?)\s*(?:\(|$)")),
    ("gpu_model", re.compile(r"^\|\s+\d+\s+(?P<v>(?:NVIDIA|Tesla|Quadro|GeForce)[ -][\w-]+(?: [\w-]+){0,3}?)\s{2,}")),
    ("driver_version", re.compile(r"Driver Version\s*:\s*(?P<v>\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)\b")),
    ("driver_version", re.compile(r"NVRM: load(?:ed|ing) .*Kernel Module\s+(?:for \S+\s+)?"
                                  r"(?P<v>\d{2,4}\.\d{1,3}(?:\.\d{1,3})?)\b")),
    ("cuda_version", re.compile(r"CUDA Version\s*:\s*(?P<v>\d{1,2}\.\d{1,2})\b")),
    ("cuda_version", re.compile(r"NCCL version \d+\.\d+\.\d+\+cuda(?P<v>\d{1,2}\.\d{1,2})\b")),
    ("nccl_version", re.compile(r"NCCL version (?P<v>\d{1,2}\.\d{1,3}\.\d{1,3})\b")),
)
CONTEXT_KEYS = ("gpu_model", "driver_version", "cuda_version", "nccl_version")
_SAFE_STRING = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+/-]{0,79}|(?:NVIDIA|Tesla|Quadro|GeForce)[ -][A-Za-z0-9 _-]{1,40}")


@dataclass
class Context:
    """First value of each context key seen in the evidence, read from clear lines as they stream."""

    values: dict[str, str] = field(default_factory=dict)

    def observe(self, line: str) -> None:
        if len(self.values) == len(CONTEXT_KEYS) or len(line) > 4096:
            return
        if "NVIDIA" not in line and "Version" not in line and "NCCL" not in line and "Tesla" not in line \
                and "NVRM" not in line:
            return
        for key, rx in _CONTEXT:
            if key in self.values:
                continue
            m = rx.search(line)
            if m:
                self.values[key] = " ".join(m.group("v").split())


class StrictPayloadError(ValueError):
    """A value in the strict payload is not of a textless shape; nothing is sent."""


def build_strict(diag: Diagnosis, context: Context, confidence: float, category: str) -> dict[str, Any]:
    root = diag.root
    payload: dict[str, Any] = {
        "schema": SCHEMA,
        "status": "healthy" if root is None else "failed",
        "owner": diag.owner,
        "category": category,
        "confidence": confidence,
        "root_signature_id": None if root is None else root.sig.id,
        "initiating_rank": None if diag.rank is None else diag.rank.rank,
        "signatures": _signatures(diag),
        "timeline": _timeline(diag),
        "rules_fired": sorted({name for name, _, _ in diag.fired}),
        "context": _context(diag, context),
        "impact": {"last_step": diag.impact.get("last_step"), "gpu_hours_lost": diag.impact.get("gpu_hours_lost")},
        "coverage": _coverage(diag),
        "engine": {"version": __version__, "catalog_sha256": diag.catalog.sha256,
                   "signatures": len(diag.catalog.signatures)},
    }
    check_textless(payload)
    return payload


def _offset(root: Finding | None, f: Finding) -> float | None:
    if root is None:
        return None
    secs = seconds_between(root.event, f.event)
    return None if secs is None else round(secs, 3)


def _signatures(diag: Diagnosis) -> list[dict[str, Any]]:
    root = diag.root
    groups: dict[str, list[Finding]] = {}
    for f in diag.findings:
        groups.setdefault(f.sig.id, []).append(f)
    out = []
    for sig_id in sorted(groups):
        fs = groups[sig_id]
        offsets = [o for o in (_offset(root, f) for f in fs) if o is not None]
        ranks = sorted({f.rank for f in fs if f.rank is not None})
        out.append({
            "id": sig_id,
            "role": fs[0].role,
            "count": len(fs),
            "failures": sum(1 for f in fs if f.is_failure),
            "ranks": ranks[:RANKS_MAX],
            "ranks_total": len(ranks),
            "first_s": min(offsets) if offsets else None,
            "last_s": max(offsets) if offsets else None,
        })
    return out


def _timeline(diag: Diagnosis) -> list[dict[str, Any]]:
    root = diag.root
    chosen = list(diag.failures)
    if root is not None and root not in chosen:
        chosen.append(root)
    order = {id(ev): i for i, ev in enumerate(ordered([f.event for f in chosen]))}
    chosen.sort(key=lambda f: order[id(f.event)])
    seen: set[tuple[str, int | None]] = set()
    out = []
    for f in chosen:
        key = (f.sig.id, f.rank)
        if f is not root and key in seen:
            continue
        seen.add(key)
        t = _offset(root, f)
        role = f.role
        if f is root:
            role = "root"
        elif role == "root":  # a root-capable failure that is not the root: before it or after it
            role = "symptom" if t is not None and t < 0 else "cascade"
        out.append({"signature_id": f.sig.id, "rank": f.rank, "t_s": t, "role": role})
    if len(out) > TIMELINE_MAX and root is not None:
        idx = next(i for i, e in enumerate(out) if e["role"] == "root")
        lo = max(0, min(idx - 5, len(out) - TIMELINE_MAX))
        out = out[lo:lo + TIMELINE_MAX]
    return out[:TIMELINE_MAX]


def _context(diag: Diagnosis, context: Context) -> dict[str, Any]:
    out: dict[str, Any] = {k: context.values.get(k) for k in CONTEXT_KEYS}
    world = diag.impact.get("world_size")
    out["world_size"] = world if isinstance(world, int) else (len(diag.known_ranks) or None)
    out["ranks_seen"] = len(diag.known_ranks)
    out["hosts_seen"] = len({f.event.host for f in diag.findings if f.event.host})
    return out


def _coverage(diag: Diagnosis) -> dict[str, Any]:
    kinds = Counter(r.kind for r in diag.results)
    return {"sources": len(diag.results), "lines": sum(r.lines for r in diag.results),
            "kinds": dict(sorted(kinds.items())),
            "unreadable": sum(1 for r in diag.results if r.lines == 0 and r.source.warnings)}


def check_textless(value: Any, where: str = "$") -> None:
    """Refuse any string that is not an id, version or model name: log text has no place here."""
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str) or not _SAFE_STRING.fullmatch(k):
                raise StrictPayloadError(f"{where}: key {k!r} is not a plain name")
            check_textless(v, f"{where}.{k}")
    elif isinstance(value, list):
        for i, v in enumerate(value):
            check_textless(v, f"{where}[{i}]")
    elif isinstance(value, str):
        if not _SAFE_STRING.fullmatch(value):
            raise StrictPayloadError(f"{where}: {len(value)}-character string is not of a textless shape")
    elif value is not None and not isinstance(value, (bool, int, float)):
        raise StrictPayloadError(f"{where}: {type(value).__name__} is not allowed")
