"""Entry point: ``denpex COMMAND ...``.

Exit codes (all commands): 0 success / healthy, 1 a failure was diagnosed or a check failed,
2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from denpex import __version__
from denpex.cli import diagnose, egress, exporter, gpus, incidents, mask, metrics, rma, signatures
from denpex.cli import run as run_cmd
from denpex.minimize.local import enforce_local, local_requested

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="denpex",
        description="Tell why a GPU job died, who must act, and what to do next.",
        epilog="Exit codes: 0 healthy / ok, 1 failure diagnosed / check failed, 2 usage or unreadable input.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"denpex {__version__}")
    parser.add_argument("--local", action="store_true",
                        help="open no network socket, enforced in-process (same as DENPEX_LOCAL=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    diagnose.register(sub)
    signatures.register(sub)
    run_cmd.register(sub)
    incidents.register(sub)
    gpus.register(sub)
    rma.register(sub)
    metrics.register(sub)
    exporter.register(sub)
    mask.register(sub)
    egress.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    if args.local or local_requested():
        enforce_local()
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("denpex: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
