"""``denpex egress preview --mode masked|strict PATH...``: exactly the bytes that would leave."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from denpex.catalog import CatalogError, load_catalog
from denpex.minimize.egress import MODES, build_payload
from denpex.minimize.keys import MaskKeyError, load_or_create_key
from denpex.minimize.strict import StrictPayloadError

EXAMPLES = """examples:
  denpex egress preview --mode strict logs/ dmesg.txt    # signature ids, counts, ranks, versions: no text
  denpex egress preview --mode masked logs/ > out.json   # the incident, diagnosed from masked evidence

What is printed is what any sender would send, byte for byte (only generated_at follows the clock).
Masked mode masks secrets, personal data and infrastructure identity (hosts, IPs, paths, GPU ids,
job ids) with this site's key ($DENPEX_HOME/mask.key). Strict mode carries no log text at all;
its shape is docs/strict-payload.schema.json.

exit codes: 0 printed, 2 usage error or unreadable input
"""


def register(sub: Any) -> None:
    p = sub.add_parser("egress", help="show exactly what would leave this machine",
                       description="Inspect what Denpex would send or upload, before any connected mode.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    esub = p.add_subparsers(dest="egress_command", metavar="COMMAND", required=True)
    prev = esub.add_parser("preview", help="print the payload that would leave, byte for byte",
                           epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    prev.add_argument("paths", nargs="+", metavar="PATH", help="file, folder, .gz/.zst, or - for stdin")
    prev.add_argument("--mode", choices=MODES, required=True,
                      help="masked: incident from masked evidence; strict: signature ids and counts only")
    prev.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        catalog = load_catalog()
        key = load_or_create_key()
    except (CatalogError, MaskKeyError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    try:
        payload = build_payload(catalog, args.paths, args.mode, key)
    except StrictPayloadError as exc:
        print(f"denpex: refusing to build a strict payload: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"denpex: cannot prepare the payload: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for err in payload.errors:
        print(f"denpex: {err}", file=sys.stderr)
    if payload.sources == 0:
        print("denpex: nothing to read", file=sys.stderr)
        return 2
    sys.stdout.buffer.write(payload.data)
    sys.stdout.buffer.flush()
    return 2 if payload.errors else 0
