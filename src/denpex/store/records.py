"""What the index keeps of one incident document: a summary row and its per-GPU events.

Incident files come from anywhere (``denpex diagnose --out``, the wrapper, a copy from another
node), so everything here is read defensively: a wrong type is treated as absent, never as a
crash. GPU events are taken from the quoted evidence lines, because that is the only place
the document ties a signature to a particular GPU.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, fields, replace
from datetime import UTC, datetime
from typing import Any

from denpex.collect.lineinfo import normalize_pci

SCHEMA = "denpex.incident/v1"
MAX_FILE_BYTES = 16 * 1024 * 1024
# Signature families whose PCI ids name a GPU. Kernel AER and InfiniBand lines name bridges
# and NICs; SXid lines name NVSwitches: counting those against a GPU would be wrong.
GPU_FAMILIES = frozenset({"xid", "ecc", "dcgm", "driver", "cuda", "nccl", "torch"})
# Families whose lines are values inside one GPU's section (nvidia-smi -q, dcgmi).
SECTION_FAMILIES = frozenset({"ecc", "dcgm"})
# The diagnosis calls this many GPUs with one Xid "the application or a peer" (diagnose/run.py).
MANY_GPUS = 3


# The same GPU ids the diagnosis reads (collect/lineinfo.py), without its rank/host parsing:
# kernel "NVRM: Xid (PCI:0000:3b:00): 79", nvidia-smi/DCGM "00000000:3B:00.0", "GPU-<uuid>".
_PCI_XID = re.compile(r"\(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-7])?\)")
_PCI_FULL = re.compile(r"(?<![\w:])([0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\b")
_GPU_UUID = re.compile(r"\b(GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\b")


def gpu_ids(text: str) -> tuple[str, str]:
    """(normalised PCI bus id, GPU UUID) named by a line, '' where it names none."""
    pci = ""
    m = _PCI_XID.search(text) if "PCI:" in text else None
    if m is None and text.count(":") >= 2:
        m = _PCI_FULL.search(text, 0, 400)
    if m is not None:
        pci = normalize_pci(m.group(1))
    u = _GPU_UUID.search(text) if "GPU-" in text else None
    return pci, u.group(1) if u else ""


class BadIncident(ValueError):
    """A file in the incidents folder is not an incident document."""


@dataclass(frozen=True)
class GpuEvent:
    gpu_key: str
    host: str
    pci_bus_id: str
    uuid: str
    signature: str
    ts: float | None
    time: str | None
    text: str
    source: str
    line_no: int
    root: bool
    many_gpus: bool = False


@dataclass
class IncidentRecord:
    id: str
    status: str
    owner: str
    category: str
    signature: str | None
    title: str
    summary: str
    fingerprint: str
    observed_ts: float
    generated_at: str | None
    hosts: list[str]
    rma_candidate: bool
    rma_reasons: list[str]
    clear_when: list[str]
    dcgm_diag: bool
    events: list[GpuEvent] = field(default_factory=list)


def parse_time(value: Any) -> float | None:
    """ISO 8601 to epoch seconds; a stamp without a zone is taken as UTC (the diagnosis could not tell)."""
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def iso_utc(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def load_document(raw: bytes) -> dict[str, Any]:
    if len(raw) > MAX_FILE_BYTES:
        raise BadIncident(f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadIncident("not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise BadIncident(f"not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(doc, dict):
        raise BadIncident("not a JSON object")
    if doc.get("schema") != SCHEMA:
        raise BadIncident(f"schema is {doc.get('schema')!r}, expected {SCHEMA!r}")
    if not isinstance(doc.get("id"), str) or not doc["id"].strip() or "/" in doc["id"]:
        raise BadIncident("no usable 'id'")
    if doc.get("status") not in ("failed", "healthy"):
        raise BadIncident("'status' is neither 'failed' nor 'healthy'")
    return doc


def gpu_key(host: str, pci: str, uuid: str) -> str:
    """A GPU's stable name: its UUID where known, else host/PCI bus id (the issue's identity rule)."""
    if uuid:
        return uuid
    return f"{host or '?'}/{pci}"


def _str(v: Any) -> str:
    return v if isinstance(v, str) else ""


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _evidence_lines(doc: dict[str, Any]) -> list[tuple[dict[str, Any], bool]]:
    """Every quoted line, once, with whether it is the root line."""
    out: list[tuple[dict[str, Any], bool]] = []
    seen: set[tuple[str, int]] = set()
    root_ev = _list(_dict(doc.get("root_cause")).get("evidence"))
    groups: list[list[Any]] = [root_ev, _list(doc.get("timeline"))]
    groups += [_list(_dict(r).get("evidence")) for r in _list(doc.get("rules_fired"))]
    groups += [_list(_dict(s).get("evidence")) for s in _list(doc.get("secondary"))]
    for gi, group in enumerate(groups):
        for ev in group:
            if not isinstance(ev, dict) or not isinstance(ev.get("text"), str):
                continue
            key = (_str(ev.get("source")), _int(ev.get("line_no")))
            if key in seen:
                continue
            seen.add(key)
            out.append((ev, gi == 0))
    return out


def _known_gpus(doc: dict[str, Any]) -> list[dict[str, str]]:
    out = []
    for g in _list(_dict(doc.get("affected")).get("gpus")):
        if not isinstance(g, dict):
            continue
        pci = _str(g.get("pci_bus_id"))
        out.append({"pci_bus_id": normalize_pci(pci) if pci else "", "uuid": _str(g.get("uuid")),
                    "host": _str(g.get("host"))})
    return out


def _events(doc: dict[str, Any], observed_ts: float, hosts: list[str]) -> list[GpuEvent]:
    known = _known_gpus(doc)
    only_host = hosts[0] if len(hosts) == 1 else ""
    root_sig = _str(_dict(doc.get("root_cause")).get("signature_id"))
    events: list[GpuEvent] = []
    for ev, is_root in _evidence_lines(doc):
        sig = _str(ev.get("signature_id")) or (root_sig if is_root else "")
        if not sig or sig.split(".", 1)[0] not in GPU_FAMILIES:
            continue
        text = ev["text"]
        pci, uuid = gpu_ids(text)
        host = _str(ev.get("host"))
        if not pci and not uuid:
            # The root line of a single-GPU incident, and nvidia-smi -q / DCGM values, name no GPU
            # themselves, but the diagnosis bound them to the only affected one. Other ranks'
            # CUDA/NCCL errors without a GPU id are consequences, not this GPU's history.
            if len(known) != 1 or not (is_root or sig.split(".", 1)[0] in SECTION_FAMILIES):
                continue
            pci, uuid, host = known[0]["pci_bus_id"], known[0]["uuid"], host or known[0]["host"]
        for g in known:  # complete the identity from affected.gpus
            if (pci and g["pci_bus_id"] == pci) or (uuid and g["uuid"] == uuid):
                pci, uuid, host = pci or g["pci_bus_id"], uuid or g["uuid"], host or g["host"]
                break
        host = host or only_host
        ts = parse_time(ev.get("time"))
        events.append(GpuEvent(gpu_key=gpu_key(host, pci, uuid), host=host, pci_bus_id=pci, uuid=uuid,
                               signature=sig, ts=ts if ts is not None else observed_ts,
                               time=_str(ev.get("time")) or None, text=text, source=_str(ev.get("source")),
                               line_no=_int(ev.get("line_no")), root=is_root))
    many = _many_gpu_signatures(doc, events)
    return [replace(e, many_gpus=True) if e.signature in many else e for e in events]


def _many_gpu_signatures(doc: dict[str, Any], events: list[GpuEvent]) -> set[str]:
    """Signatures seen on MANY_GPUS or more GPUs in this one incident: the job's, not each GPU's."""
    per_sig: dict[str, set[str]] = {}
    for e in events:
        per_sig.setdefault(e.signature, set()).add(e.gpu_key)
    many = {s for s, keys in per_sig.items() if len(keys) >= MANY_GPUS}
    for r in _list(doc.get("rules_fired")):
        if isinstance(r, dict) and r.get("rule") == "same_xid_many_gpus":
            many |= {_str(ev.get("signature_id")) for ev in _list(r.get("evidence")) if isinstance(ev, dict)}
    return many


def _observed_ts(doc: dict[str, Any], fallback: float) -> float:
    """When the failure happened: the root line's time, else the earliest timed line, else when diagnosed."""
    for ev in _list(_dict(doc.get("root_cause")).get("evidence")):
        ts = parse_time(_dict(ev).get("time"))
        if ts is not None:
            return ts
    times = [t for t in (parse_time(_dict(ev).get("time")) for ev in _list(doc.get("timeline"))) if t is not None]
    if times:
        return min(times)
    ts = parse_time(doc.get("generated_at"))
    return ts if ts is not None else fallback


