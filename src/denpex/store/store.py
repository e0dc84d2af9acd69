"""The local incident store: files are the truth, the index answers the questions.

Any producer may drop ``<id>.json`` into ``$DENPEX_HOME/incidents/``; ``add`` is the
in-process way to do the same and stores an id once (a second report of the same evidence is
the same incident). Hand-made lifecycle decisions go to ``clears/<id>.json`` so that they
survive an index rebuild and travel with the incidents.
"""

from __future__ import annotations

import getpass
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from denpex.store.index import CLEAR_SCHEMA, Index
from denpex.store.layout import Layout, StoreError, atomic_write_text, denpex_home, dump_json
from denpex.store.lock import exclusive
from denpex.store.records import BadIncident, IncidentRecord, iso_utc, load_document


@dataclass(frozen=True)
class AddResult:
    id: str
    path: Path
    created: bool


class Store:
    def __init__(self, home: str | os.PathLike[str] | None = None) -> None:
        self.layout = Layout(denpex_home(home))
        self.index = Index(self.layout)
        self.index.refresh()

    def close(self) -> None:
        self.index.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- writing --------------------------------------------------------------------------------
    def add(self, doc: dict[str, Any]) -> AddResult:
        """Store one incident document; an id already stored is left as it is (its first report wins)."""
        try:
            load_document(dump_json(doc).encode())
        except BadIncident as exc:
            raise StoreError(f"not an incident document: {exc}") from exc
        self.layout.ensure()
        target = self.layout.incidents / f"{doc['id']}.json"
        if target.exists():
            return AddResult(doc["id"], target, False)
        try:
            atomic_write_text(target, dump_json(doc))
        except OSError as exc:
            raise StoreError(f"cannot write {target}: {exc.strerror or exc}") from exc
        self.index.refresh()
        return AddResult(doc["id"], target, True)

    def add_file(self, path: Path) -> AddResult:
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from exc
        try:
            doc = load_document(raw)
        except BadIncident as exc:
            raise StoreError(f"{path}: not an incident document: {exc}") from exc
        return self.add(doc)

    def clear(self, incident_id: str, reason: str, by: str | None = None, exclude: bool = False,
              now: float | None = None) -> dict[str, Any]:
        """Record a hand-made clear. A later clear of the same incident keeps the earlier ones in history."""
        if not reason.strip():
            raise StoreError("a clear needs a reason")
        rec = self.find(incident_id)[1]
        self.layout.ensure()
        path = self.layout.clears / f"{rec.id}.json"
        entry = {"reason": reason.strip(), "by": by or _user(), "at": iso_utc(now if now is not None else time.time()),
                 "exclude": exclude}
        with exclusive(self.layout.lock):
            history: list[dict[str, Any]] = []
            previous = self.index.clears().get(rec.id)
            if previous is not None:
                earlier = {k: previous.get(k) for k in ("reason", "by", "at", "exclude")}
                history = [*previous.get("history", []), earlier]
            data = {"schema": CLEAR_SCHEMA, "incident_id": rec.id, **entry, "history": history}
            try:
                atomic_write_text(path, dump_json(data))
            except OSError as exc:
                raise StoreError(f"cannot write {path}: {exc.strerror or exc}") from exc
        self.index.refresh()
        return data

    # -- reading --------------------------------------------------------------------------------
    def records(self) -> list[IncidentRecord]:
        return [rec for _, rec in self.index.records()]

    def clears(self) -> dict[str, dict[str, Any]]:
        return self.index.clears()

    def bad_files(self) -> list[tuple[str, str]]:
        return self.index.bad_files()

    def find(self, id_or_prefix: str) -> tuple[Path, IncidentRecord]:
        """An incident by id or a unique prefix of it (``dpx-3ad7`` is enough to type)."""
        matches = [(f, r) for f, r in self.index.records() if r.id == id_or_prefix]
        if not matches:
            matches = [(f, r) for f, r in self.index.records() if r.id.startswith(id_or_prefix)]
        if not matches:
            raise StoreError(f"no incident {id_or_prefix!r} in {self.layout.incidents}")
        if len(matches) > 1:
            raise StoreError(f"{id_or_prefix!r} is ambiguous: " + ", ".join(r.id for _, r in matches[:5]))
        file, rec = matches[0]
        return self.layout.home / file, rec

    def document(self, id_or_prefix: str) -> dict[str, Any]:
        path = self.find(id_or_prefix)[0]
        try:
            return load_document(path.read_bytes())
        except (OSError, BadIncident) as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"
