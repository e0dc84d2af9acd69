"""An exclusive advisory lock on a file, so that one process at a time rebuilds the index.

``flock`` is released by the kernel when the process dies, so a crashed writer never leaves
the store locked. Polling with a deadline (instead of a blocking call) keeps a wedged peer
from hanging every command forever.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from denpex.store.layout import StoreError

DEFAULT_TIMEOUT_S = 60.0


@contextmanager
def exclusive(path: Path, timeout_s: float = DEFAULT_TIMEOUT_S) -> Iterator[None]:
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise StoreError(f"cannot open lock file {path}: {exc.strerror or exc}") from exc
    try:
        deadline = time.monotonic() + timeout_s
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise StoreError(f"the store is locked by another process ({path}); "
                                     f"gave up after {timeout_s:.0f} s") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
