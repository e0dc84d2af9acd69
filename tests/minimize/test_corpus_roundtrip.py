"""Masking keeps diagnosis intact on the whole real-log corpus, with and without --identity.

For every case: mask each evidence file into a temp folder, diagnose the masked copies, and
compare with the clear diagnosis: same owner, same initiating rank, and the masked root line is
exactly mask(clear root line). Also: every protected diagnostic token survives masking.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from denpex.catalog import Catalog
from denpex.collect.inputs import Source, expand_paths
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident
from denpex.evaluate.corpus import evidence_paths, find_cases
from denpex.minimize.detectors import PROTECTED
from denpex.minimize.masker import Masker
from denpex.minimize.stream import learn_stream, mask_stream, open_input
from denpex.scan.engine import Engine, default_engine
from tests.minimize.conftest import KEY

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = find_cases(CORPUS)


@pytest.fixture(scope="module")
def engine(catalog: Catalog) -> Engine:
    """One compiled engine for the module: compiling per diagnosis would dominate the run time."""
    return default_engine(catalog.signatures)


def _clear(catalog: Catalog, engine: Engine, case: Path) -> dict[str, Any]:
    sources, _ = expand_paths(evidence_paths(case))
    for s in sources:
        s.display = str(Path(s.display).relative_to(case))
    return build_incident(diagnose_paths(catalog, sources, engine))


def _masked(catalog: Catalog, engine: Engine, case: Path, masker: Masker, tmp: Path) -> dict[str, Any]:
    files = evidence_paths(case)
    for f in files:
        with open_input(f) as fin:
            learn_stream(fin, masker)
    sources = []
    for i, f in enumerate(files):
        name = masker.mask_name(str(Path(f).relative_to(case)))
        target = tmp / f"s{i}" / Path(name).name
        target.parent.mkdir(parents=True)
        with open_input(f) as fin, target.open("wb") as fout:
            mask_stream(fin, fout, masker)
        sources.append(Source(display=name, path=target, index=i))
    return build_incident(diagnose_paths(catalog, sources, engine))


@pytest.mark.parametrize("identity", [False, True], ids=["plain", "identity"])
@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_masked_evidence_gives_the_same_diagnosis(catalog: Catalog, engine: Engine, case: Path, identity: bool,
                                                  tmp_path: Path) -> None:
    clear = _clear(catalog, engine, case)
    masker = Masker(KEY, identity=identity)
    masked = _masked(catalog, engine, case, masker, tmp_path)
    assert masked["owner"] == clear["owner"]
    assert masked["initiating_rank"] == clear["initiating_rank"]
    assert masked["root_cause"]["signature_id"] == clear["root_cause"]["signature_id"]
    ce, me = clear["root_cause"]["evidence"], masked["root_cause"]["evidence"]
    assert bool(ce) == bool(me)
    if ce:
        assert me[0]["text"] == masker.mask_text(ce[0]["text"])
        assert me[0]["line_no"] == ce[0]["line_no"]


def test_protected_tokens_survive_masking_on_the_corpus() -> None:
    """Xid codes, PCI ids, ranks, sequence numbers, sizes and times are out of generic detectors' reach."""
    lost: list[tuple[str, str]] = []
    for case in CASES:
        masker = Masker(KEY, identity=True)
        for f in evidence_paths(case):
            for line in Path(f).read_text(errors="surrogateescape").splitlines():
                masked = masker.mask_text(line)
                for rx in PROTECTED:
                    for m in rx.finditer(line):
                        if m.group(0) not in masked:
                            lost.append((m.group(0), line[:160]))
    assert not lost, lost[:10]
