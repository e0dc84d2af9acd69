"""One test per catalog convention; each docstring says why the convention exists."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from denpex.catalog import Catalog
from denpex.catalog.regex_subset import required_literals, subset_violations
from denpex.catalog.selftest import run_selftest
from denpex.owners import OWNERS

SCHEMA = Path(__file__).resolve().parents[2] / "src" / "denpex" / "spec" / "incident.schema.json"


def test_every_example_passes_and_every_signature_has_both_kinds(catalog: Catalog) -> None:
    """The example lines are the catalog's test suite: a rule without them is untested."""
    report = run_selftest(catalog)
    problems = report.problems + [r.message for r in report.failures]
    assert not problems, "\n".join(problems[:40])


def test_ids_are_unique_and_families_match(catalog: Catalog) -> None:
    """Ids are what incidents and metric labels store; they must be unique and well formed."""
    ids = [s.id for s in catalog.signatures]
    assert len(ids) == len(set(ids))
    for s in catalog.signatures:
        assert s.id.startswith(s.family + "."), s.id


def test_no_pattern_is_shared_by_two_signatures(catalog: Catalog) -> None:
    """Two signatures with the same pattern are padding, or a line with two owners."""
    counts = Counter(p for s in catalog.signatures for p in s.patterns)
    dup = [p for p, n in counts.items() if n > 1]
    assert not dup, dup[:10]


def test_patterns_stay_in_the_shared_regex_subset(catalog: Catalog) -> None:
    """Hyperscan must compile every pattern, so both engines give the same findings."""
    bad = [(s.id, p, subset_violations(p)) for s in catalog.signatures for p in s.patterns if subset_violations(p)]
    assert not bad, bad[:10]


def test_every_pattern_has_a_prefilter_literal(catalog: Catalog) -> None:
    """Without a literal the stdlib engine must run the regex on every line of every log."""
    bad = [(s.id, p) for s in catalog.signatures for p in s.patterns if required_literals(p) is None]
    assert not bad, bad[:10]


def test_explanations_and_steps_are_written(catalog: Catalog) -> None:
    """A match without an explanation and a next step leaves the user where grep left them."""
    for s in catalog.signatures:
        assert len(s.explanation) >= 40, s.id
        assert s.steps, s.id
        assert s.title.strip(), s.id


def test_references_are_urls(catalog: Catalog) -> None:
    """Every claim in an explanation should be checkable at a public source."""
    for s in catalog.signatures:
        assert s.references, s.id
        for r in s.references:
            assert re.match(r"https?://\S+$", r), (s.id, r)


def test_owners_are_the_shared_classes() -> None:
    """The owner list in code and the schema's enum must never drift apart."""
    schema = json.loads(SCHEMA.read_text())
    assert list(OWNERS) == schema["properties"]["owner"]["enum"]


def test_unknown_owner_says_what_would_decide(catalog: Catalog) -> None:
    """'unknown' is honest only when it says what evidence would settle it."""
    for s in catalog.signatures:
        if s.owner == "unknown" and s.role in ("root", "cascade") and s.is_failure:
            assert s.missing, s.id


def test_failure_signatures_have_a_real_owner(catalog: Catalog) -> None:
    """A failure signature owned by 'none' would produce a failed incident that nobody owns."""
    for s in catalog.signatures:
        if s.is_failure:
            assert s.owner != "none", s.id


@pytest.mark.parametrize("sig_id", ["nccl.watchdog_timeout", "progress.iteration", "launcher.mpi_abort"])
def test_core_signatures_present(catalog: Catalog, sig_id: str) -> None:
    assert catalog.get(sig_id) is not None


def test_redirects_resolve(catalog: Catalog) -> None:
    """Renamed ids must keep resolving for stored incidents."""
    for old, new in catalog.redirects.items():
        assert catalog.get(old) is not None, (old, new)


def test_site_catalog_overrides_and_extends(tmp_path: Path) -> None:
    """DENPEX_CATALOG_PATH lets a site add rules without forking; they are validated the same way."""
    from denpex.catalog.loader import RULES_DIR, load_catalog

    site = tmp_path / "site"
    (site / "site").mkdir(parents=True)
    (site / "site" / "custom.toml").write_text('''
[[signature]]
id = "site.scratch_full"
title = "Our scratch filesystem is full"
patterns = ['scratchfs: quota exhausted']
owner = "capacity"
category = "disk_full"
severity = "fatal"
role = "root"
priority = 85
explanation = "The site scratch filesystem refused a write because the project quota is exhausted."
steps = [{ step = "Clean up scratch", command = "scratch-quota --project <project>", who = "user" }]
references = ["https://example.org/scratch"]
''')
    cat = load_catalog([RULES_DIR, site])
    assert cat.get("site.scratch_full") is not None
    (site / "site" / "bad.toml").write_text('[[signature]]\nid = "site.bad"\n')
    from denpex.catalog.loader import CatalogError

    with pytest.raises(CatalogError):
        load_catalog([RULES_DIR, site])
