"""``run_wrapped``: the whole life of one wrapped command, with every Denpex step fail-open.

Order matters: signals are blocked before the child exists (nothing is lost), the relay runs
until the child exits, the terminal is restored before anything is printed, and the
post-mortem gets a time budget. Whatever fails in Denpex costs one ``denpex: warning:`` line;
the exit status is always the child's (128+N when a signal N killed it), as with ``script``
and ``tini``.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import sys
import threading
import time
from collections.abc import Mapping
from typing import Any

from denpex import __version__
from denpex.collect.wrapper.capture import Capture
from denpex.collect.wrapper.meta import RunLayout, denpex_home, iso, plan_layout, rank_env, short_host, write_meta
from denpex.collect.wrapper.options import WrapperOptions
from denpex.collect.wrapper.postmortem import Postmortem, run_postmortem
from denpex.collect.wrapper.reaper import become_subreaper
from denpex.collect.wrapper.relay import Relay
from denpex.collect.wrapper.signals import SignalRelay, block_signals
from denpex.collect.wrapper.spawn import Child, SpawnError, restore_terminal, start_child
from denpex.collect.wrapper.stall import StallWatch

SIGNALLED_BUDGET = 10.0  # post-mortem budget after a forwarded SIGTERM/SIGINT: the scheduler's SIGKILL is near


class Stderr:
    """Denpex's own lines on fd 2: unbuffered, each warning once, CRLF while our terminal is raw."""

    def __init__(self) -> None:
        self.raw = False
        self.seen: set[str] = set()
        self.lines: list[str] = []

    def write(self, text: str) -> None:
        if self.raw:
            text = text.replace("\r\n", "\n").replace("\n", "\r\n")
        data = text.encode("utf-8", errors="replace")
        with contextlib.suppress(OSError):
            while data:
                data = data[os.write(2, data):]

    def warn(self, msg: str) -> None:
        if msg in self.seen:
            return
        self.seen.add(msg)
        self.lines.append(msg)
        self.write(f"denpex: warning: {msg}\n")


def exit_status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def run_wrapped(opts: WrapperOptions, env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    err = Stderr()
    started = time.time()
    host = short_host()
    layout, capture = _open_capture(opts, env, started, err)
    meta: dict[str, Any] = {
        "denpex_version": __version__, "command": opts.command, "command_line": shlex.join(opts.command),
        "cwd": os.getcwd(), "host": host, "fqdn_host": os.uname().nodename, "wrapper_pid": os.getpid(),
        "start": iso(started), "rank_env": rank_env(env),
        "rank": layout.rank if layout else None, "job_id": layout.job_id if layout else None,
        "capture": {"path": str(layout.capture) if layout else None, "head_bytes": opts.head_bytes,
                    "tail_bytes": opts.tail_bytes},
    }
    _save_meta(layout, meta, err)
    if opts.subreaper and not become_subreaper():
        err.warn("could not become a child subreaper; orphans of the job go to init as usual")
    child_mask = block_signals()
    try:
        child = start_child(opts.command, child_mask)
    except SpawnError as exc:
        signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)
        err.write(f"denpex: {exc}\n")
        if capture is not None:
            capture.close()
        meta.update(end=iso(time.time()), exit_code=exc.exit_code, error=str(exc))
        _save_meta(layout, meta, err)
        return exc.exit_code
    err.raw = child.saved_tty is not None
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    sigs = SignalRelay(child.proc.pid, child.pidfd, shares_pgrp=not child.pty_mode, wake_fd=wake_w,
                       winsize=(child.tty_fd, child.master) if child.pty_mode else None)
    sigs.start()
    meta.update(child_pid=child.proc.pid, mode="pty" if child.pty_mode else "pipe")
    returncode = _relay(child, capture, wake_r, sigs, opts, err, meta)
    sigs.child_gone.set()
    restore_terminal(child)
    err.raw = False
    code = exit_status(returncode)
    ended = time.time()
    meta.update(end=iso(ended), duration_seconds=round(ended - started, 3), exit_code=code,
                exit_signal=signal.Signals(-returncode).name if returncode < 0 else None,
                signals_forwarded=sigs.forwarded)
    if capture is not None:
        stats = capture.close()
        meta["capture"].update(total_bytes=stats.total_bytes, kept_bytes=stats.kept_bytes,
                               skipped_bytes=stats.skipped_bytes, failed=stats.failed)
    if layout is not None and capture is not None and opts.diagnose != "never":
        budget = min(opts.diagnose_timeout, SIGNALLED_BUDGET) if sigs.forwarded else opts.diagnose_timeout
        _postmortem(layout, env, host, started, code, opts, budget, sigs, err, meta)
    meta["warnings"] = err.lines
    _save_meta(layout, meta, err)
    sigs.stop()
    for fd in (wake_r, wake_w, child.pidfd):
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)
    signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)
    return code


