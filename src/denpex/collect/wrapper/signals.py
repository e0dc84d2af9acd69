"""Signal forwarding from a dedicated thread that waits with ``sigwaitinfo``.

Why a thread and not handlers: the relay may sit in a blocking write to a slow stdout for a
long time, and a Ctrl-C or a scheduler's SIGTERM must still reach the child at once. Why
``sigwaitinfo``: it says who sent the signal. When the child shares our process group (pipe
mode), a signal the terminal generated (``si_code == SI_KERNEL``) has already reached the
child, and forwarding it would deliver it twice.

The forwarded set is blocked in every thread before the child is started (the child restores
its own mask before exec), so none is lost in the window between fork and this thread.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import struct
import termios
import threading

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
WAITED = (*FORWARDED, signal.SIGWINCH, signal.SIGCHLD)
SI_KERNEL = 0x80
_WINSZ = struct.Struct("HHHH")


def block_signals() -> set[int | signal.Signals]:
    """Block the waited set in this (the main) thread; returns the previous mask for the child."""
    return signal.pthread_sigmask(signal.SIG_BLOCK, WAITED)


def copy_winsize(src_fd: int, dst_fd: int) -> None:
    with contextlib.suppress(OSError):
        size = fcntl.ioctl(src_fd, termios.TIOCGWINSZ, b"\0" * _WINSZ.size)
        fcntl.ioctl(dst_fd, termios.TIOCSWINSZ, size)


class SignalRelay:
    """Forward signals to the child; tell the main loop about SIGCHLD and about signals after the child is gone."""

    def __init__(self, pid: int, pidfd: int, shares_pgrp: bool, wake_fd: int,
                 winsize: tuple[int, int] | None) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.shares_pgrp = shares_pgrp
        self.wake_fd = wake_fd
        self.winsize = winsize  # (our terminal fd, pty master fd)
        self.forwarded: list[str] = []
        self.child_gone = threading.Event()
        self.interrupted = threading.Event()
        self._stop = False
        self._thread = threading.Thread(target=self._loop, name="denpex-signals", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """End the thread (a thread-directed SIGCHLD wakes its sigwaitinfo)."""
        self._stop = True
        ident = self._thread.ident
        if ident is not None and self._thread.is_alive():
            with contextlib.suppress(OSError, ProcessLookupError):
                signal.pthread_kill(ident, signal.SIGCHLD)
            self._thread.join(timeout=1.0)

    def send(self, sig: int) -> bool:
        """Signal the child unless it has been reaped (pidfd makes this race-free where the kernel has it)."""
        if self.child_gone.is_set():
            return False
        try:
            if self.pidfd >= 0:
                signal.pidfd_send_signal(self.pidfd, sig)
            else:
                os.kill(self.pid, sig)
        except (ProcessLookupError, OSError):
            return False
        return True

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            os.write(self.wake_fd, b"!")

    def _loop(self) -> None:
        while not self._stop:
            try:
                info = signal.sigwaitinfo(WAITED)
            except (OSError, InterruptedError):
                continue
            if self._stop:
                return
            signo = info.si_signo
            if signo == signal.SIGCHLD:
                self._wake()
            elif signo == signal.SIGWINCH:
                if self.winsize is not None:
                    copy_winsize(*self.winsize)
            elif self.child_gone.is_set():
                self.interrupted.set()
                self._wake()
            elif not (self.shares_pgrp and info.si_code == SI_KERNEL):
                if self.send(signo):
                    self.forwarded.append(signal.Signals(signo).name)
            else:
                self.forwarded.append(signal.Signals(signo).name + " (from the terminal, reached the child directly)")
