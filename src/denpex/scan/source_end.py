"""Where a source ends mid-traceback: the frames are there, the exception line is not.

A process killed while it printed, an excerpt pasted into a bug report up to the frame that
mattered to its author, a log shipper that dropped the last line: the evidence then holds a
traceback whose last line names a frame, and no line any exception signature knows. Read
line by line that is nothing; read as the end of a source it says the process failed in
that frame. Only the last few lines of a source are looked at, so a traceback the process
printed and survived (a retry, a logged warning) never counts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from denpex.collect.lineinfo import SRUN_LABEL, strip_prefix_rank

END_LINES = 12  # lines at a source's end looked at
_END_BYTES = 64 * 1024
# Lines that can follow a frame's code line inside a traceback without ending it: Python
# 3.11+'s carets under the failing expression, 3.13's "...<2 lines>...", an empty launcher-prefixed line.
_FILLER = re.compile(r"^\s*(?:[\^~\s]*|\.\.\.<\d+ lines?>\.\.\.)\s*$")
# What an exception line starts with ("ValueError: ...", "torch.OutOfMemoryError: ..."): not a code line.
_EXCEPTION_START = re.compile(r"^[\w.]*(?:Error|Exception|Warning|Interrupt|Exit|Fault)\b")
_SOURCELESS = re.compile(r'File "<[^"]*>"')


def cut_traceback_line(data: bytes, frame_patterns: Sequence[re.Pattern[str]]) -> int | None:
    """Offset in ``data`` (a source's last block, whole lines) of the line a cut traceback ends on.

    That is the last line that is not filler, when it is a frame line (one of
    ``frame_patterns`` finds it: 'File "x.py", line 12, in f') or the indented code line
    right under one. None when the source ends any other way.
    """
    start = max(0, len(data) - _END_BYTES)
    if start:
        start = data.find(b"\n", start) + 1
        if start == 0:
            return None  # one over-long line: not a traceback
    lines: list[tuple[int, str]] = []
    end = len(data)
    while end > start and len(lines) < END_LINES:
        ls = data.rfind(b"\n", start, end - 1) + 1 if end - 1 > start else start
        ls = max(ls, start)
        lines.append((ls, data[ls:end].decode("utf-8", "replace").rstrip("\r\n")))
        end = ls
    bodies = [(ls, _body(text)) for ls, text in lines]  # last line first
    meaningful = [(ls, body) for ls, body in bodies if not _FILLER.match(body)]
    if not meaningful:
        return None
    if _is_frame(meaningful[0][1], frame_patterns):
        # A frame with no source to show ('File "<frozen os>"', '<string>'): the code line of
        # the frame above it is where the job's own call was.
        if _SOURCELESS.search(meaningful[0][1]) and len(meaningful) >= 3 and _is_code_under_frame(
                meaningful[1][1], meaningful[2][1], frame_patterns):
            return meaningful[1][0]
        return meaningful[0][0]
    if len(meaningful) >= 2 and _is_code_under_frame(meaningful[0][1], meaningful[1][1], frame_patterns):
        return meaningful[0][0]
    return None


def _is_code_under_frame(line: str, above: str, frame_patterns: Sequence[re.Pattern[str]]) -> bool:
    """Whether ``line`` is the indented code line of the frame line ``above`` (not an exception line)."""
    return (_is_frame(above, frame_patterns) and line[:1].isspace()
            and not _EXCEPTION_START.match(line.lstrip()) and not _is_frame(line, frame_patterns))


def _body(line: str) -> str:
    """The line without the launcher prefixes in front of it ("[rank3]:", "3: ")."""
    body, _ = strip_prefix_rank(line, srun_labels=False)
    m = SRUN_LABEL.match(body)
    return body[m.end():] if m else body


def _is_frame(body: str, frame_patterns: Sequence[re.Pattern[str]]) -> bool:
    for rx in frame_patterns:  # noqa: SIM110 - a loop, the patterns are few
        if rx.search(body):
            return True
    return False
