"""The incident as Markdown, to paste into a ticket."""

from __future__ import annotations

from typing import Any


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:180]


def render_markdown(doc: dict[str, Any]) -> str:
    out: list[str] = []
    if doc["status"] == "healthy":
        out += ["## Denpex: healthy", "", doc["summary"], ""]
        for m in doc.get("coverage", {}).get("missing", []):
            out.append(f"- note: {m}")
        return "\n".join(out) + "\n"
    root = doc["root_cause"]["evidence"][0]
    out += [f"## Denpex: {doc['title']}", "",
            "| | |", "|---|---|",
            f"| Owner | `{doc['owner']}` |",
            f"| Category | `{doc['category']}` |",
            f"| Signature | `{doc['root_cause']['signature_id']}` |",
            f"| Initiating rank | {doc['initiating_rank'] if doc['initiating_rank'] is not None else 'n/a'} |",
            f"| Confidence | {doc['confidence']:.2f} |",
            f"| Incident | `{doc['id']}` |", "",
            doc.get("summary", ""), "",
            f"**Root line** (`{root['source']}:{root['line_no']}`):", "", "```", root["text"], "```", ""]
    if doc.get("explanation"):
        out += ["### What it means", "", doc["explanation"], ""]
    if doc["actions"]:
        out += ["### What to do", ""]
        for i, a in enumerate(doc["actions"], 1):
            flag = " **(disruptive)**" if a.get("disruptive") else ""
            out.append(f"{i}. *{a.get('who', 'user')}*{flag}: {a['step']}")
            if a.get("command"):
                out.append(f"   `{a['command']}`")
        out.append("")
    if len(doc["timeline"]) > 1:
        out += ["### Timeline", "", "| time | rank | host | role | line |", "|---|---|---|---|---|"]
        for r in doc["timeline"][:20]:
            out.append(f"| {r.get('time') or ''} | {'' if r.get('rank') is None else r['rank']} | "
                       f"{r.get('host') or ''} | {r.get('role', '')} | `{_cell(r['text'])}` |")
        out.append("")
    if doc.get("rma", {}).get("candidate"):
        out += ["### RMA candidate", ""] + [f"- {r}" for r in doc["rma"]["reasons"]] + [""]
    missing = doc.get("coverage", {}).get("missing", [])
    if missing:
        out += ["### Evidence that would help", ""] + [f"- {m}" for m in missing] + [""]
    if doc.get("clear_when"):
        out += ["### Cleared when", ""] + [f"- {c}" for c in doc["clear_when"]] + [""]
    return "\n".join(out) + "\n"
