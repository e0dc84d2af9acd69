"""One timeline across ranks, nodes and files.

Lines carry wall-clock times in several forms, or none. Each event gets a sort time: its own
(or the last earlier stamp in its file); an event in a file with no stamps at all keeps its
file order and sorts by that file's position among the inputs. Within one file the order is
always the file's own.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from denpex.evidence import Event

_FAR = datetime.max


def absolute_time(ev: Event) -> datetime | None:
    """The wall-clock time to order by. Stamps written without a year (syslog, glog) still
    order correctly among themselves: when no evidence gave a year, all of them carry the
    same placeholder year (``YEAR_UNKNOWN``), and when one did, every stamp got it."""
    return ev.time


def sort_key(ev: Event) -> tuple[Any, ...]:
    t = absolute_time(ev)
    return (t or _FAR, ev.source_index if t is None else 0, ev.source_index, ev.line_no)


def ordered(events: list[Event]) -> list[Event]:
    """Time order where times exist, file order otherwise; stable and deterministic."""
    by_source: dict[int, list[Event]] = {}
    for ev in events:
        by_source.setdefault(ev.source_index, []).append(ev)
    # Untimed events in a file that has times take the nearest earlier (else later) time,
    # so a traceback's lines stay next to the stamped line that introduced them.
    keyed: list[tuple[tuple[Any, ...], Event]] = []
    for idx in sorted(by_source):
        evs = sorted(by_source[idx], key=lambda e: e.line_no)
        times = [absolute_time(e) for e in evs]
        carry: datetime | None = None
        filled: list[datetime | None] = []
        for t in times:
            carry = t or carry
            filled.append(carry)
        nxt: datetime | None = None
        for i in range(len(evs) - 1, -1, -1):
            if filled[i] is None:
                filled[i] = nxt
            else:
                nxt = filled[i] if times[i] is not None else nxt
        for ev, t in zip(evs, filled, strict=True):
            keyed.append(((t or _FAR, idx if t is None else 0, idx, ev.line_no), ev))
    keyed.sort(key=lambda kv: kv[0])
    return [ev for _, ev in keyed]


def seconds_between(a: Event, b: Event) -> float | None:
    ta, tb = absolute_time(a), absolute_time(b)
    if ta is None or tb is None:
        return None
    return (tb - ta).total_seconds()
