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
from collections.abc import Callable

from denpex.collect.lineinfo import strip_prefix_rank

END_LINES = 12  # lines at a source's end looked at
_END_BYTES = 64 * 1024
# Lines that can follow a frame's code line inside a traceback without ending it: Python
# 3.11+'s carets under the failing expression, 3.13's "...<2 lines>...", an empty launcher-prefixed line.
_FILLER = re.compile(r"^\s*(?:[\^~\s]*|\.\.\.<\d+ lines?>\.\.\.)\s*$")
# What an exception line starts with ("ValueError: ...", "torch.OutOfMemoryError: ..."): not a code line.
_EXCEPTION_START = re.compile(r"^[\w.]*(?:Error|Exception|Warning|Interrupt|Exit|Fault)\b")
_SOURCELESS = re.compile(r'File "<[^"]*>"')


def cut_traceback_line(data: bytes, is_frame: Callable[[str], bool]) -> int | None:
    """Offset in ``data`` (a source's last block, whole lines) of the line a cut traceback ends on.

    That is the last line that is not filler, when it is a frame line (``is_frame``: the
    signature's patterns find 'File "x.py", line 12, in f') or the indented code line right
    under one. None when the source ends any other way.
    """
    start = max(0, len(data) - _END_BYTES)
    if start:
        start = data.find(b"\n", start) + 1
        if start == 0:
            return None  # one over-long line: not a traceback
    lines: list[tuple[int, str]] = []
    end = len(data)
    while end > start and len(lines) < END_LINES:
        ls = max(data.rfind(b"\n", start, end - 1) + 1, start)
        text = data[ls:end].decode("utf-8", "replace").rstrip("\r\n")
        lines.append((ls, strip_prefix_rank(text, srun_labels=True)[0]))  # without "[rank3]:", "3: "
        end = ls
    meaningful = [(ls, body) for ls, body in lines if not _FILLER.match(body)]  # last line first
    if not meaningful:
        return None

    def code_under_frame(line: str, above: str) -> bool:
        return (is_frame(above) and line[:1].isspace() and not _EXCEPTION_START.match(line.lstrip())
                and not is_frame(line))

    if is_frame(meaningful[0][1]):
        # A frame with no source to show ('File "<frozen os>"', '<string>'): the code line of
        # the frame above it is where the job's own call was.
        if (_SOURCELESS.search(meaningful[0][1]) and len(meaningful) >= 3
                and code_under_frame(meaningful[1][1], meaningful[2][1])):
            return meaningful[1][0]
        return meaningful[0][0]
    if len(meaningful) >= 2 and code_under_frame(meaningful[0][1], meaningful[1][1]):
        return meaningful[0][0]
    return None
