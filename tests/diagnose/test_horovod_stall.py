"""Horovod's stall warning is the hang's explanation, unless training went on after it."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

# horovod#2640 and #2843 (tests/corpus/holdout43, holdout30).
STALL = ("[2021-04-10 21:28:20.658706: W horovod/common/stall_inspector.cc:105] One or more tensors were submitted "
         "to be reduced, gathered or broadcasted by subset of ranks and are waiting for remainder of ranks for more "
         "than 60 seconds. This may indicate that different ranks are trying to submit different tensors or that "
         "only subset of ranks is submitting tensors, which will cause deadlock.\n")


def test_a_stall_that_ends_the_log_is_the_failure(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"train.log": STALL})
    assert doc["status"] == "failed"
    assert "stall_inspector" in doc["root_cause"]["evidence"][0]["text"]


def test_a_stall_followed_by_training_steps_is_recovered(catalog: Catalog, tmp_path: Path) -> None:
    steps = "".join(f" iteration {i}/ 1000 | consumed samples: {i * 64} | lm loss: 2.1E+00 |\n" for i in range(5, 12))
    doc = diagnose_files(catalog, tmp_path, {"train.log": STALL + steps})
    assert doc["status"] == "healthy"
