"""Reaping orphans, as ``tini`` does when it is a container's PID 1.

A process whose parent dies is handed to PID 1 (or to the nearest "child subreaper"). When
``denpex run`` is that process, nobody else will collect such orphans' exit status, and they
stay zombies for the life of the container. The job's own main process is left to the relay,
which needs its status.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Ask Linux to hand us the orphans of our descendants (``--subreaper``); False when refused."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def reap_orphans(main_pid: int) -> int:
    """Collect every exited child but ``main_pid``; returns how many were collected."""
    reaped = 0
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return reaped
        if info is None or info.si_pid == main_pid:
            return reaped  # nothing has exited, or only the job itself (the relay collects it)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)
        reaped += 1
