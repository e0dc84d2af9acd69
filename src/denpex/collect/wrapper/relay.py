"""The byte relay: child output to our stdout/stderr and the capture, keystrokes to the child.

Hot path rules (see shared/recipes/scanning-performance.md): one preallocated buffer per
source, large reads (``readv`` into it, so no allocation per read), a write loop that never
drops a byte, and no per-line work. The bytes written out are exactly the bytes read.
"""

from __future__ import annotations

import contextlib
import errno
import os
import select
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from denpex.collect.wrapper.capture import Capture
from denpex.collect.wrapper.reaper import reap_orphans
from denpex.collect.wrapper.spawn import Child

READ_SIZE = 1024 * 1024
PTY_CHUNKS = 256            # PTY reads relayed back to back before the loop looks at stdin, signals, timers
TAIL_KEEP = 16 * 1024          # recent output kept in memory for a hang notice
DRAIN_QUIET = 0.05             # after the child exits: stop when nothing came for this long
DRAIN_MAX = 2.0                # ... or after this long (a daemon that inherited stdout and keeps writing)
STDIN_BACKLOG = 1024 * 1024    # stop reading keystrokes while this much waits for the child
_IN = select.POLLIN | select.POLLPRI
_END = select.POLLHUP | select.POLLERR | select.POLLNVAL


class _Broken(Exception):
    """Our own stdout/stderr went away (reader closed the pipe, terminal hung up)."""


class _Source:
    def __init__(self, fd: int, dest: int, gather: bool) -> None:
        self.fd = fd
        self.dest = dest
        self.gather = gather  # PTY: keep reading until EAGAIN
        self.view = memoryview(bytearray(READ_SIZE))


@dataclass
class RelayState:
    last_output: float = field(default_factory=time.monotonic)
    recent: bytearray = field(default_factory=bytearray)
    dest_broken: set[int] = field(default_factory=set)


