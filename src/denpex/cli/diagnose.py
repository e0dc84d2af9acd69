"""``denpex diagnose PATH...``: saved evidence in, one incident out."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from denpex.cli.common import catalog_or_report
from denpex.collect.inputs import expand_paths
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident
from denpex.report.json_report import render_json, write_incident
from denpex.report.markdown import render_markdown
from denpex.report.text import render_text
from denpex.scan.engine import default_engine
from denpex.scan.progress import Progress, total_size

EXAMPLES = """examples:
  denpex diagnose slurm-123456.out                 # one job log
  denpex diagnose logs/ dmesg.txt                  # every rank's file plus the node's kernel log
  journalctl -k -b | denpex diagnose - train.log   # '-' reads standard input
  denpex diagnose job/ --format json --out incidents/

exit codes: 0 healthy, 1 failure diagnosed, 2 usage error or unreadable input
"""


def register(sub: Any) -> None:
    p = sub.add_parser("diagnose", help="diagnose saved evidence (logs, kernel logs, nvidia-smi -q, ...)",
                       description="Read logs a GPU job and its nodes left behind; print why it died, "
                                   "who must act and what to do next.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+", metavar="PATH", help="file, folder (read recursively), .gz/.zst, or - for stdin")
    p.add_argument("--format", choices=("text", "json", "markdown"), default=None,
                   help="output format (default: text on a terminal, json otherwise)")
    p.add_argument("--out", metavar="DIR", type=Path, help="also write the incident JSON into DIR")
    p.add_argument("--engine", choices=("auto", "re", "hyperscan"), default=None,
                   help="matching engine (default: hyperscan when installed, else re; same findings)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    catalog = catalog_or_report()
    if catalog is None:
        return 2
    sources, errors = expand_paths(args.paths)
    for err in errors:
        print(f"denpex: {err}", file=sys.stderr)
    if not sources:
        print("denpex: nothing to read", file=sys.stderr)
        return 2
    try:
        engine = default_engine(catalog.signatures, args.engine)
    except (ValueError, RuntimeError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    progress = Progress(len(sources), total_size([s.path for s in sources if s.path is not None]))
    try:
        diag = diagnose_paths(catalog, sources, engine, progress)
    finally:
        progress.close()
    for r in diag.results:
        for w in r.source.warnings:
            print(f"denpex: warning: {r.source.display}: {w}", file=sys.stderr)
    if not any(r.lines > 0 for r in diag.results):
        print("denpex: no readable evidence: every input was empty, unreadable or not text", file=sys.stderr)
        return 2
    doc = build_incident(diag)
    fmt = args.format or ("text" if sys.stdout.isatty() else "json")
    if fmt == "json":
        out = render_json(doc)
    elif fmt == "markdown":
        out = render_markdown(doc)
    else:
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        out = render_text(doc, color=color)
    sys.stdout.write(out)
    sys.stdout.flush()
    if args.out is not None:
        try:
            write_incident(doc, args.out)
        except OSError as exc:
            print(f"denpex: cannot write incident to {args.out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    if errors:
        return 2 if doc["status"] == "healthy" else 1
    return 0 if doc["status"] == "healthy" else 1
