"""The incident document (shared/spec/incident.schema.json) built from a diagnosis.

Deterministic by construction: every list is ordered by evidence position or id, the id is a
hash of the evidence, and only ``generated_at`` depends on the clock.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from typing import Any

from denpex import __version__
from denpex.catalog.model import Signature, Step
from denpex.diagnose.findings import Finding
from denpex.diagnose.model import Diagnosis
from denpex.diagnose.timeline import absolute_time, ordered

SCHEMA = "denpex.incident/v1"
TIMELINE_MAX = 40

# Sentry-style normalisation: volatile tokens out before fingerprinting, so one failure on
# 512 ranks is one incident shape.
_NORMALISERS = (
    (re.compile(r"GPU-[0-9a-fA-F-]{36}"), "<uuid>"),
    (re.compile(r"\b[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}(?:\.\d)?\b"), "<pci>"),
    (re.compile(r"\b0x[0-9a-fA-F]+\b"), "<hex>"),
    (re.compile(r"\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b"), "<ip>"),
    (re.compile(r"\[(?:rank|default)\d+\]:?"), "<rank>"),
    (re.compile(r"\b[Rr]ank \d+\b"), "rank <n>"),
    (re.compile(r"\d+(?:\.\d+)?"), "<n>"),
)


def normalise(text: str) -> str:
    for rx, repl in _NORMALISERS:
        text = rx.sub(repl, text)
    return " ".join(text.split())


def _fingerprint(diag: Diagnosis) -> str:
    root = diag.root
    if root is None:
        return "healthy"
    basis = f"{root.sig.id}|{diag.owner}|{normalise(root.event.text)}"
    return hashlib.sha256(basis.encode()).hexdigest()[:16]


def _incident_id(diag: Diagnosis) -> str:
    h = hashlib.sha256()
    for r in diag.results:
        h.update(f"{r.source.display}\0{r.lines}\0".encode())
    root = diag.root
    if root is not None:
        ev = root.event
        h.update(f"{ev.source}\0{ev.line_no}\0{ev.text}\0{ev.time}".encode())
    return "dpx-" + h.hexdigest()[:20]


def _confidence(diag: Diagnosis) -> tuple[float, list[str]]:
    root = diag.root
    if root is None:
        # Healthy: how much evidence was there to be healthy about?
        lines = sum(r.lines for r in diag.results)
        return (0.9 if lines >= 20 else 0.6 if lines else 0.2), []
    why: list[str] = []
    score = (0.55 if diag.owner != "unknown" else 0.35) if root.role == "root" else 0.25
    if root.sig.priority >= 80 and root.role == "root":
        score += 0.1
        why.append("specific root signature")
    others = [f for f in diag.failures if f is not root]
    later = [f for f in others if _after(root, f)]
    if others and len(later) >= len(others) * 0.8:
        score += 0.1
        why.append("the other failures follow it")
    if diag.rank is not None and diag.rank.rank is not None and len(diag.known_ranks) > 1:
        score += 0.1
        why.append("initiating rank identified")
    if any(name == "node_evidence_joined" for name, _, _ in diag.fired):
        score += 0.1
        why.append("node and job evidence agree")
    if diag.choice.competing:
        score -= 0.15
        why.append("a competing failure with another owner is close in priority")
    if any(name == "same_xid_many_gpus" for name, _, _ in diag.fired):
        score -= 0.1
    return round(max(0.05, min(0.97, score)), 2), why


def _after(root: Finding, f: Finding) -> bool:
    ta, tb = absolute_time(root.event), absolute_time(f.event)
    if ta is not None and tb is not None:
        return tb >= ta
    if f.event.source_index == root.event.source_index:
        return f.event.line_no >= root.event.line_no
    return True


def _fill(text: str, f: Finding) -> str:
    ev = f.event
    subs = {"<host>": ev.host, "<pci>": ev.pci_bus_id, "<rank>": None if f.rank is None else str(f.rank),
            "<pid>": None if ev.pid is None else str(ev.pid)}
    for k, v in subs.items():
        if v:
            text = text.replace(k, v)
    return text


def _actions(sig: Signature, root: Finding) -> list[dict[str, Any]]:
    out = []
    for st in sig.steps:
        out.append(_step(st, root))
    return out


def _step(st: Step, root: Finding) -> dict[str, Any]:
    d: dict[str, Any] = {"step": _fill(st.step, root), "who": st.who, "disruptive": st.disruptive}
    if st.command:
        d["command"] = _fill(st.command, root)
    return d


def _timeline(diag: Diagnosis) -> list[dict[str, Any]]:
    root = diag.root
    chosen: list[tuple[Finding, str]] = []
    seen: set[tuple[str, int | None, str | None]] = set()
    lines_seen: set[tuple[int, int]] = set()
    if root is not None:
        lines_seen.add((root.event.source_index, root.event.line_no))
    for f in diag.findings:
        if not f.is_failure and f is not root:
            continue
        where = (f.event.source_index, f.event.line_no)
        if f is not root:
            if where in lines_seen:
                continue  # one row per line, even when several signatures read it
            lines_seen.add(where)
        key = (f.sig.id, f.rank, f.event.host)
        if f is not root and key in seen:
            continue
        seen.add(key)
        if f is root:
            role = "root"
        elif f.role == "root":
            role = "cascade" if root is not None and _after(root, f) else "symptom"
        else:
            role = f.role
        chosen.append((f, role))
    if root is not None and len(chosen) > TIMELINE_MAX:
        idx = next(i for i, (f, _) in enumerate(chosen) if f is root)
        lo = max(0, min(idx - 5, len(chosen) - TIMELINE_MAX))
        chosen = chosen[lo:lo + TIMELINE_MAX]
    chosen = chosen[:TIMELINE_MAX]
    order = {id(ev): i for i, ev in enumerate(ordered([f.event for f, _ in chosen]))}
    chosen.sort(key=lambda fr: order[id(fr[0].event)])
    return [f.event.to_evidence(role) for f, role in chosen]


def _coverage(diag: Diagnosis) -> dict[str, Any]:
    sources = []
    for r in diag.results:
        entry: dict[str, Any] = {"source": r.source.display, "kind": r.kind, "lines": r.lines,
                                 "ranks": sorted(r.ranks), "warnings": list(r.source.warnings)}
        for sig_id in sorted(r.dropped):
            entry["warnings"].append(f"more lines matching {sig_id} than were kept")
        sources.append(entry)
    return {"sources": sources, "missing": list(diag.missing)}


def _affected(diag: Diagnosis) -> dict[str, Any]:
    hosts: set[str] = set()
    ranks: set[int] = set()
    gpus: dict[tuple[str, str], dict[str, str]] = {}
    for f in diag.failures:
        ev = f.event
        if ev.host:
            hosts.add(ev.host)
        if f.rank is not None:
            ranks.add(f.rank)
        if ev.pci_bus_id or ev.uuid:
            g: dict[str, str] = {}
            if ev.pci_bus_id:
                g["pci_bus_id"] = ev.pci_bus_id
            if ev.uuid:
                g["uuid"] = ev.uuid
            if ev.host:
                g["host"] = ev.host
            gpus.setdefault((ev.host or "", ev.pci_bus_id or ev.uuid or ""), g)
    return {"hosts": sorted(hosts), "ranks": sorted(ranks), "gpus": [gpus[k] for k in sorted(gpus)]}


def _summary(diag: Diagnosis) -> str:
    root = diag.root
    if root is None:
        n = sum(r.lines for r in diag.results)
        return f"No failure found in {n} lines from {len(diag.results)} source(s)."
    where = []
    if diag.rank is not None and diag.rank.rank is not None:
        where.append(f"rank {diag.rank.rank}")
    if root.event.host:
        where.append(f"host {root.event.host}")
    loc = f" on {' / '.join(where)}" if where else ""
    n_other = len([f for f in diag.failures if f is not root])
    s = f"{root.sig.title}{loc} ({root.event.source}:{root.event.shown[0]})."
    if n_other:
        s += f" {n_other} other failure line(s) follow or accompany it."
    s += f" Owner: {diag.owner}."
    if diag.owner == "unknown" and diag.missing:
        s += " To decide, add: " + "; ".join(diag.missing[:2]) + "."
    return s


def build_incident(diag: Diagnosis, generated_at: datetime | None = None) -> dict[str, Any]:
    root = diag.root
    conf, why = _confidence(diag)
    rules: list[dict[str, Any]] = []
    for name, reason, fs in diag.fired:
        rules.append({"rule": name, "reason": reason, "evidence": [f.event.to_evidence() for f in fs[:5]]})
    if why:
        rules.append({"rule": "confidence", "reason": "; ".join(why), "evidence": []})
    engine = {"version": __version__, "catalog_sha256": diag.catalog.sha256,
              "signatures": len(diag.catalog.signatures)}
    gen = (generated_at or datetime.now(UTC)).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    doc: dict[str, Any] = {
        "schema": SCHEMA,
        "id": _incident_id(diag),
        "generated_at": gen,
        "status": "healthy" if root is None else "failed",
        "owner": diag.owner,
        "category": "healthy" if root is None else root.sig.category,
        "title": "No failure found" if root is None else root.sig.title,
        "summary": _summary(diag),
        "confidence": conf,
        "initiating_rank": None if diag.rank is None else diag.rank.rank,
        "root_cause": {
            "signature_id": None if root is None else root.sig.id,
            "evidence": [] if root is None else [root.event.to_evidence()],
        },
        "timeline": _timeline(diag),
        "affected": _affected(diag),
        "actions": [] if root is None else _actions(root.sig, root),
        "rma": {"candidate": diag.rma_candidate, "reasons": diag.rma_reasons},
        "rules_fired": rules,
        "secondary": [_secondary_entry(g) for g in diag.secondary],
        "engine": engine,
        "coverage": _coverage(diag),
        "clear_when": [] if root is None else list(root.sig.clear_when),
        "impact": diag.impact or {"last_checkpoint": None, "last_step": None, "world_size": None,
                                  "gpu_hours_lost": None},
        "fingerprint": _fingerprint(diag),
    }
    if root is not None:
        doc["explanation"] = root.sig.explanation
    return doc


def _secondary_entry(group: list[Finding]) -> dict[str, Any]:
    f = group[0]
    return {"signature_id": f.sig.id, "title": f.sig.title, "owner": f.sig.owner, "category": f.sig.category,
            "count": len(group), "evidence": [f.event.to_evidence()]}
