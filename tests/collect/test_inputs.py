"""Bad input never crashes and never loses the rest of the evidence."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from denpex.collect import inputs
from denpex.collect.inputs import expand_paths, read_blocks


def _read(path: Path) -> tuple[str, list[str]]:
    sources, errors = expand_paths([str(path)])
    assert not errors
    src = sources[0]
    text = "".join(b.data.decode("utf-8", "replace") for b in read_blocks(src)).removesuffix("\n")
    return text, src.warnings


def test_plain_text_keeps_line_count(tmp_path: Path) -> None:
    p = tmp_path / "a.log"
    p.write_text("one\ntwo\nthree\n")
    sources, _ = expand_paths([str(p)])
    blocks = list(read_blocks(sources[0]))
    assert sum(b.n_lines for b in blocks) == 3
    assert blocks[0].data == b"one\ntwo\nthree\n"


def test_gzip_by_content_not_name(tmp_path: Path) -> None:
    p = tmp_path / "noext"
    p.write_bytes(gzip.compress(b"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n"))
    text, warnings = _read(p)
    assert "fallen off the bus" in text and not warnings


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    data = gzip.compress(("line of text\n" * 20000 + "the end\n").encode())
    p = tmp_path / "cut.log.gz"
    p.write_bytes(data[: len(data) // 2])
    text, warnings = _read(p)
    assert "line of text" in text
    assert any("truncated" in w for w in warnings)


def test_binary_junk_is_skipped_with_warning(tmp_path: Path) -> None:
    p = tmp_path / "core"
    p.write_bytes(bytes(range(256)) * 100)
    text, warnings = _read(p)
    assert text == "" and any("binary" in w for w in warnings)


def test_invalid_utf8_is_read(tmp_path: Path) -> None:
    p = tmp_path / "bad.log"
    p.write_bytes(b"ok line\n\xff\xfe broken \xc3 bytes CUDA error: out of memory\n")
    text, _ = _read(p)
    assert "CUDA error: out of memory" in text


def test_long_line_is_cut_not_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "MAX_LINE", 1000)
    monkeypatch.setattr(inputs, "BLOCK", 4096)
    p = tmp_path / "long.log"
    p.write_bytes(b"x" * 50000 + b"\nafter the long line\n")
    text, warnings = _read(p)
    assert "after the long line" in text
    assert len(max(text.split("\n"), key=len)) <= 1000
    assert any("cut" in w for w in warnings)


def test_missing_path_and_empty_folder_are_errors(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    sources, errors = expand_paths([str(tmp_path / "nope"), str(tmp_path / "empty")])
    assert not sources and len(errors) == 2


def test_folder_is_read_recursively_in_stable_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "rank1.log").write_text("x\n")
    (tmp_path / "a.log").write_text("y\n")
    sources, _ = expand_paths([str(tmp_path)])
    assert [s.display for s in sources] == ["a.log", "b/rank1.log"]


def test_decompression_limit_stops_a_bomb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "MAX_DECOMPRESSED", 100_000)
    monkeypatch.setattr(inputs, "BLOCK", 16384)
    p = tmp_path / "bomb.gz"
    p.write_bytes(gzip.compress(b"A" * 5_000_000))
    _, warnings = _read(p)
    assert any("decompressed size" in w for w in warnings)


@given(st.lists(st.sampled_from([b"a", b"\r", b"\n", b"\r\n", b"xyz", b"\r\r"]), max_size=40))
def test_crlf_detection_agrees_with_a_plain_search(pieces: list[bytes]) -> None:
    body = b"".join(pieces)
    assert inputs._has_crlf(body) == (b"\r\n" in body)


def test_crlf_detection_past_many_lone_carriage_returns() -> None:
    body = b"bar\rbar\n" * 1000 + b"end\r\n"
    assert inputs._has_crlf(body)
    assert not inputs._has_crlf(b"bar\rbar\n" * 1000)


def test_standard_input_from_a_file_starts_where_the_shell_left_it(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # `(read skip; denpex diagnose -) < job.log`: the shell has consumed the first line, and a
    # seekable stdin goes back to where it was after the sniff, not to the file's start.
    log = tmp_path / "job.log"
    log.write_bytes(b"skip me\nNCCL WARN Cuda failure 'out of memory'\n")
    with log.open("rb") as fh:
        fh.seek(len(b"skip me\n"))
        monkeypatch.setattr(inputs.sys, "stdin", type("Stdin", (), {"buffer": fh})())
        [src] = expand_paths(["-"])[0]
        data = b"".join(b.data for b in read_blocks(src))
    assert data == b"NCCL WARN Cuda failure 'out of memory'\n"


def test_a_pipe_is_sniffed_without_losing_its_first_bytes() -> None:
    import os

    r, w = os.pipe()
    os.write(w, b"\x1f\x8bnot really gzip\n")
    os.close(w)
    with open(r, "rb") as fh:
        head, stream = inputs._peek(fh, 8)
        assert head == b"\x1f\x8bnot re"
        assert stream.read() == b"\x1f\x8bnot really gzip\n"


def test_a_plain_file_is_read_whole_in_reads_no_larger_than_it(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_bytes(b"step 1\n" * 1000)
    src = inputs.Source(display="rank0.log", path=path, index=0)
    assert b"".join(b.data for b in read_blocks(src)) == path.read_bytes()


def test_a_file_that_grows_while_read_loses_nothing(tmp_path: Path) -> None:
    # The read is sized from fstat; what a live job appends after it still comes.
    path = tmp_path / "live.log"
    path.write_bytes(b"a" * 1000)
    src = inputs.Source(display="live.log", path=path, index=0)
    with path.open("rb") as fh:
        first = fh.read(10)
        with path.open("ab") as out:
            out.write(b"b" * 5000)
        got = inputs._read_block(fh, 1 << 20, src, 0, [])
    assert first + got == b"a" * 1000 + b"b" * 5000