def _open_capture(opts: WrapperOptions, env: Mapping[str, str], started: float,
                  err: Stderr) -> tuple[RunLayout | None, Capture | None]:
    if not opts.capture:
        return None, None
    try:
        layout = plan_layout(env, opts.command, opts.run_dir, opts.job_id, started, os.getpid())
        capture = Capture(layout.capture, opts.head_bytes, opts.tail_bytes, err.warn)
    except Exception as exc:
        err.warn(f"no capture for this run ({exc}); the job runs on unaffected")
        return None, None
    if not capture.active:
        return None, None
    return layout, capture


def _save_meta(layout: RunLayout | None, meta: dict[str, Any], err: Stderr) -> None:
    if layout is None:
        return
    try:
        write_meta(layout.run_dir, meta)
    except (OSError, TypeError, ValueError) as exc:
        err.warn(f"cannot write run metadata in {layout.run_dir} ({getattr(exc, 'strerror', None) or exc})")


def _relay(child: Child, capture: Capture | None, wake_r: int, sigs: SignalRelay, opts: WrapperOptions,
           err: Stderr, meta: dict[str, Any]) -> int:
    relay = Relay(child, capture, wake_r, reap=opts.subreaper or os.getpid() == 1)
    stall: StallWatch | None = None
    if opts.stall_timeout:
        stall = StallWatch(timeout=opts.stall_timeout, action=opts.on_stall, kill_grace=opts.kill_grace,
                           pid=child.proc.pid, last_output=lambda: relay.state.last_output,
                           recent=lambda: bytes(relay.state.recent), send=sigs.send,
                           emit=lambda text: err.write(text + "\n"))
    try:
        return relay.run(stall.tick if stall is not None else _no_timer)
    except Exception as exc:  # a Denpex bug must not take the job's output with it
        err.warn(f"relay error ({exc.__class__.__name__}: {exc}); copying output without capture")
        relay.capture = None
        return _plain_copy(child, relay)
    finally:
        if stall is not None and stall.notices:
            meta["stalls"] = stall.notices


def _no_timer(now: float) -> float | None:
    return None


def _plain_copy(child: Child, relay: Relay) -> int:
    """Last resort after a relay failure: blocking copies until EOF, then the child's status."""
    for src in list(relay.sources.values()):
        with contextlib.suppress(OSError):
            os.set_blocking(src.fd, True)
            while data := os.read(src.fd, 65536):
                view = memoryview(data)
                while view:
                    view = view[os.write(src.dest, view):]
    return int(child.proc.wait())


def _postmortem(layout: RunLayout, env: Mapping[str, str], host: str, started: float, code: int,
                opts: WrapperOptions, budget: float, sigs: SignalRelay, err: Stderr, meta: dict[str, Any]) -> None:
    pm = Postmortem(capture=layout.capture, job_dir=layout.job_dir, run_dir=layout.run_dir,
                    incident_store=denpex_home(env) / "incidents", host=host, started=started, exit_code=code,
                    mode=opts.diagnose, color=_color(env))
    failure: list[BaseException] = []

    def work() -> None:
        try:
            run_postmortem(pm)
        except BaseException as exc:
            failure.append(exc)

    worker = threading.Thread(target=work, name="denpex-postmortem", daemon=True)
    worker.start()
    deadline = time.monotonic() + budget
    while worker.is_alive() and time.monotonic() < deadline and not sigs.interrupted.is_set():
        worker.join(timeout=0.05)
    meta.update(pm.meta)
    if worker.is_alive():
        why = "interrupted" if sigs.interrupted.is_set() else f"took longer than {budget:g}s"
        err.warn(f"diagnosis {why}; capture kept in {layout.run_dir}")
        meta["diagnosis"] = why
        return
    if failure:
        exc = failure[0]
        err.warn(f"diagnosis failed ({exc.__class__.__name__}: {exc}); capture kept in {layout.run_dir}")
        meta["diagnosis"] = f"error: {exc}"
        return
    if pm.report and not opts.quiet:
        err.write(pm.report)


def _color(env: Mapping[str, str]) -> bool:
    try:
        return sys.stderr.isatty() and not env.get("NO_COLOR")
    except (AttributeError, ValueError):
        return False
