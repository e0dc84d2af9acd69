"""Start the child with the same kind of stdio it would have had without the wrapper.

- stdout a terminal: the child gets a new pseudo-terminal as its controlling terminal, in its
  own session (so job control and Ctrl-C behave as at a shell prompt), with our terminal's
  settings and window size. stderr joins that PTY when stderr is the same kind of thing, and a
  pipe otherwise. Keystrokes are relayed through the PTY when stdin is a terminal.
- stdout not a terminal: pipes. The child stays in our process group, so a Ctrl-C or a
  Slurm signal to the group reaches it exactly as before.
- stdin that is not a terminal is handed to the child as it is (the same file, pipe or
  /dev/null): no copy, EOF and seeking behave as without the wrapper.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import subprocess
import termios
import tty
from dataclasses import dataclass, field
from typing import Any

PIPE_SIZE = 1024 * 1024  # F_SETPIPE_SZ: fewer, larger reads for the relay
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)


@dataclass
class Child:
    proc: subprocess.Popen[bytes]
    pty_mode: bool
    master: int = -1                  # PTY master (stdout, maybe stderr); -1 in pipe mode
    out_fd: int = -1                  # read end: child's stdout (pipe mode)
    err_fd: int = -1                  # read end: child's stderr when it is a separate pipe
    stdin_relay: bool = False         # keystrokes from our stdin go to the master
    saved_tty: list[Any] | None = None
    tty_fd: int = -1                  # our terminal, for window size and restore
    pidfd: int = -1
    to_close: list[int] = field(default_factory=list)


class SpawnError(Exception):
    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def _isatty(fd: int) -> bool:
    try:
        return os.isatty(fd)
    except OSError:
        return False


def _same_file(a: int, b: int) -> bool:
    try:
        sa, sb = os.fstat(a), os.fstat(b)
    except OSError:
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _foreground(fd: int) -> bool:
    try:
        return os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        return False


def _pipe() -> tuple[int, int]:
    r, w = os.pipe2(os.O_CLOEXEC)
    with contextlib.suppress(OSError):
        fcntl.fcntl(r, F_SETPIPE_SZ, PIPE_SIZE)
    return r, w


def start_child(argv: list[str], child_mask: set[int | signal.Signals]) -> Child:
    """Fork and exec ``argv``; SpawnError (exit 127/126, as a shell) when it cannot be run."""
    if _isatty(1):
        return _start_pty(argv, child_mask)
    return _start_pipes(argv, child_mask)


def _start_pty(argv: list[str], child_mask: set[int | signal.Signals]) -> Child:
    master, slave = os.openpty()
    os.set_inheritable(master, False)
    tty_fd = 0 if _isatty(0) else 1
    relay_stdin = _isatty(0) and _foreground(0)
    attrs: list[Any] | None = None
    with contextlib.suppress(termios.error):
        attrs = termios.tcgetattr(tty_fd)
    if attrs is not None:
        inner = list(attrs)
        if not relay_stdin:
            # Our terminal stays cooked and translates newlines itself; passing them through
            # untranslated gives the screen the very bytes it would get without the wrapper.
            inner[1] = int(inner[1]) & ~termios.OPOST
        with contextlib.suppress(termios.error):
            termios.tcsetattr(slave, termios.TCSANOW, inner)
    from denpex.collect.wrapper.signals import copy_winsize
    copy_winsize(tty_fd, slave)
    err_r = err_w = -1
    stderr_target = slave
    if not _isatty(2):
        err_r, err_w = _pipe()
        stderr_target = err_w

    def preexec() -> None:  # runs in the child after setsid, before exec
        fcntl.ioctl(1, termios.TIOCSCTTY, 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)

    try:
        proc = subprocess.Popen(argv, stdin=slave if relay_stdin else None, stdout=slave, stderr=stderr_target,
                                start_new_session=True, preexec_fn=preexec, close_fds=True)
    except BaseException as exc:
        for fd in (master, slave, err_r, err_w):
            if fd >= 0:
                os.close(fd)
        raise _spawn_error(argv, exc) from None
    os.close(slave)
    if err_w >= 0:
        os.close(err_w)
    os.set_blocking(master, False)
    child = Child(proc=proc, pty_mode=True, master=master, err_fd=err_r, stdin_relay=relay_stdin, tty_fd=tty_fd)
    if relay_stdin and attrs is not None:
        with contextlib.suppress(termios.error):
            tty.setraw(0, termios.TCSANOW)
            child.saved_tty = attrs
    child.pidfd = _pidfd(proc.pid)
    return child


def _start_pipes(argv: list[str], child_mask: set[int | signal.Signals]) -> Child:
    out_r, out_w = _pipe()
    err_r = err_w = -1
    if not _same_file(1, 2):
        err_r, err_w = _pipe()

    def preexec() -> None:
        signal.pthread_sigmask(signal.SIG_SETMASK, child_mask)

    try:
        proc = subprocess.Popen(argv, stdin=None, stdout=out_w, stderr=err_w if err_w >= 0 else out_w,
                                preexec_fn=preexec, close_fds=True)
    except BaseException as exc:
        for fd in (out_r, out_w, err_r, err_w):
            if fd >= 0:
                os.close(fd)
        raise _spawn_error(argv, exc) from None
    os.close(out_w)
    if err_w >= 0:
        os.close(err_w)
    child = Child(proc=proc, pty_mode=False, out_fd=out_r, err_fd=err_r)
    child.pidfd = _pidfd(proc.pid)
    return child


def _pidfd(pid: int) -> int:
    try:
        return os.pidfd_open(pid)
    except (OSError, AttributeError):
        return -1  # old kernel or a seccomp filter: SIGCHLD tells us instead


def _spawn_error(argv: list[str], exc: BaseException) -> BaseException:
    if isinstance(exc, FileNotFoundError):
        return SpawnError(f"{argv[0]}: command not found", 127)
    if isinstance(exc, PermissionError) or (isinstance(exc, OSError) and exc.errno in (errno.EACCES, errno.ENOEXEC)):
        return SpawnError(f"{argv[0]}: cannot execute: {exc.strerror or exc}", 126)
    if isinstance(exc, OSError):
        return SpawnError(f"{argv[0]}: cannot start: {exc.strerror or exc}", 126)
    return exc


def restore_terminal(child: Child) -> None:
    if child.saved_tty is not None:
        with contextlib.suppress(termios.error, OSError):
            termios.tcsetattr(0, termios.TCSADRAIN, child.saved_tty)
        child.saved_tty = None
