"""The store: files are the truth, the index follows them, nothing is lost or trusted blindly."""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from denpex.report.json_report import write_incident
from denpex.store import Store, StoreError
from tests.store.conftest import MakeIncident, xid


def _ids(store: Store) -> list[str]:
    return sorted(r.id for r in store.records())


def test_added_incident_is_listed_and_readable(tmp_path: Path, make_incident: MakeIncident) -> None:
    doc = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 79))
    with Store(tmp_path) as store:
        res = store.add(doc)
        assert res.created and res.path == tmp_path / "incidents" / f"{doc['id']}.json"
        assert _ids(store) == [doc["id"]]
        assert store.document(doc["id"][:10]) == doc
        rec = store.find(doc["id"])[1]
        assert (rec.signature, rec.owner, rec.status) == ("xid.79", "gpu_hardware", "failed")
        assert [(e.gpu_key, e.signature) for e in rec.events] == [("gpu-node03/0000:3b:00.0", "xid.79")]


def test_same_incident_reported_twice_is_stored_once(tmp_path: Path, make_incident: MakeIncident) -> None:
    line = xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 48)
    first, second = make_incident(line), make_incident(line)
    assert first["id"] == second["id"]  # deterministic ids: same evidence, same id
    with Store(tmp_path) as store:
        assert store.add(first).created
        assert not store.add(second).created
        # a copy under another name (e.g. from another node) is still one incident
        shutil.copy(tmp_path / "incidents" / f"{first['id']}.json", tmp_path / "incidents" / "copy-from-node12.json")
        store.index.refresh()
        assert _ids(store) == [first["id"]]


@pytest.mark.parametrize("writer", ["diagnose_out", "plain_copy"])
def test_files_written_by_any_path_are_picked_up(tmp_path: Path, make_incident: MakeIncident, writer: str) -> None:
    doc = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 13))
    with Store(tmp_path) as store:
        assert _ids(store) == []
        if writer == "diagnose_out":
            write_incident(doc, tmp_path / "incidents")  # what `denpex diagnose --out` does
        else:
            (tmp_path / "incidents" / "x.json").write_text(json.dumps(doc))
        assert _ids(Store(tmp_path)) == [doc["id"]]  # a new command sees it
        store.index.refresh()
        assert _ids(store) == [doc["id"]]  # a long-running one too (the exporter)


def test_removed_file_leaves_the_index(tmp_path: Path, make_incident: MakeIncident) -> None:
    doc = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 13))
    with Store(tmp_path) as store:
        store.add(doc).path.unlink()
        store.index.refresh()
        assert _ids(store) == []
        assert store.index.incident_ids_for_gpu("gpu-node03/0000:3b:00.0") == set()


@pytest.mark.parametrize(("name", "content", "error"), [
    ("junk.json", b"\x00\xff\xfe binary", "not UTF-8"),
    ("truncated.json", b'{"schema": "denpex.incident/v1", "id": "dpx-1"', "not JSON"),
    ("list.json", b"[1, 2]", "not a JSON object"),
    ("other-schema.json", b'{"schema": "something/v2", "id": "x", "status": "failed"}', "schema"),
    ("no-id.json", b'{"schema": "denpex.incident/v1", "status": "failed"}', "id"),
])
def test_bad_files_are_skipped_and_reported(tmp_path: Path, make_incident: MakeIncident, name: str,
                                            content: bytes, error: str) -> None:
    good = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 13))
    (tmp_path / "incidents").mkdir(parents=True)
    (tmp_path / "incidents" / name).write_bytes(content)
    with Store(tmp_path) as store:
        store.add(good)
        assert _ids(store) == [good["id"]]
        bad = store.bad_files()
        assert [b[0] for b in bad] == [f"incidents/{name}"] and error in bad[0][1]


