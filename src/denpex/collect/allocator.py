"""Keep freed read blocks in the process instead of handing them back to the kernel.

Reading a large input allocates a block of a few MiB at a time. glibc gives memory freed at
the top of its heap back to the kernel and serves large requests with fresh mappings, so each
new block was zeroed and faulted in again page by page: about 1.3 page faults per page read,
and on the 10 GiB benchmark most of the scan's kernel time (0.32 -> 0.10 s of system time and
104k -> 12k minor faults for 300 MB of rank files). With higher trim and mapping thresholds a
freed block is reused as it is. Peak memory does not grow: the heap only keeps what the
busiest moment needed. Only glibc has ``mallopt``; elsewhere nothing changes.
"""

from __future__ import annotations

import functools

M_TRIM_THRESHOLD = -1  # glibc <malloc.h>
M_MMAP_THRESHOLD = -3
TRIM_THRESHOLD = 256 * 1024 * 1024  # free memory the heap may keep before returning it
MMAP_THRESHOLD = 32 * 1024 * 1024  # glibc's largest allowed value; blocks are far smaller


@functools.cache
def reuse_freed_blocks() -> bool:
    """Tell glibc's allocator to keep freed blocks; True where it took the settings."""
    try:
        import ctypes
        import ctypes.util

        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError, ImportError):
        return False  # not glibc (musl, macOS, Windows): the default allocator stays
    return bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))
