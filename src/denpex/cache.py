"""Where derived data that is cheap to rebuild is kept between runs.

Compiled Hyperscan databases and the validated catalog live here. It is a cache, not state:
anything unreadable or stale is rebuilt, and a read-only home only costs time.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


def cache_dir() -> Path:
    """$DENPEX_CACHE, else the XDG cache folder (``~/.cache/denpex``)."""
    if os.environ.get("DENPEX_CACHE"):
        return Path(os.environ["DENPEX_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "denpex"


def write_atomic(path: Path, data: bytes) -> None:
    """Write or silently give up; readers never see a half-written file."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
