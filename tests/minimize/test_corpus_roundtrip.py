"""Masking keeps diagnosis intact on the whole real-log corpus, with and without --identity.

For every case: mask each evidence file into a temp folder, diagnose the masked copies, and
compare with the clear diagnosis: same owner, same initiating rank, and the masked root line is
exactly mask(clear root line). Also: every protected diagnostic token survives masking, line by
line.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from denpex.catalog import Catalog
from denpex.collect.inputs import Source
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident
from denpex.evaluate.corpus import evidence_paths, find_cases
from denpex.minimize.detectors import PROTECTED
from denpex.minimize.masker import Masker
from denpex.minimize.stream import learn_stream, mask_stream, open_input
from tests.helpers import corpus_incident
from tests.minimize.conftest import KEY

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
CASES = find_cases(CORPUS)


def _masked(catalog: Catalog, case: Path, masker: Masker, tmp: Path) -> tuple[dict[str, Any], list[str]]:
    """The incident of the masked copies, and each protected token the masking lost."""
    files = evidence_paths(case)
    for f in files:
        with open_input(f) as fin:
            learn_stream(fin, masker)
    sources = []
    lost: list[str] = []
    for i, f in enumerate(files):
        name = masker.mask_name(str(Path(f).relative_to(case)))
        target = tmp / f"s{i}" / Path(name).name
        target.parent.mkdir(parents=True)
        with open_input(f) as fin, target.open("wb") as fout:
            mask_stream(fin, fout, masker)
        sources.append(Source(display=name, path=target, index=i))
        lost += _lost_tokens(Path(f).read_text(errors="surrogateescape"),
                             target.read_text(errors="surrogateescape"))
    return build_incident(diagnose_paths(catalog, sources)), lost


def _lost_tokens(clear: str, masked: str) -> list[str]:
    """Xid codes, PCI ids, ranks, sequence numbers, sizes and times are out of generic detectors' reach."""
    clear_lines, masked_lines = clear.splitlines(), masked.splitlines()
    if len(clear_lines) != len(masked_lines):  # a multi-line secret folded: compare the whole text
        clear_lines, masked_lines = [clear], [masked]
    lost = []
    for line, out in zip(clear_lines, masked_lines, strict=True):
        for rx in PROTECTED:
            lost += [f"{m.group(0)!r} in {line[:160]!r}" for m in rx.finditer(line) if m.group(0) not in out]
    return lost


# Every case with --identity (its detectors are a superset of the plain ones), every fourth also
# without it: each masking of the whole corpus costs a minute of `make test`.
RUNS = [(case, True) for case in CASES] + [(case, False) for case in CASES[::4]]


@pytest.mark.parametrize(("case", "identity"), RUNS,
                         ids=[f"{c.name}-{'identity' if i else 'plain'}" for c, i in RUNS])
def test_masked_evidence_gives_the_same_diagnosis(catalog: Catalog, case: Path, identity: bool,
                                                  tmp_path: Path) -> None:
    clear = corpus_incident(catalog, case)
    masker = Masker(KEY, identity=identity)
    masked, lost = _masked(catalog, case, masker, tmp_path)
    assert not lost, lost[:10]
    assert masked["owner"] == clear["owner"]
    assert masked["initiating_rank"] == clear["initiating_rank"]
    assert masked["root_cause"]["signature_id"] == clear["root_cause"]["signature_id"]
    ce, me = clear["root_cause"]["evidence"], masked["root_cause"]["evidence"]
    assert bool(ce) == bool(me)
    if ce:
        assert me[0]["text"] == masker.mask_text(ce[0]["text"])
        assert me[0]["line_no"] == ce[0]["line_no"]
