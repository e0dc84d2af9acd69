"""Where the local store lives, and the atomic writes every part of it uses.

``$DENPEX_HOME`` (default ``~/.denpex``) holds ``incidents/*.json`` (the truth, one file per
incident, written by any producer), ``clears/*.json`` (hand-made lifecycle decisions, also
truth) and ``index.sqlite3`` (a cache of both that can always be thrown away).
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

INCIDENTS = "incidents"
CLEARS = "clears"
INDEX = "index.sqlite3"
LOCK = ".index.lock"


class StoreError(Exception):
    """The store cannot be used (unwritable home, lock timeout, unknown id); one line for the user."""


def denpex_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get("DENPEX_HOME", "").strip()
    return Path(env).expanduser() if env else Path.home() / ".denpex"


@dataclass(frozen=True)
class Layout:
    home: Path

    @property
    def incidents(self) -> Path:
        return self.home / INCIDENTS

    @property
    def clears(self) -> Path:
        return self.home / CLEARS

    @property
    def index(self) -> Path:
        return self.home / INDEX

    @property
    def lock(self) -> Path:
        return self.home / LOCK

    def ensure(self) -> None:
        try:
            for d in (self.home, self.incidents, self.clears):
                d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store in {self.home}: {exc.strerror or exc}") from exc


def atomic_write_text(path: Path, text: str) -> None:
    """Temp file in the same folder, fsync, rename: readers see the old or the new file, never half."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def dump_json(doc: Any) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
