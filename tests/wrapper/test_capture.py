from __future__ import annotations

from pathlib import Path

from denpex.collect.wrapper.capture import MIN_SEGMENT, Capture


def _feed(cap: Capture, total: int, block: int = 10_000) -> bytes:
    data = b"".join(f"line {i:08d}\n".encode() for i in range(total // 14 + 1))[:total]
    for i in range(0, len(data), block):
        cap.write(data[i:i + block])
    return data


def test_small_output_is_kept_whole(tmp_path: Path) -> None:
    cap = Capture(tmp_path / "rank0.log", head_bytes=1 << 20, tail_bytes=1 << 20, warn=lambda m: None)
    data = _feed(cap, 50_000)
    stats = cap.close()
    assert (tmp_path / "rank0.log").read_bytes() == data
    assert stats.skipped_bytes == 0 and stats.failed is None


def test_head_plus_tail_with_a_marker_between(tmp_path: Path) -> None:
    head, tail = 100_000, 4 * MIN_SEGMENT
    cap = Capture(tmp_path / "out.log", head_bytes=head, tail_bytes=tail, warn=lambda m: None)
    data = _feed(cap, 3_000_000)
    stats = cap.close()
    kept = (tmp_path / "out.log").read_bytes()
    assert kept.startswith(data[:head])
    marker_at = kept.index(b"[denpex: ")
    after = kept[kept.index(b"\n", marker_at) + 1:]
    assert data.endswith(after)
    assert tail <= len(after) <= tail + MIN_SEGMENT
    assert stats.skipped_bytes == len(data) - head - len(after)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.log"]


def test_segments_are_readable_while_running(tmp_path: Path) -> None:
    cap = Capture(tmp_path / "rank2.log", head_bytes=1000, tail_bytes=MIN_SEGMENT * 2, warn=lambda m: None)
    _feed(cap, 1_000_000)
    pieces = sorted(p.name for p in tmp_path.iterdir())
    assert pieces[0] == "rank2.log" and all(p.startswith("rank2.tail-") for p in pieces[1:])
    assert sum(p.stat().st_size for p in tmp_path.iterdir()) <= 1000 + 3 * MIN_SEGMENT
    cap.close()


def test_zero_tail_keeps_only_the_head(tmp_path: Path) -> None:
    cap = Capture(tmp_path / "o.log", head_bytes=10, tail_bytes=0, warn=lambda m: None)
    cap.write(b"0123456789abcdef")
    stats = cap.close()
    assert (tmp_path / "o.log").read_bytes() == b"0123456789"
    assert stats.skipped_bytes == 6


def test_unwritable_folder_fails_open_with_one_warning(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    warnings: list[str] = []
    cap = Capture(blocker / "sub" / "o.log", head_bytes=10, tail_bytes=10, warn=warnings.append)
    cap.write(b"data" * 10)
    cap.write(b"more")
    stats = cap.close()
    assert len(warnings) == 1 and "stopped" in warnings[0]
    assert stats.failed and stats.total_bytes == 44


def test_full_device_fails_open(tmp_path: Path) -> None:
    """/dev/full answers every write with ENOSPC, the same error as a full capture disk."""
    link = tmp_path / "o.log"
    link.symlink_to("/dev/full")
    warnings: list[str] = []
    cap = Capture(link, head_bytes=100, tail_bytes=100, warn=warnings.append)
    cap.write(b"x" * 1000)
    cap.write(b"y" * 1000)
    assert not cap.active
    assert len(warnings) == 1 and "No space left" in warnings[0]
    assert cap.close().total_bytes == 2000
