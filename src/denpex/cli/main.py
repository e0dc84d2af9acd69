"""Entry point: ``denpex COMMAND ...``.

Exit codes (all commands): 0 success / healthy, 1 a failure was diagnosed or a check failed,
2 usage error or unreadable input.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from denpex import __version__
from denpex.minimize.local import enforce_local, local_requested

# Command name -> module in denpex.cli. Only the chosen command's module is imported, so
# `denpex run` starts the job without loading the diagnosis stack first.
COMMANDS: tuple[tuple[str, str], ...] = (
    ("diagnose", "diagnose"),
    ("signatures", "signatures"),
    ("run", "run"),
    ("incidents", "incidents"),
    ("gpus", "gpus"),
    ("rma", "rma"),
    ("metrics", "metrics"),
    ("exporter", "exporter"),
    ("mask", "mask"),
    ("egress", "egress"),
)

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def _chosen(argv: Sequence[str]) -> str | None:
    names = {name for name, _ in COMMANDS}
    for tok in argv:
        if tok in names:
            return tok
        if not tok.startswith("-"):
            return None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
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
    chosen = _chosen(list(argv)) if argv is not None else None
    for name, module in COMMANDS:
        if chosen is None or name == chosen:
            importlib.import_module(f"denpex.cli.{module}").register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
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
