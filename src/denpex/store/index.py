"""The SQLite index over the store's files: a cache, rebuilt from the files, never trusted blindly.

Every open checks the database (``PRAGMA quick_check``, schema version) and starts over from
the files when anything is off. Every use compares the folder listing (name, size, mtime,
inode) with what was indexed and re-reads the files that changed, under an exclusive lock
so that concurrent commands index each file once. WAL and a busy timeout let readers go on
while one process writes. When the home is read-only (a copied folder, a mounted snapshot)
the index lives in memory for the one command.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from denpex.store.layout import CLEARS, INCIDENTS, Layout, StoreError
from denpex.store.lock import exclusive
from denpex.store.records import (
    BadIncident,
    IncidentRecord,
    load_document,
    record_from_json,
    record_to_json,
    to_record,
)

SCHEMA_VERSION = "2"
BUSY_TIMEOUT_MS = 30_000
Stat = tuple[int, int, int]

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (name TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
                                  ino INTEGER NOT NULL, error TEXT);
CREATE TABLE IF NOT EXISTS incidents (file TEXT PRIMARY KEY, id TEXT NOT NULL, status TEXT NOT NULL,
                                      owner TEXT NOT NULL, signature TEXT, observed_ts REAL NOT NULL,
                                      record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS incidents_id ON incidents (id);
CREATE INDEX IF NOT EXISTS incidents_time ON incidents (observed_ts);
CREATE TABLE IF NOT EXISTS gpu_events (file TEXT NOT NULL, incident_id TEXT NOT NULL, gpu_key TEXT NOT NULL,
                                       signature TEXT NOT NULL, ts REAL);
CREATE INDEX IF NOT EXISTS gpu_events_key ON gpu_events (gpu_key, ts);
CREATE INDEX IF NOT EXISTS gpu_events_file ON gpu_events (file);
CREATE TABLE IF NOT EXISTS clears (file TEXT PRIMARY KEY, incident_id TEXT NOT NULL, data TEXT NOT NULL);
"""


