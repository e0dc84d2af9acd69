"""Run every labelled case of a corpus and score owner, root line, initiating rank, healthy FPs.

A case is a folder with ``case.toml`` (source and labels) and evidence files; see
``tests/corpus/README.md``. Alternative owners an expert could defend count half.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denpex.catalog.loader import Catalog
from denpex.collect.inputs import expand_paths
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident

CASE_FILE = "case.toml"


@dataclass
class CaseResult:
    name: str
    group: str
    expect: dict[str, Any]
    doc: dict[str, Any]
    owner_score: float = 0.0
    root_hit: bool | None = None
    rank_ok: bool | None = None
    spurious_rank: bool | None = None  # a rank named where the label says none is knowable
    healthy_fp: bool | None = None
    status_ok: bool = False


@dataclass
class Score:
    cases: list[CaseResult] = field(default_factory=list)

    def _mean(self, vals: list[float]) -> float:
        return sum(vals) / len(vals) if vals else 0.0

    @property
    def owner_accuracy(self) -> float:
        return self._mean([c.owner_score for c in self.cases])

    @property
    def root_line_hit(self) -> float:
        return self._mean([1.0 if c.root_hit else 0.0 for c in self.cases if c.root_hit is not None])

    @property
    def rank_accuracy(self) -> float:
        return self._mean([1.0 if c.rank_ok else 0.0 for c in self.cases if c.rank_ok is not None])

    @property
    def spurious_rank_rate(self) -> float:
        return self._mean([1.0 if c.spurious_rank else 0.0 for c in self.cases if c.spurious_rank is not None])

    @property
    def healthy_fp_rate(self) -> float:
        return self._mean([1.0 if c.healthy_fp else 0.0 for c in self.cases if c.healthy_fp is not None])

    def counts(self) -> dict[str, int]:
        return {
            "cases": len(self.cases),
            "failed_cases": sum(1 for c in self.cases if c.root_hit is not None),
            "rank_cases": sum(1 for c in self.cases if c.rank_ok is not None),
            "no_rank_cases": sum(1 for c in self.cases if c.spurious_rank is not None),
            "healthy_cases": sum(1 for c in self.cases if c.healthy_fp is not None),
        }


def find_cases(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob(CASE_FILE))


def evidence_paths(case_dir: Path) -> list[str]:
    return [str(p) for p in sorted(case_dir.rglob("*")) if p.is_file() and p.name != CASE_FILE]


def run_case(catalog: Catalog, case_dir: Path, corpus_root: Path) -> CaseResult:
    with (case_dir / CASE_FILE).open("rb") as fh:
        meta = tomllib.load(fh)
    expect = meta.get("expect", {})
    sources, _ = expand_paths(evidence_paths(case_dir))
    for s in sources:
        s.display = str(Path(s.display).relative_to(case_dir)) if s.path else s.display
    doc = build_incident(diagnose_paths(catalog, sources))
    rel = case_dir.relative_to(corpus_root)
    res = CaseResult(name=str(rel), group=rel.parts[0], expect=expect, doc=doc)
    want_owner = expect.get("owner", "none")
    alts = expect.get("alt_owners", [])
    res.owner_score = 1.0 if doc["owner"] == want_owner else 0.5 if doc["owner"] in alts else 0.0
    res.status_ok = doc["status"] == expect.get("status", "failed")
    if expect.get("status") == "healthy":
        res.healthy_fp = doc["status"] != "healthy"
    else:
        ev = doc["root_cause"]["evidence"]
        res.root_hit = bool(ev) and expect.get("root_line", "\0") in ev[0]["text"]
        if "initiating_rank" in expect:
            res.rank_ok = doc["initiating_rank"] == expect["initiating_rank"]
        else:
            res.spurious_rank = doc["initiating_rank"] is not None
    return res


def score_corpus(catalog: Catalog, root: Path) -> Score:
    score = Score()
    for case in find_cases(root):
        score.cases.append(run_case(catalog, case, root))
    return score


def render_table(score: Score) -> str:
    n = score.counts()
    rows = [
        "| metric | value | over |",
        "|---|---:|---:|",
        f"| owner accuracy (alt owner = ½) | {score.owner_accuracy:.1%} | {n['cases']} cases |",
        f"| root line hit | {score.root_line_hit:.1%} | {n['failed_cases']} failed cases |",
        f"| initiating-rank accuracy | {score.rank_accuracy:.1%} | {n['rank_cases']} labelled cases |",
        f"| rank named where none is knowable | {score.spurious_rank_rate:.1%} | {n['no_rank_cases']} cases |",
        f"| healthy false positives | {score.healthy_fp_rate:.1%} | {n['healthy_cases']} healthy cases |",
    ]
    return "\n".join(rows)


def render_misses(score: Score) -> str:
    out = []
    for c in score.cases:
        problems = []
        if c.owner_score < 1.0:
            problems.append(f"owner {c.doc['owner']} (want {c.expect.get('owner')})")
        if c.root_hit is False:
            got = c.doc["root_cause"]["evidence"]
            problems.append("root line missed" + (f": got {got[0]['text'][:90]!r}" if got else ": no root"))
        if c.rank_ok is False:
            problems.append(f"rank {c.doc['initiating_rank']} (want {c.expect.get('initiating_rank')})")
        if c.spurious_rank:
            problems.append(f"rank {c.doc['initiating_rank']} named, label has none")
        if c.healthy_fp:
            problems.append(f"healthy case diagnosed as {c.doc['root_cause']['signature_id']}")
        if problems:
            out.append(f"- `{c.name}`: " + "; ".join(problems))
    return "\n".join(out)
