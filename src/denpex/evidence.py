"""The evidence model: one event on one timeline, whatever produced it.

A log line that matched a signature, an NVML reading or an SDK report are all an ``Event``:
where it came from, when, for which rank/host/GPU, and what it means (signature and fields).
Diagnosis only ever sees events, so node collectors and a training SDK join the same
timeline as log files, and the service runs the same engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from denpex.collect.timestamps import iso


@dataclass(slots=True)
class Event:
    source: str
    line_no: int
    text: str
    signature_id: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    time: datetime | None = None
    offset: str | None = None
    boot_seconds: float | None = None
    time_inherited: bool = False  # time taken from an earlier line of the same source
    rank: int | None = None
    host: str | None = None
    pid: int | None = None
    gpu_index: int | None = None
    pci_bus_id: str | None = None
    uuid: str | None = None
    source_index: int = 0  # position of the source in the input order, for stable sorting
    # The line the evidence quotes in place of this one, (line_no, text): the code line
    # "assert n > 0" above a bare "AssertionError" (catalog field quote_line_above). The event
    # itself stays on the line that matched, for ordering and every rule.
    quoted: tuple[int, str] | None = None

    @property
    def order_key(self) -> tuple[Any, ...]:
        return (self.source_index, self.line_no)

    @property
    def shown(self) -> tuple[int, str]:
        """(line_no, text) of the line a person is shown for this event: ``quoted`` where set."""
        return self.quoted if self.quoted is not None else (self.line_no, self.text)

    def to_evidence(self, role: str | None = None) -> dict[str, Any]:
        line_no, text = self.shown
        out: dict[str, Any] = {
            "source": self.source,
            "line_no": line_no,
            "text": text,
            "time": iso(self.time, self.offset),
            "rank": self.rank,
            "host": self.host,
            "signature_id": self.signature_id,
        }
        if role is not None:
            out["role"] = role
        return out
