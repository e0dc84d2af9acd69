"""The incident for a person at a terminal: the root line, the timeline around it, who, what next."""

from __future__ import annotations

import re
from typing import Any

_COLORS = {"red": "31", "green": "32", "yellow": "33", "bold": "1", "dim": "2", "cyan": "36"}


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, *names: str) -> str:
        if not self.color or not names:
            return text
        codes = ";".join(_COLORS[n] for n in names)
        return f"\x1b[{codes}m{text}\x1b[0m"


def _clip(text: str, width: int = 160) -> str:
    text = text.strip()
    return text if len(text) <= width else text[: width - 1] + "…"


_PREFIX = re.compile(r"^(?:\[(?:rank|default)\d+\]:|\[\d+,\d+\]<std\w+>:|\s*\d+: )+"
                     r"(?:\[?[IWEF]\d{4} [\d:.]+ \d+ [^\]]*\]\s*)?")


def _body(text: str) -> str:
    """The message without launcher and glog prefixes, for narrow timeline rows."""
    return _PREFIX.sub("", text)


def _when(ev: dict[str, Any]) -> str:
    t = ev.get("time")
    if not t:
        return " " * 12
    return str(t)[11:23].ljust(12)


def _merge_ranks(rows: list[dict[str, Any]]) -> list[tuple[dict[str, Any], list[int]]]:
    """Consecutive rows of one signature and role become one row naming all their ranks."""
    merged: list[tuple[dict[str, Any], list[int]]] = []
    for r in rows:
        if (merged and r.get("role") != "root" and merged[-1][0].get("role") == r.get("role")
                and merged[-1][0].get("signature_id") == r.get("signature_id") and r.get("rank") is not None
                and merged[-1][1]):
            merged[-1][1].append(r["rank"])
            continue
        merged.append((r, [r["rank"]] if r.get("rank") is not None else []))
    return merged


def _who(row: dict[str, Any], ranks: list[int]) -> str:
    if len(ranks) > 1:
        shown = ",".join(str(x) for x in ranks[:4]) + ("…" if len(ranks) > 4 else "")
        return f"ranks {shown}"
    if ranks:
        return f"rank {ranks[0]}"
    return str(row.get("host") or "")


def render_text(doc: dict[str, Any], color: bool = False, timeline_rows: int = 6, steps: int = 3) -> str:
    s = _Style(color)
    out: list[str] = []
    if doc["status"] == "healthy":
        out.append(s("HEALTHY", "green", "bold") + f"  {doc['summary']}")
        for m in doc.get("coverage", {}).get("missing", []):
            out.append(s(f"  note: {m}", "yellow"))
        _warnings(doc, out, s)
        return "\n".join(out) + "\n"
    root = doc["root_cause"]["evidence"][0]
    where = []
    if doc.get("initiating_rank") is not None:
        where.append(f"rank {doc['initiating_rank']}")
    if root.get("host"):
        where.append(f"host {root['host']}")
    out.append(f"{s('FAILED', 'red', 'bold')}  {s(doc['owner'], 'bold')}  {doc['title']}  "
               f"[{doc['root_cause']['signature_id']}]  confidence {doc['confidence']:.2f}")
    if where:
        out.append("  " + " · ".join(where))
    for rule in doc.get("rules_fired", []):
        # A rule that moved the owner away from the signature's own says why in its reason.
        if "owner " in rule.get("reason", "") and " -> " in rule["reason"]:
            out.append(s(f"  owner: {rule['reason']}", "dim"))
    out.append("")
    out.append(f"  {s(root['source'] + ':' + str(root['line_no']), 'cyan')}")
    out.append(f"  > {_clip(root['text'])}")
    rows = _merge_ranks(doc["timeline"])
    if len(rows) > 1:
        out.append("")
        out.append(s("Timeline", "bold"))
        idx = next((i for i, (r, _) in enumerate(rows) if r.get("role") == "root"), 0)
        lo = max(0, min(idx - 2, len(rows) - timeline_rows))
        for r, ranks in rows[lo: lo + timeline_rows]:
            who = _who(r, ranks)
            role = r.get("role", "")
            mark = s(role.upper().ljust(8), "red", "bold") if role == "root" else s(role.ljust(8), "dim")
            out.append(f"  {_when(r)} {who[:14]:14} {mark} {_clip(_body(r['text']), 100)}")
        if len(rows) > timeline_rows:
            out.append(s(f"  ... {len(rows) - timeline_rows} more rows in --format json", "dim"))
    if doc["actions"]:
        out.append("")
        out.append(s("What to do", "bold"))
        for i, a in enumerate(doc["actions"][:steps], 1):
            flag = s(" [disruptive]", "yellow") if a.get("disruptive") else ""
            out.append(f"  {i}. ({a.get('who', 'user')}){flag} {a['step']}")
            if a.get("command"):
                out.append(f"     $ {a['command']}")
        if len(doc["actions"]) > steps:
            out.append(s(f"  ... {len(doc['actions']) - steps} more steps in --format markdown", "dim"))
    if doc.get("rma", {}).get("candidate"):
        out.append(s("  RMA candidate: ", "yellow") + doc["rma"]["reasons"][0].split(" (")[0]
                   + " (the vendor decides; see --format markdown)")
    for sec in doc.get("secondary", [])[:3]:
        out.append(s(f"  also: {sec['title']} [{sec['signature_id']}] x{sec['count']}", "dim"))
    for m in doc.get("coverage", {}).get("missing", [])[:2]:
        out.append(s(f"  missing: {m}", "yellow"))
    _warnings(doc, out, s)
    return "\n".join(out) + "\n"


def _warnings(doc: dict[str, Any], out: list[str], s: _Style) -> None:
    for src in doc.get("coverage", {}).get("sources", []):
        for w in src.get("warnings", []):
            out.append(s(f"  warning: {src['source']}: {w}", "dim"))
