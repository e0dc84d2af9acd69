"""The RMA evidence packet for one GPU: what a vendor's support asks for, and nothing invented.

Identity (UUID, serial, PCI id, host, driver, VBIOS) where the evidence or ``nvidia-smi -q``
knows it and "unknown" where it does not; every Xid/ECC/remap line quoted with its time and
incident; the recurrence verdict with its reasons; the tests to run before shipping a board;
and the plain statement that the vendor decides. A GPU whose evidence does not justify a
return gets the same packet saying why not, so that the question is answered either way.
"""

from __future__ import annotations

import re
from typing import Any

from denpex.catalog.loader import Catalog
from denpex.store.gpus import GpuHistory
from denpex.store.lifecycle import FindingState
from denpex.store.records import IncidentRecord, iso_utc

PACKET_SCHEMA = "denpex.rma_packet/v1"
VENDOR_DECIDES = ("Denpex gathers evidence; it does not decide a return. NVIDIA or the server vendor decides "
                  "whether this GPU is replaced, usually after its field diagnostic has run.")
_IDENTITY_FIELDS = ("uuid", "serial", "pci_bus_id", "host", "product", "board_part_number", "driver_version",
                    "vbios")


def before_sending(g: GpuHistory) -> list[dict[str, str]]:
    sel = f" -i {g.pci_bus_id}" if g.pci_bus_id else ""
    return [
        {"step": "Drain the node and record the GPU's memory error counters.",
         "command": f"nvidia-smi -q{sel} -d ECC,ROW_REMAPPER,PAGE_RETIREMENT"},
        {"step": "Reset the GPU (or reboot the node) so pending remaps are applied.",
         "command": f"nvidia-smi -r{sel}"},
        {"step": "Run DCGM's long diagnostic; attach its full output.", "command": "dcgmi diag -r 3"},
        {"step": "Run NVIDIA's field diagnostic (fieldiag, from NVIDIA Enterprise Support or the server OEM) "
                  "as its guide describes; vendors ask for its log with every GPU return.",
         "command": "./fieldiag.sh --no_bmc   # per the fieldiag release notes"},
        {"step": "Collect the driver's bug report.", "command": "sudo nvidia-bug-report.sh"},
    ]


def build_packet(g: GpuHistory, records: dict[str, IncidentRecord], states: dict[str, FindingState],
                 catalog: Catalog, identity: dict[str, str], now: float) -> dict[str, Any]:
    ident: dict[str, str | None] = {k: None for k in _IDENTITY_FIELDS}
    ident.update({"uuid": g.uuid or None, "pci_bus_id": g.pci_bus_id or None, "host": g.host or None})
    for k, v in identity.items():
        if k in ident and not ident[k]:
            ident[k] = v
    history = []
    for o in g.occurrences:
        sig = catalog.get(o.event.signature)
        history.append({
            "time": iso_utc(o.event.ts), "signature_id": o.event.signature,
            "title": sig.title if sig else None, "owner": sig.owner if sig else None,
            "rma_level": sig.rma if sig else None, "quote": o.event.text, "source": o.event.source,
            "line_no": o.event.line_no, "incidents": sorted(o.incidents),
            "counted": o.excluded is None, "not_counted_because": o.excluded,
        })
    incidents = []
    for iid in g.incidents:
        rec = records.get(iid)
        st = states.get(iid)
        if rec is None:
            continue
        incidents.append({"id": iid, "title": rec.title, "owner": rec.owner, "signature_id": rec.signature,
                          "observed_at": iso_utc(rec.observed_ts), "open": bool(st and st.open),
                          "lifecycle": st.reason if st else None})
    return {
        "schema": PACKET_SCHEMA,
        "generated_at": iso_utc(now),
        "verdict": "rma_candidate" if g.rma.candidate else "not_rma_worthy",
        "gpu": ident,
        "identity_unknown": [k for k, v in ident.items() if not v],
        "reasons": list(g.rma.reasons),
        "why_not": [] if g.rma.candidate else list(g.rma.why_not),
        "recurrence_window_days": g.rma.window_days,
        "history": history,
        "incidents": incidents,
        "before_sending": before_sending(g),
        "vendor_decides": VENDOR_DECIDES,
    }


def packet_name(g: GpuHistory) -> str:
    return "rma-" + re.sub(r"[^A-Za-z0-9._-]+", "_", g.key).strip("_")


def render_packet_markdown(p: dict[str, Any]) -> str:
    gpu = p["gpu"]
    verdict = ("RMA candidate" if p["verdict"] == "rma_candidate" else "Not RMA-worthy on this evidence")
    name = gpu.get("uuid") or f"{gpu.get('host') or '?'} {gpu.get('pci_bus_id') or ''}"
    out = [f"# GPU evidence packet: {name}",
           "", f"**Verdict: {verdict}.** {p['vendor_decides']}", "", f"Generated {p['generated_at']} by Denpex.", "",
           "## Identity", "", "| field | value |", "|---|---|"]
    for k, v in gpu.items():
        out.append(f"| {k} | {_cell(v) if v else 'unknown'} |")
    if p["identity_unknown"]:
        out += ["", "Unknown fields are not in the evidence; `denpex rma GPU --identity nvidia-smi-q.txt` "
                    "reads them from the node's `nvidia-smi -q`."]
    out += ["", "## Why" if p["verdict"] == "rma_candidate" else "## Why not", ""]
    for r in p["reasons"] or p["why_not"]:
        out.append(f"- {_cell(r)}")
    out += ["", f"## History (recurrence window {p['recurrence_window_days']} days)", "",
            "| time | signature | counted | incidents |", "|---|---|---|---|"]
    for h in p["history"]:
        counted = "yes" if h["counted"] else f"no: {h['not_counted_because']}"
        out.append(f"| {h['time'] or 'unknown'} | {h['signature_id']} ({h['rma_level'] or '?'}) | {_cell(counted)} "
                   f"| {', '.join(h['incidents'])} |")
    out += ["", "Quoted lines:", ""]
    for h in p["history"]:
        out += [f"- `{h['source']}:{h['line_no']}` ({h['time'] or 'unknown time'})", "", "  ```",
                "  " + h["quote"].replace("```", "'''"), "  ```"]
    out += ["", "## Incidents", "", "| id | observed | owner | title | state |", "|---|---|---|---|---|"]
    for i in p["incidents"]:
        state = "open" if i["open"] else f"closed: {i['lifecycle']}"
        out.append(f"| {i['id']} | {i['observed_at']} | {i['owner']} | {_cell(i['title'])} | {_cell(state)} |")
    out += ["", "## Before sending it", ""]
    for n, st in enumerate(p["before_sending"], 1):
        out += [f"{n}. {st['step']}", "", "   ```sh", f"   {st['command']}", "   ```", ""]
    out += [p["vendor_decides"], ""]
    return "\n".join(out)


def _cell(v: Any) -> str:
    return str(v).replace("|", "\\|").replace("\n", " ")
