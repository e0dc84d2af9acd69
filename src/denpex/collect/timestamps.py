"""Time stamps in the forms GPU job evidence uses, parsed to one comparable form.

Every parser returns a naive wall-clock ``datetime`` (as written in the log) plus whether the
year was written. Years missing from syslog and glog stamps are filled in later from the
other evidence (``YEAR_UNKNOWN`` marks them until then), so ordering stays deterministic.
dmesg's seconds-since-boot are kept apart: they order lines within a kernel log but cannot
be placed on the wall clock without the boot time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

YEAR_UNKNOWN = 1904  # a leap year, so Feb 29 parses before the real year is known

_MONTHS = {m: i for i, m in enumerate(
    ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"), start=1)}

# 2024-05-01T12:00:00.123+00:00 / 2024-05-01 12:00:00,123 (Python logging) / 2024/05/01 12:00:00
_ISO = re.compile(
    r"(?<!\d)(\d{4})[-/](\d{2})[-/](\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d{1,9}))?(Z|[+-]\d{2}:?\d{2})?")
# dmesg -T: [Tue May  7 12:00:00 2024]
_DMESG_T = re.compile(r"^\[\s*\w{3} (\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\]")
# dmesg: [ 1234.567890]
_DMESG_BOOT = re.compile(r"^\[\s*(\d+)\.(\d+)\]")
# syslog / journalctl short: May  7 12:00:00 host ...
_SYSLOG = re.compile(r"^(\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))? (\S+) ")
# glog (PyTorch C++ and XLA): E1129 14:07:47.123456 12345 file.cpp:12]
_GLOG = re.compile(r"(?:^|[\[\s])[IWEF](\d{2})(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{1,9})\s+(\d+)")
# Weekday-first forms such as `date` prints: Tue May  7 12:00:00 UTC 2024
_DATE_CMD = re.compile(r"(?:^|\s)\w{3} (\w{3}) +(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (?:[A-Z]{2,5} )?(\d{4})")

# Only look near the start of a line: stamps deep inside a message are data, not the time.
_HEAD = 120
# Bytes of a raw line that always hold its first _HEAD characters once decoded (a character is
# at most four bytes, an undecodable byte one): all a caller need decode to find its stamp.
STAMP_BYTES = 4 * _HEAD


@dataclass(frozen=True)
class Stamp:
    time: datetime | None = None
    offset: str | None = None  # UTC offset as written, e.g. +00:00
    boot_seconds: float | None = None
    host: str | None = None  # syslog host field
    pid: int | None = None  # glog thread/pid field


def _frac(s: str | None) -> int:
    if not s:
        return 0
    return int((s + "000000")[:6])


def _safe(year: int, month: int, day: int, h: int, mi: int, sec: int, us: int) -> datetime | None:
    try:
        return datetime(year, month, day, h, mi, sec, us)
    except ValueError:
        return None


def _iso_at_start(line: str) -> Stamp | None:
    """The common case, ``2024-05-01T12:00:00.123Z ...``, without a regex; None when unsure."""
    try:
        t = _safe(int(line[0:4]), int(line[5:7]), int(line[8:10]), int(line[11:13]), int(line[14:16]),
                  int(line[17:19]), 0)
    except ValueError:
        return None
    if t is None:
        return None
    pos, n = 19, len(line)
    if pos < n and line[pos] in ".,":
        end = pos + 1
        while end < n and end - pos <= 9 and line[end].isdigit() and line[end].isascii():
            end += 1
        if end == pos + 1:
            return None
        t = t.replace(microsecond=_frac(line[pos + 1:end]))
        pos = end
    off: str | None = None
    if pos < n and line[pos] == "Z":
        off = "+00:00"
    elif pos < n and line[pos] in "+-":
        m = _OFFSET.match(line, pos)
        if m:
            off = m.group(0) if ":" in m.group(0) else m.group(0)[:3] + ":" + m.group(0)[3:]
    return Stamp(time=t, offset=off)


_TIME_OF_DAY = re.compile(r"\d{2}:\d{2}:\d{2}")
_OFFSET = re.compile(r"[+-]\d{2}:?\d{2}", re.ASCII)
_ISO_START = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?!\d)", re.ASCII)


_TIME_OF_DAY_BYTES = re.compile(rb"\d{2}:\d{2}:\d{2}")
_BOOT_START_BYTES = re.compile(rb"\[[\s\x1c-\x1f]*\d")


def may_hold_stamp(data: bytes, start: int, end: int) -> bool:
    """False only where ``parse_stamp`` of the line ``data[start:end]`` is sure to find nothing.

    Every form has a time of day in the line's head, except dmesg's seconds since boot, which
    open the line. An ASCII head is tested on the bytes, without decoding the line; any other
    head may hold digits or spaces the bytes test does not see and counts as a maybe.
    """
    stop = min(end, start + _HEAD)
    if not data[start:stop].isascii():
        return True
    if _TIME_OF_DAY_BYTES.search(data, start, stop) is not None:
        return True
    return _BOOT_START_BYTES.match(data, start, stop) is not None


def parse_stamp(line: str) -> Stamp | None:
    """The time stamp a line starts with (or carries near its start), if any."""
    if _ISO_START.match(line):
        fast = _iso_at_start(line)
        if fast is not None:
            return fast
    return parse_stamp_general(line)


def parse_stamp_general(line: str) -> Stamp | None:
    head = line[:_HEAD]
    if ":" not in head and "." not in head:
        return None  # every form below has a ':' (time of day) or '.' (dmesg seconds)
    if not _TIME_OF_DAY.search(head):
        # Only dmesg's seconds since boot go without a time of day.
        m = _DMESG_BOOT.match(head) if head.startswith("[") else None
        return Stamp(boot_seconds=float(f"{m.group(1)}.{m.group(2)}")) if m else None
    if head.startswith("["):
        m = _DMESG_T.match(head)
        if m:
            mon = _MONTHS.get(m.group(1).lower())
            if mon:
                t = _safe(int(m.group(6)), mon, int(m.group(2)), int(m.group(3)), int(m.group(4)),
                          int(m.group(5)), 0)
                if t:
                    return Stamp(time=t)
        m = _DMESG_BOOT.match(head)
        if m:
            return Stamp(boot_seconds=float(f"{m.group(1)}.{m.group(2)}"))
    m = _SYSLOG.match(head) if head[:3].lower() in _MONTHS else None
    if m:
        t = _safe(YEAR_UNKNOWN, _MONTHS[m.group(1).lower()], int(m.group(2)), int(m.group(3)), int(m.group(4)),
                  int(m.group(5)), _frac(m.group(6)))
        if t:
            return Stamp(time=t, host=m.group(7))
    m = _ISO.search(head) if ("-" in head or "/" in head) else None
    if m:
        t = _safe(int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)),
                  int(m.group(6)), _frac(m.group(7)))
        if t:
            off = m.group(8)
            if off and off != "Z" and ":" not in off:
                off = off[:3] + ":" + off[3:]
            return Stamp(time=t, offset="+00:00" if off == "Z" else off)
    m = _GLOG.search(head)
    if m:
        t = _safe(YEAR_UNKNOWN, int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)),
                  int(m.group(5)), _frac(m.group(6)))
        if t:
            return Stamp(time=t, pid=int(m.group(7)))
    m = _DATE_CMD.search(head) if _has_month(head) else None
    if m:
        mon = _MONTHS.get(m.group(1).lower())
        if mon:
            t = _safe(int(m.group(6)), mon, int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), 0)
            if t:
                return Stamp(time=t)
    return None


def _has_month(head: str) -> bool:
    return _MONTH_WORD.search(head) is not None


_MONTH_WORD = re.compile(r"(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec) ")


def with_year(t: datetime, year: int) -> datetime:
    if t.year != YEAR_UNKNOWN:
        return t
    try:
        return t.replace(year=year)
    except ValueError:  # Feb 29 in a non-leap year
        return t.replace(year=year, day=28)


def iso(t: datetime | None, offset: str | None = None) -> str | None:
    if t is None or t.year == YEAR_UNKNOWN:
        return None
    s = t.isoformat(timespec="microseconds" if t.microsecond else "seconds")
    return s + (offset or "")


def plus_seconds(t: datetime, seconds: float) -> datetime:
    return t + timedelta(seconds=seconds)