class Index:
    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.in_memory = False
        self.rebuilt_reason: str | None = None
        self.conn = self._open()

    # -- opening -------------------------------------------------------------------------
    def _open(self) -> sqlite3.Connection:
        try:
            self.layout.ensure()
            with exclusive(self.layout.lock):
                return self._open_checked()
        except (StoreError, OSError, sqlite3.OperationalError) as exc:
            if os.access(self.layout.incidents, os.W_OK):
                raise StoreError(f"cannot open the index {self.layout.index}: {exc}") from exc
            self.in_memory = True  # read-only home: the files are still the truth
            conn = sqlite3.connect(":memory:", isolation_level=None)
            conn.executescript(_DDL)
            return conn

    def _open_checked(self) -> sqlite3.Connection:
        path = self.layout.index
        try:
            conn = self._connect(path)
            problem = self._problem(conn)
        except sqlite3.DatabaseError as exc:
            problem = f"unreadable ({exc})"
            conn = None
        if problem is None:
            assert conn is not None
            return conn
        if conn is not None:
            conn.close()
        self.rebuilt_reason = problem
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(str(path) + suffix).unlink(missing_ok=True)
        conn = self._connect(path)
        conn.executescript(_DDL)
        conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)", (SCHEMA_VERSION,))
        return conn

    @staticmethod
    def _connect(path: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        return conn

    @staticmethod
    def _problem(conn: sqlite3.Connection) -> str | None:
        """Why this database must not be trusted, or None. A fresh empty file is 'no schema'."""
        rows = conn.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in rows] != ["ok"]:
            return "failed its integrity check"
        try:
            row = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError:
            return "no schema"
        if row is None or row[0] != SCHEMA_VERSION:
            return f"schema version {row[0] if row else None} is not {SCHEMA_VERSION}"
        try:  # every table present and readable
            for table in ("files", "incidents", "gpu_events", "clears"):
                conn.execute(f"SELECT count(*) FROM {table}").fetchone()
        except sqlite3.DatabaseError as exc:
            return f"table unreadable ({exc})"
        return None

    def close(self) -> None:
        self.conn.close()

    # -- keeping up with the files -----------------------------------------------------------
    def _scan(self) -> dict[str, Stat]:
        out: dict[str, Stat] = {}
        for sub in (INCIDENTS, CLEARS):
            folder = self.layout.home / sub
            try:
                entries = list(os.scandir(folder))
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise StoreError(f"cannot list {folder}: {exc.strerror or exc}") from exc
            for e in entries:
                if not e.name.endswith(".json") or e.name.startswith("."):
                    continue
                try:
                    st = e.stat()
                except OSError:
                    continue  # vanished between listing and stat
                if e.is_file():
                    out[f"{sub}/{e.name}"] = (st.st_size, st.st_mtime_ns, st.st_ino)
        return out

    def _indexed(self) -> dict[str, Stat]:
        return {r[0]: (r[1], r[2], r[3]) for r in self.conn.execute("SELECT name, size, mtime_ns, ino FROM files")}

    def refresh(self) -> int:
        """Bring the index up to date with the folders; returns how many files were (re)read."""
        current = self._scan()
        if current == self._indexed():
            return 0
        lock = nullcontext() if self.in_memory else exclusive(self.layout.lock)
        with lock:
            indexed = self._indexed()  # another process may have done the work meanwhile
            changed = sorted(n for n, st in current.items() if indexed.get(n) != st)
            removed = sorted(n for n in indexed if n not in current)
            parsed = [(n, current[n], self._read(n, current[n])) for n in changed]
            with self._transaction():
                for name in removed + changed:
                    self._forget(name)
                for name, st, item in parsed:
                    self._remember(name, st, item)
        return len(changed) + len(removed)

    def _read(self, name: str, st: Stat) -> IncidentRecord | dict[str, Any] | str | None:
        """The parsed file, an error message for a bad one, or None when it vanished."""
        path = self.layout.home / name
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            return f"unreadable: {exc.strerror or exc}"
        try:
            if name.startswith(CLEARS + "/"):
                return _load_clear(raw)
            return to_record(load_document(raw), st[1] / 1e9)
        except BadIncident as exc:
            return str(exc)

    def _forget(self, name: str) -> None:
        for table, col in (("files", "name"), ("incidents", "file"), ("gpu_events", "file"), ("clears", "file")):
            self.conn.execute(f"DELETE FROM {table} WHERE {col}=?", (name,))

    def _remember(self, name: str, st: Stat, item: IncidentRecord | dict[str, Any] | str | None) -> None:
        if item is None:
            return
        self.conn.execute("INSERT INTO files VALUES (?,?,?,?,?)", (name, *st, item if isinstance(item, str) else None))
        if isinstance(item, IncidentRecord):
            self.conn.execute("INSERT INTO incidents VALUES (?,?,?,?,?,?,?)",
                              (name, item.id, item.status, item.owner, item.signature, item.observed_ts,
                               record_to_json(item)))
            self.conn.executemany("INSERT INTO gpu_events VALUES (?,?,?,?,?)",
                                  [(name, item.id, e.gpu_key, e.signature, e.ts) for e in item.events])
        elif isinstance(item, dict):
            self.conn.execute("INSERT INTO clears VALUES (?,?,?)", (name, item["incident_id"], json.dumps(item)))

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    # -- queries ----------------------------------------------------------------------------
    def records(self) -> list[tuple[str, IncidentRecord]]:
        """(file, record) per incident id; when two files carry one id, the one named after it wins."""
        best: dict[str, tuple[str, IncidentRecord]] = {}
        for file, raw in self.conn.execute("SELECT file, record FROM incidents ORDER BY observed_ts, id, file"):
            rec = record_from_json(raw)
            prev = best.get(rec.id)
            if prev is None or (_canonical(file, rec.id), file) < (_canonical(prev[0], rec.id), prev[0]):
                best[rec.id] = (file, rec)
        return sorted(best.values(), key=lambda fr: (fr[1].observed_ts, fr[1].id))

    def clears(self) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for iid, raw in self.conn.execute("SELECT incident_id, data FROM clears ORDER BY file"):
            out[iid] = json.loads(raw)
        return out

    def bad_files(self) -> list[tuple[str, str]]:
        return [(r[0], r[1]) for r in self.conn.execute("SELECT name, error FROM files WHERE error IS NOT NULL "
                                                        "ORDER BY name")]

    def incident_ids_for_gpu(self, key: str) -> set[str]:
        return {r[0] for r in self.conn.execute("SELECT DISTINCT incident_id FROM gpu_events WHERE gpu_key=?",
                                                (key,))}


def _canonical(file: str, iid: str) -> int:
    return 0 if file == f"{INCIDENTS}/{iid}.json" else 1


CLEAR_SCHEMA = "denpex.clear/v1"


def _load_clear(raw: bytes) -> dict[str, Any]:
    try:
        d = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise BadIncident("clear record is not JSON") from None
    if not isinstance(d, dict) or d.get("schema") != CLEAR_SCHEMA or not isinstance(d.get("incident_id"), str):
        raise BadIncident(f"not a {CLEAR_SCHEMA} record")
    if not isinstance(d.get("reason"), str) or not isinstance(d.get("at"), str):
        raise BadIncident("clear record without reason or time")
    return d
