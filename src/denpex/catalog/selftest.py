"""Run every catalog example through the real engine: the catalog's own test suite."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from denpex.catalog.examples import Example, ExamplesError, example_files, parse_examples
from denpex.catalog.loader import Catalog, catalog_dirs
from denpex.scan.engine import Engine, default_engine, match_line


@dataclass
class ExampleResult:
    example: Example
    ok: bool
    message: str = ""


@dataclass
class SelfTestReport:
    results: list[ExampleResult]
    problems: list[str]

    @property
    def failures(self) -> list[ExampleResult]:
        return [r for r in self.results if not r.ok]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.problems


def run_selftest(catalog: Catalog, engine: Engine | None = None, dirs: list[Path] | None = None) -> SelfTestReport:
    engine = engine or default_engine(catalog.signatures)
    index = {s.id: i for i, s in enumerate(catalog.signatures)}
    results: list[ExampleResult] = []
    problems: list[str] = []
    seen_expect: set[str] = set()
    seen_none: set[str] = set()
    for root in dirs or catalog_dirs():
        for path in example_files(root):
            try:
                examples = parse_examples(path)
            except (ExamplesError, OSError, UnicodeDecodeError) as exc:
                problems.append(str(exc))
                continue
            for ex in examples:
                results.append(_check(ex, catalog, engine, index, problems))
                if ex.kind == "expect":
                    seen_expect.add(ex.signature_id)
                elif ex.kind == "expect-none":
                    seen_none.add(ex.signature_id)
    for sig in catalog.signatures:
        if sig.id not in seen_expect:
            problems.append(f"{sig.id}: no '# expect:' example ({sig.source_file})")
        if sig.id not in seen_none:
            problems.append(f"{sig.id}: no '# expect-none:' example ({sig.source_file})")
    return SelfTestReport(results, problems)


def _check(ex: Example, catalog: Catalog, engine: Engine, index: dict[str, int],
           problems: list[str]) -> ExampleResult:
    where = f"{ex.file.name}:{ex.line_no}"
    if ex.signature_id not in index:
        return ExampleResult(ex, False, f"{where}: unknown signature {ex.signature_id}")
    idx = index[ex.signature_id]
    sig = catalog.signatures[idx]
    # Engines never scan for a source-end signature (the scanner tests a source's last lines
    # with its patterns): its examples are the lines those patterns must and must not find.
    hit = sig.matches(ex.line) if sig.end_of_source else idx in match_line(engine, ex.line)
    if ex.kind in ("todo-expect", "todo-expect-none"):
        return ExampleResult(ex, True, "known miss")
    if ex.kind == "expect-none":
        return ExampleResult(ex, not hit, "" if not hit else f"{where}: {sig.id} matched a must-not line")
    if not hit:
        return ExampleResult(ex, False, f"{where}: {sig.id} did not match")
    got = sig.extract_fields(ex.line)
    for k, v in ex.fields.items():
        if got.get(k) != v:
            return ExampleResult(ex, False, f"{where}: {sig.id} field {k}={got.get(k)!r}, expected {v!r}")
    return ExampleResult(ex, True)
