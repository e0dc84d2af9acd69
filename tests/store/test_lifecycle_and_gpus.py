"""Lifecycle of findings, GPU history and RMA candidacy, on incidents diagnosed by the real engine."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from denpex.catalog import Catalog
from denpex.store import Store, find_gpu
from denpex.store.view import Snapshot, snapshot
from tests.store.conftest import FIXTURES, MakeIncident, xid

H = "gpu-node03"
BUS = "0000:3b:00"
KEY = f"{H}/{BUS}.0"


def ts(day: int, hour: int = 12, minute: int = 0) -> str:
    return f"2026-05-{day:02d}T{hour:02d}:{minute:02d}:00+0000"


def epoch(day: int, hour: int = 12) -> float:
    return datetime(2026, 5, day, hour, tzinfo=UTC).timestamp()


def stored(tmp: Path, catalog: Catalog, make: MakeIncident, incidents: list[list[str]], now: float,
           window_days: int = 30) -> tuple[Store, Snapshot, list[str]]:
    store = Store(tmp)
    ids = [store.add(make(*lines)).id for lines in incidents]
    return store, snapshot(store, catalog, now=now, window_days=window_days), ids


# -- lifecycle -------------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "incidents", "now", "expect"), [
    ("application Xid is open at first", [[xid(ts(1), H, BUS, 13)]], epoch(1, 13), ["open"]),
    ("application Xid clears after 24 h quiet", [[xid(ts(1), H, BUS, 13)]], epoch(2, 13), ["quiet"]),
    ("application Xid clears when the GPU runs other work",
     [[xid(ts(1), H, BUS, 13)], [xid(ts(1, 14), H, BUS, 48)]], epoch(1, 15), ["ran_again", "open"]),
    ("a recurrence carries the finding on", [[xid(ts(1), H, BUS, 48)], [xid(ts(3), H, BUS, 48)]], epoch(20),
     ["recurred", "open"]),
    ("a hardware finding never clears by time alone", [[xid(ts(1), H, BUS, 79)]], epoch(28), ["open"]),
    ("another node's incident does not clear it",
     [[xid(ts(1), H, BUS, 13)], [xid(ts(1, 13), "gpu-node09", BUS, 48)]], epoch(1, 14), ["open", "open"]),
])
def test_lifecycle(tmp_path: Path, catalog: Catalog, make_incident: MakeIncident, name: str,
                   incidents: list[list[str]], now: float, expect: list[str]) -> None:
    store, snap, ids = stored(tmp_path, catalog, make_incident, incidents, now)
    assert [snap.states[i].how for i in ids] == expect, name
    store.close()


def test_passing_dcgm_diag_clears_a_fallen_off_bus_gpu(tmp_path: Path, catalog: Catalog,
                                                       make_incident: MakeIncident) -> None:
    with Store(tmp_path) as store:
        # no host on either side: the node whose store this is
        bad = store.add(make_incident("[Fri Jan  5 10:00:00 2024] NVRM: Xid (PCI:0000:41:00): 79, pid='<unknown>', "
                                      "name=<unknown>, GPU has fallen off the bus.")).id
        assert snapshot(store, catalog).states[bad].open
        doc = make_incident(files={"dcgmi-diag.txt": (FIXTURES / "dcgmi-diag-r3-pass.txt").read_text()})
        assert doc["status"] == "healthy"
        store.add(doc)  # untimed: observed when diagnosed, i.e. after the Xid
        state = snapshot(store, catalog).states[bad]
    assert (state.open, state.how) == (False, "dcgm_passed"), state


def test_clear_by_hand_is_recorded_with_history(tmp_path: Path, catalog: Catalog, make_incident: MakeIncident) -> None:
    store, snap, (iid,) = stored(tmp_path, catalog, make_incident, [[xid(ts(1), H, BUS, 79)]], epoch(2))
    assert snap.states[iid].open
    store.clear(iid[:12], "reseated, dcgmi diag -r 3 passed", by="ops-alice", now=epoch(2))
    second = store.clear(iid, "replaced the riser as well", by="ops-bob", now=epoch(3))
    assert second["history"][0]["by"] == "ops-alice" and second["reason"] == "replaced the riser as well"
    # the clear is a file: it survives an index rebuild
    (tmp_path / "index.sqlite3").write_bytes(b"garbage")
    store.close()
    with Store(tmp_path) as again:
        st = snapshot(again, catalog, now=epoch(4)).states[iid]
    assert (st.open, st.how, st.cleared_at) == (False, "by_hand", "2026-05-03T12:00:00Z")
    assert "ops-bob" in st.reason


# -- GPU history and RMA -------------------------------------------------------------------------------

@pytest.mark.parametrize(("name", "incidents", "candidate", "why"), [
    ("Xid 48 twice in 30 days", [[xid(ts(1), H, BUS, 48)], [xid(ts(20), H, BUS, 48)]], True, "recurrence"),
    ("Xid 48 then Xid 94 (both memory)", [[xid(ts(1), H, BUS, 48)], [xid(ts(5), H, BUS, 94)]], True, "2 separate"),
    ("Xid 48 once", [[xid(ts(1), H, BUS, 48)]], False, "needs 2 within 30 days"),
    ("Xid 48 twice within minutes is one episode",
     [[xid(ts(1), H, BUS, 48)], [xid(ts(1, 12, 3), H, BUS, 48)]], False, "1 episode"),
    ("Xid 64 (row remapper failure) once", [[xid(ts(1), H, BUS, 64)]], True, "resolution for it is hardware"),
    ("Xid 79 once", [[xid(ts(1), H, BUS, 79)]], True, "fallen off the bus"),
    ("application Xid 13 many times", [[xid(ts(d), H, BUS, 13)] for d in (1, 2, 3)], False,
     "no event on record has a hardware resolution"),
    ("same Xid 48 on four GPUs of one job, twice",
     [[xid(ts(d), H, b, 48) for b in ("0000:3b:00", "0000:5b:00", "0000:9b:00", "0000:bb:00")] for d in (1, 9)],
     False, "3 or more GPUs"),
])
def test_rma_candidacy(tmp_path: Path, catalog: Catalog, make_incident: MakeIncident, name: str,
                       incidents: list[list[str]], candidate: bool, why: str) -> None:
    store, snap, _ = stored(tmp_path, catalog, make_incident, incidents, epoch(28))
    (g,) = find_gpu(snap.gpus, KEY)
    assert g.rma.candidate is candidate, (name, g.rma)
    assert why in " ".join(g.rma.reasons + g.rma.why_not), (name, g.rma)
    store.close()


def test_recurrence_outside_the_window_does_not_count(tmp_path: Path, catalog: Catalog,
                                                      make_incident: MakeIncident) -> None:
    incidents = [[xid("2026-03-01T12:00:00+0000", H, BUS, 48)], [xid(ts(1), H, BUS, 48)]]  # 61 days apart
    store, snap, _ = stored(tmp_path, catalog, make_incident, incidents, epoch(2))
    assert not find_gpu(snap.gpus, KEY)[0].rma.candidate
    assert find_gpu(snapshot(store, catalog, now=epoch(2), window_days=90).gpus, KEY)[0].rma.candidate
    store.close()


def test_excluded_incident_does_not_count(tmp_path: Path, catalog: Catalog, make_incident: MakeIncident) -> None:
    store, _, (a, _b) = stored(tmp_path, catalog, make_incident,
                               [[xid(ts(1), H, BUS, 48)], [xid(ts(9), H, BUS, 48)]], epoch(10))
    store.clear(a, "fault injection test", exclude=True)
    g = find_gpu(snapshot(store, catalog, now=epoch(10)).gpus, KEY)[0]
    assert not g.rma.candidate and "excluded by hand: fault injection test" in " ".join(g.rma.why_not)
    store.close()


def test_gpu_status_returns_to_ok_after_an_application_xid(tmp_path: Path, catalog: Catalog,
                                                          make_incident: MakeIncident) -> None:
    store, snap, _ = stored(tmp_path, catalog, make_incident, [[xid(ts(1), H, BUS, 13)]], epoch(1, 13))
    assert find_gpu(snap.gpus, KEY)[0].status == "watch"
    assert find_gpu(snapshot(store, catalog, now=epoch(3)).gpus, KEY)[0].status == "ok"
    store.close()


def test_uuid_and_host_pci_histories_merge(tmp_path: Path, catalog: Catalog, make_incident: MakeIncident) -> None:
    smi = (FIXTURES / "nvidia-smi-q-2gpu.txt").read_text()
    store = Store(tmp_path)
    store.add(make_incident(files={"nvidia-smi-q.txt": smi}))
    store.add(make_incident("[Sun Nov 29 14:01:01 2026] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', "
                            "name=<unknown>, GPU has fallen off the bus."))
    gpus = snapshot(store, catalog).gpus
    (g,) = [g for g in gpus if g.pci_bus_id == "0000:18:00.0"]
    assert g.key == "GPU-11111111-2222-3333-4444-555555555555"
    assert set(g.signature_counts()) >= {"ecc.row_remap_failure", "xid.79"}
    assert g.rma.candidate and g.status == "rma_candidate"
    assert find_gpu(gpus, "0000:18:00.0") == [g] and find_gpu(gpus, "00000000:18:00.0") == [g]
    store.close()


@pytest.mark.parametrize(("query", "found"), [
    (KEY, 1), (f"{H}:{BUS}.0", 1), (f"{H}/{BUS}", 1), (f"{BUS}.0", 1), ("nonsense", 0), ("other/0000:3b:00.0", 0),
])
def test_find_gpu_spellings(tmp_path: Path, catalog: Catalog, make_incident: MakeIncident, query: str,
                            found: int) -> None:
    store, snap, _ = stored(tmp_path, catalog, make_incident, [[xid(ts(1), H, BUS, 48)]], epoch(2))
    assert len(find_gpu(snap.gpus, query)) == found
    store.close()
