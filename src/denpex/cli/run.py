"""``denpex run [options] -- CMD ARGS...``: run a job unchanged; explain it if it dies."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from denpex.collect.wrapper import WrapperOptions, parse_duration, parse_size, run_wrapped
from denpex.collect.wrapper.options import DEFAULT_DIAGNOSE_TIMEOUT, DIAGNOSE_MODES, STALL_ACTIONS

EXAMPLES = """examples:
  denpex run -- python train.py --lr 3e-4              # output, colours, progress bars as without denpex
  srun denpex run -- python train.py                   # one capture per rank: denpex-runs/JOBID.STEP/rank-N/
  denpex run -- torchrun --nproc-per-node 8 train.py   # the launcher wrapped whole
  denpex run --stall-timeout 30m -- python train.py    # say so when the job prints nothing for 30 minutes
  denpex run --stall-timeout 2h --on-stall kill -- python train.py
  denpex run --capture-head 8M --capture-tail 256M -- ./serve.sh
  DENPEX_HOME=/scratch/$USER/denpex denpex run -- python train.py
  denpex diagnose denpex-runs/123456.0                 # the whole job: every rank and the kernel logs

where things go:
  captures   ./denpex-runs/RUN-ID/ (or $DENPEX_HOME/runs/ when DENPEX_HOME is set); a multi-rank job
             gets JOB-ID/rank-N/rankN.log per rank (job id from Slurm, torchelastic or MPI, or --job-id)
  metadata   RUN-FOLDER/.denpex/meta.json: command, start, end, exit status, host, rank variables
  incidents  RUN-FOLDER/.denpex/ and $DENPEX_HOME/incidents/ (default ~/.denpex/incidents/)

The child gets a pseudo-terminal when stdout is a terminal, pipes otherwise. SIGINT, SIGTERM,
SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and window-size changes are forwarded. Anything that fails
inside denpex (a full disk, an unreadable catalog) prints one warning and leaves the job alone.

exit codes: the command's own status (128+N when signal N killed it); 127 command not found,
126 not executable, 2 usage error
"""


def register(sub: Any) -> None:
    p = sub.add_parser("run", help="run a command, keep its output, diagnose it if it fails",
                       description="Run CMD exactly as it would run without denpex (same bytes, same exit "
                                   "status), keep a bounded copy of its output, and when it fails print why.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--capture-head", metavar="SIZE", type=_size, default="4M",
                   help="keep the first SIZE bytes of output (default 4M)")
    p.add_argument("--capture-tail", metavar="SIZE", type=_size, default="16M",
                   help="and a ring of the last SIZE bytes (default 16M)")
    p.add_argument("--no-capture", action="store_true", help="relay only: no capture, no diagnosis")
    p.add_argument("--run-dir", metavar="DIR", type=Path, help="put this run's capture in DIR")
    p.add_argument("--job-id", metavar="ID", help="job folder name shared by all ranks (default: from Slurm, "
                                                   "torchelastic or MPI variables; also DENPEX_JOB_ID)")
    p.add_argument("--stall-timeout", metavar="DURATION", type=_duration,
                   help="report a suspected hang after this long without output (e.g. 30m, 1h30m)")
    p.add_argument("--on-stall", choices=STALL_ACTIONS, default="report",
                   help="report (default): notice only; kill: SIGTERM, then SIGKILL after --kill-grace")
    p.add_argument("--kill-grace", metavar="DURATION", type=_duration, default=30.0,
                   help="time between SIGTERM and SIGKILL for --on-stall kill (default 30s)")
    p.add_argument("--diagnose", choices=DIAGNOSE_MODES, default="auto",
                   help="auto (default): on a non-zero exit or a fatal signature; always; never")
    p.add_argument("--diagnose-timeout", metavar="DURATION", type=_duration, default=DEFAULT_DIAGNOSE_TIMEOUT,
                   help=f"give up diagnosing after this long (default {DEFAULT_DIAGNOSE_TIMEOUT:g}s)")
    p.add_argument("-q", "--quiet", action="store_true", help="no report on stderr (incidents are still written)")
    p.add_argument("--subreaper", action="store_true",
                   help="collect the exit status of the job's orphaned descendants, as tini -s does "
                        "(always on when denpex run is PID 1 in a container)")
    p.add_argument("command", nargs=argparse.REMAINDER, metavar="-- CMD ARGS", help="the command to run")
    p.set_defaults(func=run)


def _size(text: str) -> int:
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        print("denpex run: no command given (usage: denpex run [options] -- CMD ARGS...)", file=sys.stderr)
        return 2
    opts = WrapperOptions(command=command, head_bytes=args.capture_head, tail_bytes=args.capture_tail,
                          run_dir=args.run_dir, job_id=args.job_id, stall_timeout=args.stall_timeout,
                          on_stall=args.on_stall, kill_grace=args.kill_grace, diagnose=args.diagnose,
                          diagnose_timeout=args.diagnose_timeout, capture=not args.no_capture, quiet=args.quiet,
                          subreaper=args.subreaper)
    sys.stdout.flush()
    sys.stderr.flush()
    return run_wrapped(opts)