@pytest.mark.parametrize("damage", ["garbage", "truncated", "wrong_schema_version", "dropped_table"])
def test_corrupt_index_is_rebuilt_from_the_files(tmp_path: Path, make_incident: MakeIncident, damage: str) -> None:
    doc = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 48))
    with Store(tmp_path) as store:
        store.add(doc)
    index = tmp_path / "index.sqlite3"
    for suffix in ("-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    if damage == "garbage":
        index.write_bytes(b"this is not a database" * 100)
    elif damage == "truncated":
        index.write_bytes(index.read_bytes()[:700])
    else:
        conn = sqlite3.connect(index)
        if damage == "wrong_schema_version":
            conn.execute("UPDATE meta SET value='0'")
        else:
            conn.execute("DROP TABLE gpu_events")
        conn.commit()
        conn.close()
    with Store(tmp_path) as store:
        assert store.index.rebuilt_reason is not None
        assert _ids(store) == [doc["id"]]
        assert [e.signature for r in store.records() for e in r.events] == ["xid.48"]


def test_lying_index_rows_are_replaced_when_files_change(tmp_path: Path, make_incident: MakeIncident) -> None:
    """The manifest (name, size, mtime, inode) decides, so an edited file is re-read."""
    a = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 48))
    with Store(tmp_path) as store:
        path = store.add(a).path
        edited = dict(a, owner="unknown")
        path.write_text(json.dumps(edited))
        os.utime(path, ns=(1, 1))
        store.index.refresh()
        assert store.records()[0].owner == "unknown"


def _writer(home: str, docs: list[dict[str, Any]]) -> None:
    with Store(home) as store:
        for d in docs:
            store.add(d)
            store.records()


def test_concurrent_writers_lose_nothing(tmp_path: Path, make_incident: MakeIncident) -> None:
    docs = [make_incident(xid(f"2026-05-01T12:{m:02d}:00+0000", f"node{m}", "0000:3b:00", 13)) for m in range(24)]
    assert len({d["id"] for d in docs}) == 24
    ctx = multiprocessing.get_context("fork")
    # eight "ranks" at once, with overlapping reports (each incident reported by two of them)
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), docs[i * 3:(i + 1) * 3] + docs[((i + 1) % 8) * 3:][:3]))
             for i in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    with Store(tmp_path) as store:
        assert _ids(store) == sorted(d["id"] for d in docs)
        assert len(list((tmp_path / "incidents").glob("*.json"))) == 24
        assert store.bad_files() == []


def test_unknown_or_ambiguous_id_is_a_clear_error(tmp_path: Path, make_incident: MakeIncident) -> None:
    with Store(tmp_path) as store:
        store.add(make_incident(xid("2026-05-01T12:00:00+0000", "a", "0000:3b:00", 13)))
        store.add(make_incident(xid("2026-05-01T12:00:00+0000", "b", "0000:3b:00", 13)))
        with pytest.raises(StoreError, match="no incident"):
            store.find("dpx-nothing")
        with pytest.raises(StoreError, match="ambiguous"):
            store.find("dpx-")


def test_not_an_incident_is_refused_on_add(tmp_path: Path) -> None:
    with Store(tmp_path) as store, pytest.raises(StoreError, match="not an incident"):
        store.add({"id": "x"})


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores file permissions")
def test_read_only_home_uses_an_in_memory_index(tmp_path: Path, make_incident: MakeIncident) -> None:
    doc = make_incident(xid("2026-05-01T12:00:00+0000", "gpu-node03", "0000:3b:00", 13))
    write_incident(doc, tmp_path / "incidents")
    (tmp_path / "clears").mkdir()
    for d in (tmp_path / "incidents", tmp_path / "clears", tmp_path):
        d.chmod(0o555)
    try:
        with Store(tmp_path) as store:
            assert store.index.in_memory and _ids(store) == [doc["id"]]
    finally:
        for d in (tmp_path, tmp_path / "incidents", tmp_path / "clears"):
            d.chmod(0o755)
