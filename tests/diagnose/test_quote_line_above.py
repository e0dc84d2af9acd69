"""A bare AssertionError quotes the assert statement above it; an assertion with a message keeps its own line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

# vLLM GGUF loading (tests/corpus/holdout122/vllm-gguf-minicpmv-vocab-embedding-assert).
BARE = (
    "Traceback (most recent call last):\n"
    '  File "/home/anaconda3/envs/vllm/lib/python3.10/site-packages/vllm/model_executor/layers/'
    'vocab_parallel_embedding.py", line 375, in weight_loader\n'
    "    assert loaded_weight.shape[output_dim] == self.org_vocab_size\n"
    "AssertionError\n"
)
# Megatron-style assert with a message on the exception line.
WITH_MESSAGE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/megatron/megatron/training/arguments.py", line 12, in validate_args\n'
    "    assert args.ulysses_size == world_size, \\\n"
    "AssertionError: The number of ulysses_size should be equal to the world size.\n"
)


def _root_evidence(catalog: Catalog, tmp_path: Path, text: str) -> tuple[str, dict[str, Any]]:
    doc = diagnose_files(catalog, tmp_path, {"train.log": text})
    ev = doc["root_cause"]["evidence"][0]
    assert f"(train.log:{ev['line_no']})." in doc["summary"]  # the summary points at the quoted line too
    return doc["root_cause"]["signature_id"], ev


def test_bare_assertion_quotes_the_condition_line(catalog: Catalog, tmp_path: Path) -> None:
    sig, ev = _root_evidence(catalog, tmp_path, BARE)
    assert sig == "python.assertion_error_bare"
    assert (ev["line_no"], ev["text"]) == (3, "    assert loaded_weight.shape[output_dim] == self.org_vocab_size")


def test_assertion_with_a_message_quotes_the_message(catalog: Catalog, tmp_path: Path) -> None:
    _, ev = _root_evidence(catalog, tmp_path, WITH_MESSAGE)
    assert ev["line_no"] == 4
    assert ev["text"].startswith("AssertionError: The number of ulysses_size")


def test_bare_assertion_without_a_code_line_keeps_its_own_line(catalog: Catalog, tmp_path: Path) -> None:
    _, ev = _root_evidence(catalog, tmp_path, "step 3 done\nAssertionError\n")
    assert (ev["line_no"], ev["text"]) == (2, "AssertionError")
