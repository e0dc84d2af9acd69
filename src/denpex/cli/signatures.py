"""``denpex signatures list|show|test|export``: the catalog, inspected and tested."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from denpex.catalog import Signature
from denpex.catalog.posix import to_ere
from denpex.catalog.selftest import run_selftest
from denpex.cli.common import catalog_or_report

EXAMPLES = """examples:
  denpex signatures list --family xid
  denpex signatures show nccl.watchdog_timeout
  denpex signatures test
  denpex signatures export --format rg > patterns.rg.txt
"""


def register(sub: Any) -> None:
    p = sub.add_parser("signatures", help="list, show, test or export catalog signatures",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    ssub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    lp = ssub.add_parser("list", help="one line per signature")
    lp.add_argument("--family")
    lp.add_argument("--owner")
    lp.add_argument("--format", choices=("text", "json"), default="text")
    sp = ssub.add_parser("show", help="everything about one signature")
    sp.add_argument("id")
    sp.add_argument("--format", choices=("text", "json"), default="text")
    ssub.add_parser("test", help="run every example line; non-zero exit on any failure")
    ep = ssub.add_parser("export", help="patterns one per line, for comparisons with rg/grep")
    ep.add_argument("--format", choices=("rg", "grep"), default="rg",
                    help="rg: Rust regex syntax; grep: POSIX ERE for GNU grep -E")
    p.set_defaults(func=run)


def sig_to_dict(sig: Signature) -> dict[str, Any]:
    return {
        "id": sig.id, "family": sig.family, "title": sig.title, "owner": sig.owner,
        "category": sig.category, "severity": sig.severity, "role": sig.role, "priority": sig.priority,
        "rma": sig.rma, "status": sig.status, "patterns": list(sig.patterns),
        "case_insensitive": sig.case_insensitive, "extract": list(sig.extract),
        "explanation": sig.explanation,
        "steps": [{"step": s.step, "command": s.command, "who": s.who, "disruptive": s.disruptive}
                  for s in sig.steps],
        "clear_when": list(sig.clear_when), "missing": list(sig.missing),
        "references": list(sig.references),
    }


def run(args: argparse.Namespace) -> int:
    catalog = catalog_or_report()
    if catalog is None:
        return 2
    if args.action == "list":
        sigs = [s for s in catalog.signatures
                if (not args.family or s.family == args.family) and (not args.owner or s.owner == args.owner)]
        if args.format == "json":
            print(json.dumps([sig_to_dict(s) for s in sigs], indent=2))
        else:
            for s in sigs:
                print(f"{s.id:44} {s.owner:13} {s.role:8} {s.severity:8} {s.title}")
            print(f"{len(sigs)} signatures", file=sys.stderr)
        return 0
    if args.action == "show":
        sig = catalog.get(args.id)
        if sig is None:
            print(f"denpex: no signature {args.id!r}", file=sys.stderr)
            return 2
        if args.format == "json":
            print(json.dumps(sig_to_dict(sig), indent=2))
        else:
            print(render_signature(sig))
        return 0
    if args.action == "test":
        report = run_selftest(catalog)
        for prob in report.problems:
            print(f"FAIL {prob}")
        for r in report.failures:
            print(f"FAIL {r.message}")
        n_ok = sum(1 for r in report.results if r.ok)
        print(f"{len(catalog.signatures)} signatures, {len(report.results)} examples: "
              f"{n_ok} passed, {len(report.failures) + len(report.problems)} failed")
        return 0 if report.ok else 1
    if args.action == "export":
        skipped = 0
        for s in catalog.signatures:
            if s.end_of_source:
                continue  # not a line to look for anywhere: a place where a source ends
            for pat in s.patterns:
                if args.format == "rg":
                    print(f"(?i:{pat})" if s.case_insensitive else pat)
                    continue
                ere = to_ere(pat, s.case_insensitive)
                if ere is None:
                    skipped += 1
                else:
                    print(ere)
        if skipped:
            print(f"denpex: {skipped} pattern(s) have no POSIX ERE form and were left out", file=sys.stderr)
        return 0
    return 2


def render_signature(sig: Signature) -> str:
    out = [f"{sig.id}: {sig.title}", "",
           f"owner {sig.owner} · category {sig.category} · severity {sig.severity} · role {sig.role} · "
           f"priority {sig.priority} · rma {sig.rma} · {sig.status}", "",
           "What it means", "  " + sig.explanation.replace("\n", "\n  "), "", "What to do"]
    for i, st in enumerate(sig.steps, 1):
        flag = " [disruptive]" if st.disruptive else ""
        out.append(f"  {i}. ({st.who}){flag} {st.step}")
        if st.command:
            out.append(f"     $ {st.command}")
    if sig.clear_when:
        out += ["", "Cleared when"] + [f"  - {c}" for c in sig.clear_when]
    out += ["", "Patterns"] + [f"  {p}" for p in sig.patterns]
    out += ["", "References"] + [f"  {r}" for r in sig.references]
    return "\n".join(out)