def to_record(doc: dict[str, Any], mtime: float) -> IncidentRecord:
    observed = _observed_ts(doc, mtime)
    hosts = sorted({h for h in _list(_dict(doc.get("affected")).get("hosts")) if isinstance(h, str) and h})
    rma = _dict(doc.get("rma"))
    sources = _list(_dict(doc.get("coverage")).get("sources"))
    sig = _dict(doc.get("root_cause")).get("signature_id")
    return IncidentRecord(
        id=doc["id"], status=doc["status"], owner=_str(doc.get("owner")) or "unknown",
        category=_str(doc.get("category")), signature=sig if isinstance(sig, str) and sig else None,
        title=_str(doc.get("title")), summary=_str(doc.get("summary")), fingerprint=_str(doc.get("fingerprint")),
        observed_ts=observed, generated_at=_str(doc.get("generated_at")) or None, hosts=hosts,
        rma_candidate=rma.get("candidate") is True,
        rma_reasons=[r for r in _list(rma.get("reasons")) if isinstance(r, str)],
        clear_when=[c for c in _list(doc.get("clear_when")) if isinstance(c, str)],
        dcgm_diag=any(isinstance(s, dict) and s.get("kind") == "dcgm_diag" and _int(s.get("lines")) > 0
                      for s in sources),
        events=_events(doc, observed, hosts),
    )


def _int(v: Any) -> int:
    return v if isinstance(v, int) else 0


_EVENT_FIELDS = tuple(f.name for f in fields(GpuEvent))
_RECORD_FIELDS = tuple(f.name for f in fields(IncidentRecord) if f.name != "events")


def record_to_json(rec: IncidentRecord) -> str:
    """Compact and fast (``dataclasses.asdict`` deep-copies): events as rows in field order."""
    d: dict[str, Any] = {k: getattr(rec, k) for k in _RECORD_FIELDS}
    d["events"] = [[getattr(e, k) for k in _EVENT_FIELDS] for e in rec.events]
    return json.dumps(d, separators=(",", ":"), ensure_ascii=False)


def record_from_json(raw: str) -> IncidentRecord:
    d = json.loads(raw)
    events = [GpuEvent(*row) for row in d.pop("events", [])]
    return IncidentRecord(**d, events=events)
