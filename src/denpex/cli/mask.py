"""``denpex mask [PATH|-]``: the masked text on stdout, as every stored or sent copy would show it."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from denpex.minimize.keys import MaskKeyError, denpex_home, load_or_create_key
from denpex.minimize.masker import Masker
from denpex.minimize.stream import MaskInputError, learn_stream, mask_stream, open_input

EXAMPLES = """examples:
  denpex mask train.log > train.masked.log       # secrets and personal data
  denpex mask --identity dmesg.txt               # also hosts, IPs, MACs, paths, GPU ids, job ids
  journalctl -k -b | denpex mask - --stats       # '-' reads stdin; counts per kind on stderr
  denpex mask --identity --mask-pci job.log.gz   # PCI bus ids too (they join kernel Xids to ranks)

Placeholders: <secret:KIND:h>, <email:h>, <user:h>, host-h, <ip:h>, <mac:h>, <path:h>, <gpu_uuid:h>,
<serial:h>, <job:h>, <pci:h>. h is a keyed hash with this site's key ($DENPEX_HOME/mask.key,
default ~/.denpex, created 0600 on first use): the same value gets the same placeholder everywhere.

exit codes: 0 masked, 2 usage error or unreadable input
"""


def register(sub: Any) -> None:
    p = sub.add_parser("mask", help="mask secrets, personal data and (optionally) infrastructure identity",
                       description="Write PATH (or stdin) to stdout with secrets, personal data and, with "
                                   "--identity, infrastructure identity replaced by typed placeholders. "
                                   "Diagnostic tokens (Xid codes, PCI ids, ranks, NCCL sequence numbers) stay.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("path", nargs="?", default="-", metavar="PATH", help="file (.gz/.zst too) or - for stdin")
    p.add_argument("--identity", action="store_true",
                   help="also mask host names, IPs, MACs, file paths, GPU UUIDs and serials, job ids")
    p.add_argument("--mask-pci", action="store_true", help="also mask PCI bus ids")
    p.add_argument("--stats", action="store_true", help="print how many values of each kind were masked (stderr)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        key = load_or_create_key()
    except MaskKeyError as exc:
        print(f"denpex: {exc} (set DENPEX_HOME to a writable folder; now {denpex_home()})", file=sys.stderr)
        return 2
    masker = Masker(key, identity=args.identity, mask_pci=args.mask_pci)
    try:
        if args.identity and args.path != "-":
            with open_input(args.path) as fin:
                learn_stream(fin, masker)
        with open_input(args.path) as fin:
            stats = mask_stream(fin, sys.stdout.buffer, masker)
        sys.stdout.buffer.flush()
    except MaskInputError as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if isinstance(exc, BrokenPipeError):
            raise
        print(f"denpex: {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    if args.stats:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(masker.counts.items())) or "nothing"
        extra = f"; {stats.segmented_lines} over-long line(s) masked in segments" if stats.segmented_lines else ""
        extra += f"; {stats.blobs} whitespace-free run(s) over 512 KiB replaced by <blob>" if stats.blobs else ""
        print(f"denpex: masked {stats.lines} lines: {kinds}{extra}", file=sys.stderr)
    return 0
