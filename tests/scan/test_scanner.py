"""A file scanned in parts, over a process pool, gives exactly what one sequential pass gives."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.collect import inputs
from denpex.collect.inputs import expand_paths
from denpex.scan import hs_engine, scanner
from denpex.scan.engine import ReEngine, default_engine
from denpex.scan.scanner import plan_units
from tests.helpers import scan_incident

REPO = Path(__file__).resolve().parents[2]


def _big_log(path: Path, seed: int = 3) -> None:
    """Real corpus lines, shuffled by file, among floods of progress and repeated context lines."""
    rng = random.Random(seed)
    logs = sorted(p for p in (REPO / "tests" / "corpus").rglob("*.log") if p.stat().st_size < 200_000)
    rng.shuffle(logs)
    out: list[str] = []
    step = 0
    for log in logs[:40]:
        for _ in range(rng.randint(50, 400)):
            step += 1
            out.append(f"2024-05-01 10:{step // 60 % 60:02d}:{step % 60:02d} iteration {step:8d}/ 500000 | "
                       f"lm loss: 2.{rng.randint(0, 999):03d}E+00 |")
            if rng.random() < 0.2:
                out.append(f"host{rng.randint(1, 9)}:{rng.randint(100, 999)}:1 [0] NCCL INFO Using network IB")
        out.extend(log.read_text(errors="replace").splitlines())
    path.write_text("\n".join(out))  # no final newline: the last line must survive the split too


@pytest.mark.usefixtures("small_blocks")
@pytest.mark.parametrize("engine_name", ["auto", "re"])
def test_split_file_gives_the_same_incident_as_one_process(catalog: Catalog, tmp_path: Path,
                                                           engine_name: str) -> None:
    log = tmp_path / "train.log"
    _big_log(log)
    engine = default_engine(catalog.signatures, engine_name)
    units = plan_units(expand_paths([str(log)])[0], jobs=3)
    assert len(units) >= 3  # the file really is cut
    assert scan_incident(catalog, log, jobs=1, engine=engine) == scan_incident(catalog, log, jobs=3, engine=engine)


@pytest.mark.usefixtures("small_blocks")
def test_a_quoted_line_above_keeps_its_line_number_in_a_later_part(catalog: Catalog, tmp_path: Path) -> None:
    """A bare AssertionError shows the assert line above it; in a part after the first, that line's
    number was left part-local (holdout166's tdmolflow traceback: quoted at 1877 instead of 5900)."""
    tail = (REPO / "tests/corpus/holdout166/tdmolflow-qm9-remove-h-shape-assertion-gpu-train/"
            "slurm-3712820.out.log").read_text(errors="replace").splitlines()
    progress = [f"2024-05-01 10:{i // 60 % 60:02d}:{i % 60:02d} iteration {i:8d}/ 500000 | lm loss: 2.5E+00 |"
                for i in range(4000)]
    log = tmp_path / "train.log"
    log.write_text("\n".join(progress + tail) + "\n")
    assert len(plan_units(expand_paths([str(log)])[0], jobs=3)) >= 3
    sources, _ = expand_paths([str(log)])
    split = scanner.scan_all(catalog, sources, jobs=3)
    quoted = [e.shown for r in split for e in r.events if e.signature_id == "python.assertion_error_bare"]
    lines = log.read_text().splitlines()
    assert quoted and all(lines[no - 1] == text for no, text in quoted)
    assert scan_incident(catalog, log, jobs=1) == scan_incident(catalog, log, jobs=3)


@pytest.mark.usefixtures("small_blocks")
def test_part_boundaries_fall_on_whole_lines(catalog: Catalog, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    _big_log(log, seed=5)
    sources, _ = expand_paths([str(log)])
    total = 0
    for src, part, _ in plan_units(sources, jobs=4):
        total += sum(b.n_lines for b in inputs.read_blocks(src, part))
    assert total == len(log.read_text().splitlines())


def test_compressed_files_and_stdin_are_not_split(tmp_path: Path) -> None:
    gz = tmp_path / "big.log.gz"
    gz.write_bytes(gzip.compress(b"x" * 10))
    sources, _ = expand_paths([str(gz)])
    assert plan_units(sources, jobs=4) == [(sources[0], None, None)]


def test_engines_agree_on_split_parts(catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inputs, "BLOCK", 16 * 1024)
    log = tmp_path / "train.log"
    _big_log(log, seed=9)
    hs = default_engine(catalog.signatures, "auto")
    assert scan_incident(catalog, log, 1, hs) == scan_incident(catalog, log, 1, ReEngine(catalog.signatures))


def _flood_log(path: Path, seed: int = 5) -> None:
    """Floods of lines kept only up to a cap (rank maps, network facts) and of listed progress
    lines (progress bars, trainer dicts), some of them not ASCII, around a failure."""
    rng = random.Random(seed)
    out: list[str] = []
    for i in range(6000):
        r = rng.randint(0, 63)
        kind = rng.random()
        if kind < 0.3:
            host = "gpu-é" if rng.random() < 0.1 else "gpu-a"  # a line re must confirm
            out.append(f"{host}{r:03d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO comm 0x{rng.getrandbits(40):x} rank {r} "
                       f"nranks 64 cudaDev {r % 8} nvmlDev {r % 8} busId {r:02x}000 commId 0x1 - Init COMPLETE")
        elif kind < 0.5:
            out.append(f"gpu-a{r:03d}:{1000 + r}:{2000 + r} [{r % 8}] NCCL INFO Using network IB")
        elif kind < 0.75:
            bar = "███▌" if rng.random() < 0.3 else "###"
            out.append(f"Epoch {i // 1000}:  {i % 100:2d}%|{bar}      | {i % 500}/500 [00:30<01:10,  4.93it/s, loss=6.1]")
        elif kind < 0.9:
            out.append(f"{{'loss': 0.{rng.randint(100, 999)}, 'learning_rate': 2e-05, 'epoch': {i / 1000:.2f}}}")
        else:
            out.append(f"2024-05-01 10:00:{i % 60:02d} INFO step {i} done")
        if i == 4500:
            out.append("[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.")
        if i > 5000 and i % 7 == 0:  # a flood that starts late, when the others have had their fill
            out.append(f"[  {301 + i}.000100] nfs: server 10.0.0.{i % 3} OK")
    path.write_text("\n".join(out) + "\n")


@pytest.mark.parametrize("cap", [3, 25])
def test_engines_agree_on_floods_past_the_caps(catalog: Catalog, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               cap: int) -> None:
    # The Hyperscan engine drops a capped signature's surplus lines as they arrive; what the
    # scanner keeps must still equal the stdlib engine's, block by block and across parts.
    monkeypatch.setattr(inputs, "BLOCK", 16 * 1024)
    monkeypatch.setattr(scanner, "MAX_EVENTS_PER_SIGNATURE", cap)
    monkeypatch.setattr(scanner, "MAX_CONTEXT_EVENTS_TOTAL", cap)
    log = tmp_path / "train.log"
    _flood_log(log)
    hs = default_engine(catalog.signatures, "auto")
    want = scan_incident(catalog, log, 1, ReEngine(catalog.signatures))
    assert scan_incident(catalog, log, 1, hs) == want
    assert "more lines matching" in want


@pytest.mark.skipif(not hs_engine.available(), reason="hyperscan extra not installed")
@pytest.mark.parametrize("cap", [3, 25])
def test_quiet_scans_of_floods_past_their_caps_keep_every_wanted_line(catalog: Catalog, tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch,
                                                                     cap: int) -> None:
    # Blocks are scanned with a database where the capped floods report once; a quiet scan
    # stops at a flood that still wants lines (one that starts late too) and the main database
    # lists them from there, in short stretches here so that it switches many times.
    monkeypatch.setattr(inputs, "BLOCK", 64 * 1024)
    monkeypatch.setattr(scanner, "MAX_EVENTS_PER_SIGNATURE", cap)
    monkeypatch.setattr(scanner, "MAX_CONTEXT_EVENTS_TOTAL", cap)
    monkeypatch.setattr(hs_engine, "QUIET_FIRST", 512)
    log = tmp_path / "train.log"
    _flood_log(log)
    hs = hs_engine.HyperscanEngine(catalog.signatures)
    quiet = hs._quiet_db()
    assert quiet is not None
    scans = {"quiet": 0, "full": 0}

    class Counting:
        def __init__(self, db: object, name: str) -> None:
            self.db, self.name = db, name

        def scan(self, data: bytes, match_event_handler: object) -> None:
            scans[self.name] += 1
            self.db.scan(data, match_event_handler=match_event_handler)  # type: ignore[attr-defined]

    hs._quiet = Counting(quiet, "quiet")
    hs.db = Counting(hs.db, "full")
    want = scan_incident(catalog, log, 1, ReEngine(catalog.signatures))
    assert scan_incident(catalog, log, 1, hs) == want
    assert "nfs_server_ok" in want
    assert scans["quiet"] >= 3 and scans["full"] >= 3, scans


_PREFIX_PARTS = ["[rank3]:", "[rank12]:", "[default0]:", "[default3]:", "[rank03]:", "2024-05-01 10:00:00 ",
                 "[7] ", " ", "x", "[rank", "]:", "[default1]:[rank5]:", "NCCL INFO ", "\n", "\n", "\n"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_PREFIX_PARTS), max_size=60), st.integers(0, 40))
def test_rank_prefixes_found_by_token_equal_the_line_by_line_search(parts: list[str], many: int) -> None:
    # Distinct tokens past the limit, and a token on many lines where it is no prefix, take
    # the plain search's path; the answer must not depend on which path was taken.
    extra = "".join(f"[rank{i}]:\n" for i in range(many))
    mid = "a [rank9]: b\n" * (many * 2)
    data = ("".join(parts) + "\n" + mid + extra + "[rank9]: at last\n").encode()
    assert scanner._rank_prefixes(data) == set(scanner._line_prefixes("rank", data))
    plain = "".join(parts).encode()
    assert scanner._rank_prefixes(plain) == set(scanner._line_prefixes("rank", plain))