class Relay:
    def __init__(self, child: Child, capture: Capture | None, wake_fd: int, reap: bool = False) -> None:
        self.child = child
        self.reap = reap  # PID 1 or a subreaper: collect orphans that exit (see reaper.py)
        self.capture = capture
        self.wake_fd = wake_fd
        self.state = RelayState()
        self.sources: dict[int, _Source] = {}
        if child.pty_mode:
            self.sources[child.master] = _Source(child.master, 1, gather=True)
        else:
            self.sources[child.out_fd] = _Source(child.out_fd, 1, gather=False)
        if child.err_fd >= 0:
            self.sources[child.err_fd] = _Source(child.err_fd, 2, gather=False)
        self.stdin_open = child.stdin_relay
        self.pending_in = bytearray()
        self.poll = select.poll()
        for fd in self.sources:
            self.poll.register(fd, _IN)
        self.poll.register(wake_fd, _IN)
        if child.pidfd >= 0:
            self.poll.register(child.pidfd, _IN)
        if self.stdin_open:
            self.poll.register(0, _IN)

    # -- the loop while the child runs ------------------------------------------------------
    def run(self, tick: Callable[[float], float | None]) -> int:
        """Relay until the child exits; ``tick(now)`` runs the stall timer and says when to call it again."""
        proc = self.child.proc
        timeout: float | None = tick(time.monotonic())
        while True:
            ms = None if timeout is None else max(0, int(timeout * 1000) + 1)
            try:
                events = self.poll.poll(ms)
            except InterruptedError:
                events = []
            maybe_exited = False
            for fd, ev in events:
                src = self.sources.get(fd)
                if src is not None:
                    self._pump(src, ev)
                elif fd == self.wake_fd:
                    maybe_exited = True
                    with contextlib.suppress(OSError):
                        os.read(self.wake_fd, 4096)
                elif fd == self.child.pidfd:
                    maybe_exited = True
                elif fd == 0:
                    self._read_stdin(ev)
                elif fd == self.child.master:
                    self._flush_stdin()
            # waitpid only when the kernel said something happened (pidfd readable, SIGCHLD):
            # a wait4 per read costs as much as the read itself.
            if maybe_exited and self.reap:
                reap_orphans(proc.pid)
            if maybe_exited and proc.poll() is not None:
                self._drain()
                return int(proc.returncode)
            now = time.monotonic()
            if self.capture is not None:
                self.capture.flush_if_stale(now)
            timeout = tick(now)
            if self.capture is not None and self.capture.pending:
                timeout = 0.2 if timeout is None else min(timeout, 0.2)

    def _pump(self, src: _Source, ev: int) -> None:
        if ev & select.POLLOUT and src.fd == self.child.master:
            self._flush_stdin()
        if not ev & (_IN | _END):
            return
        # A pipe hands out all it holds in one read. A PTY hands out at most 4 KiB per read:
        # each read is written out at once (child and terminal stay busy together) and the next
        # read follows without a poll while the child keeps writing, as ``script`` does.
        view = src.view
        got = False
        for _ in range(PTY_CHUNKS if src.gather else 1):
            try:
                n = os.readv(src.fd, [view])
            except BlockingIOError:
                break
            except OSError as exc:  # EIO: every holder of the PTY slave has closed it
                if exc.errno not in (errno.EIO, errno.EBADF):
                    raise
                n = 0
            if n == 0:
                self._close_source(src)
                break
            self._deliver(src, view[:n])
            got = True
        if got:
            self.state.last_output = time.monotonic()

    def _deliver(self, src: _Source, data: memoryview) -> None:
        recent = self.state.recent
        recent += data[-TAIL_KEEP:]
        if len(recent) > 2 * TAIL_KEEP:
            del recent[:-TAIL_KEEP]
        if src.dest not in self.state.dest_broken:
            try:
                _write_all(src.dest, data)
            except _Broken:
                self.state.dest_broken.add(src.dest)
                if not self.child.pty_mode:
                    # Without the wrapper the child would get EPIPE/SIGPIPE now: let it.
                    self._close_source(src)
        if self.capture is not None:
            self.capture.write(data)

    def _close_source(self, src: _Source) -> None:
        if self.sources.pop(src.fd, None) is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            self.poll.unregister(src.fd)
        if src.fd != self.child.master:
            with contextlib.suppress(OSError):
                os.close(src.fd)

    def _read_stdin(self, ev: int) -> None:
        try:
            data = os.read(0, 65536)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.stdin_open = False
            with contextlib.suppress(KeyError, ValueError):
                self.poll.unregister(0)
            return
        self.pending_in += data
        self._flush_stdin()

    def _flush_stdin(self) -> None:
        master = self.child.master
        while self.pending_in:
            try:
                n = os.write(master, self.pending_in)
            except BlockingIOError:
                break
            except OSError:
                self.pending_in.clear()
                break
            del self.pending_in[:n]
        if master in self.sources:
            self.poll.modify(master, _IN | (select.POLLOUT if self.pending_in else 0))
        if self.stdin_open:
            if len(self.pending_in) >= STDIN_BACKLOG:
                with contextlib.suppress(KeyError, ValueError):
                    self.poll.unregister(0)
            else:
                with contextlib.suppress(OSError):
                    self.poll.register(0, _IN)

    def _drain(self) -> None:
        """Output the child wrote just before it exited; stop at EOF or when only a daemon is left."""
        deadline = time.monotonic() + DRAIN_MAX
        for fd in (self.wake_fd, self.child.pidfd, 0):
            with contextlib.suppress(KeyError, ValueError):
                self.poll.unregister(fd)
        while self.sources and time.monotonic() < deadline:
            try:
                events = self.poll.poll(int(DRAIN_QUIET * 1000))
            except InterruptedError:
                continue
            if not events:
                break
            for fd, ev in events:
                src = self.sources.get(fd)
                if src is not None:
                    self._pump(src, ev & ~select.POLLOUT)
        for src in list(self.sources.values()):
            self._close_source(src)
        if self.child.master >= 0:
            with contextlib.suppress(OSError):
                os.close(self.child.master)


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        try:
            n = os.write(fd, data)
        except BlockingIOError:  # someone made our stdout non-blocking: wait, never drop
            select.select([], [fd], [], 1.0)
            continue
        except InterruptedError:
            continue
        except OSError as exc:
            raise _Broken from exc
        data = data[n:]
