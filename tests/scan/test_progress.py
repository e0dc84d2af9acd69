"""Progress appears only on a terminal and only for a diagnosis that takes a while."""

from __future__ import annotations

import io

from denpex.scan import progress as progress_mod
from denpex.scan.progress import Progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_when_not_a_terminal() -> None:
    out = io.StringIO()
    p = Progress(2, 1000, stream=out)
    p.start -= 10
    p.add_bytes(500)
    p.close()
    assert out.getvalue() == ""


def test_silent_during_the_first_second() -> None:
    out = _Tty()
    p = Progress(2, 1000, stream=out)
    p.add_bytes(500)
    assert out.getvalue() == ""


def test_shows_files_bytes_rate_and_eta_then_erases() -> None:
    out = _Tty()
    p = Progress(4, 4 * 1024 * 1024, stream=out)
    p.start -= 2
    p.files = 1
    p.add_bytes(1024 * 1024)
    text = out.getvalue()
    assert "1/4 files" in text and "MiB" in text and "ETA" in text
    p.close()
    assert out.getvalue().endswith("\r\x1b[K")
    assert progress_mod._human(2048) == "2.0 KiB"
