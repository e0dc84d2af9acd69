"""The diagnosis of one incident, as the stages after scanning build it up."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from denpex.catalog.loader import Catalog
from denpex.diagnose.findings import Finding
from denpex.diagnose.ranks import RankVerdict
from denpex.diagnose.root import RootChoice
from denpex.scan.scanner import SourceResult


@dataclass
class Diagnosis:
    catalog: Catalog
    results: list[SourceResult]
    findings: list[Finding]
    failures: list[Finding]
    choice: RootChoice
    owner: str
    rank: RankVerdict | None
    fired: list[tuple[str, str, list[Finding]]] = field(default_factory=list)
    rma_candidate: bool = False
    rma_reasons: list[str] = field(default_factory=list)
    impact: dict[str, Any] = field(default_factory=dict)
    secondary: list[list[Finding]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    known_ranks: set[int] = field(default_factory=set)
    errors: list[str] = field(default_factory=list)

    @property
    def root(self) -> Finding | None:
        return self.choice.root

    @property
    def healthy(self) -> bool:
        return self.root is None
