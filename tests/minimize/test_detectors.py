"""The detector table is tested like the catalog: every example must (or must not) mask."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.evaluate.corpus import evidence_paths, find_cases
from denpex.minimize.detectors import BY_NAME, DETECTORS, IDENTITY, PROTECTED, Detector
from denpex.minimize.masker import Masker
from tests.minimize.conftest import KEY


def _masker_for(category: str) -> Masker:
    return Masker(KEY, identity=category == IDENTITY)


MUST = [(d.name, line, value) for d in DETECTORS for line, value in d.must]
MUST_NOT = [(d.name, line) for d in DETECTORS for line in d.must_not]


def test_every_detector_has_examples_both_ways() -> None:
    """A detector without a must-mask and a must-not-mask example is untested in both directions."""
    for d in DETECTORS:
        assert d.must, f"{d.name}: no must-mask example"
        assert d.must_not, f"{d.name}: no must-not-mask example"
    assert len({d.name for d in DETECTORS}) == len(DETECTORS), "duplicate detector names"


@pytest.mark.parametrize(("name", "line", "value"), MUST, ids=[f"{n}:{i}" for i, (n, _, _) in enumerate(MUST)])
def test_detector_masks_its_examples(name: str, line: str, value: str) -> None:
    m = _masker_for(BY_NAME[name].category)
    assert any(s.detector == name for s in m.spans(line)), f"{name} did not fire on {line!r}"
    assert value not in m.mask_text(line)


@pytest.mark.parametrize(("name", "line"), MUST_NOT, ids=[f"{n}:{i}" for i, (n, _) in enumerate(MUST_NOT)])
def test_detector_leaves_its_counter_examples(name: str, line: str) -> None:
    m = _masker_for(BY_NAME[name].category)
    assert not [s for s in m.spans(line) if s.detector == name], m.mask_text(line)


@pytest.mark.parametrize(("line", "kind"), [
    ("AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "aws_access_key"),
    ("export HF_TOKEN=hf_aBcDeFgHiJkLmNoPqRsTuVwXyZaBcDeFgH", "huggingface_token"),
    ("ANTHROPIC_API_KEY=sk-ant-api03-Xy7_kQ9r2LmN8pQ4sT6vW1zA3bC5dE7fG9hJ2kL4mN6pQ8rS0tU", "anthropic_key"),
    ("github_token: ghp_R4nd0mT0k3nV4lu3abcdefghijklmnopqr12", "github_token"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_key"),
])
def test_specific_detector_wins_over_key_value(line: str, kind: str) -> None:
    out = Masker(KEY).mask_text(line)
    assert f"<secret:{kind}:" in out, out


def test_same_value_same_placeholder_different_key_different_placeholder() -> None:
    a, b = Masker(KEY, identity=True), Masker(b"another-key-000000000000", identity=True)
    line = "gpu-node07:4100:4100 [0] NCCL INFO Init COMPLETE"
    assert a.mask_text(line) == a.mask_text(line)
    assert a.mask_text(line) != b.mask_text(line)
    assert re.match(r"host-[0-9a-f]{8}:4100:4100 \[0\] NCCL", a.mask_text(line))


def test_learned_host_is_masked_everywhere(id_masker: Masker) -> None:
    id_masker.learn("gpu-node07:4100:4100 [0] NCCL INFO Init COMPLETE")
    out = id_masker.mask_text("ssh gpu-node07 'dmesg -T' on gpu-node07.cluster")
    assert "gpu-node07" not in out
    assert out.count("host-") == 2


def test_name_masking_gives_file_safe_names(id_masker: Masker) -> None:
    id_masker.learn("May  7 12:00:00 dgx-a17 kernel: x")
    name = id_masker.mask_name("logs/dmesg-dgx-a17.txt")
    assert "dgx-a17" not in name and "<" not in name and ":" not in name


_protected_line = st.sampled_from([
    "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, GPU has fallen off the bus.",
    "[rank3]:[E ProcessGroupNCCL.cpp:616] [Rank 3] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=48211, OpType=ALLREDUCE, NumelIn=262144000, NumelOut=262144000, Timeout(ms)=600000)",
    "node1:123:456 [2] NCCL INFO comm 0x55d0 rank 2 nranks 8 cudaDev 2 busId 3b000 - Init COMPLETE",
    "Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 79.15 GiB",
    "terminate called after throwing an instance of 'c10::DistBackendError'",
])
_noise = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=40)


@settings(max_examples=200, deadline=None)
@given(_noise, _protected_line, _noise)
def test_masking_is_idempotent_and_keeps_protected_tokens(pre: str, line: str, post: str) -> None:
    m = Masker(KEY, identity=True)
    text = f"{pre} {line} {post}"
    once = m.mask_text(text)
    assert m.mask_text(once) == once
    for rx in PROTECTED:
        for tok in rx.findall(line):
            if isinstance(tok, str) and tok:
                assert tok in once, (tok, once)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_masking_never_raises_and_is_idempotent_on_any_text(text: str) -> None:
    m = Masker(KEY, identity=True)
    once = m.mask_text(text)
    assert m.mask_text(once) == once


@pytest.fixture(scope="module")
def corpus_lines() -> list[str]:
    """Every fourth corpus case's lines: real text the gated detectors meet."""
    lines: list[str] = []
    for case in find_cases(Path(__file__).resolve().parents[1] / "corpus")[::4]:
        for f in evidence_paths(case):
            lines += Path(f).read_text(errors="surrogateescape").splitlines()
    return lines


GATED = [d for d in DETECTORS if d.gate is not None]


@pytest.mark.parametrize("det", GATED, ids=[d.name for d in GATED])
def test_a_gate_lets_through_every_line_its_detector_matches(det: Detector, corpus_lines: list[str]) -> None:
    """A gate only skips lines the detector cannot match: checked on the corpus and the examples."""
    assert det.gate is not None
    for line in [line for line, _ in det.must] + list(det.must_not) + corpus_lines:
        if det.literals and not any(lit in line.lower() for lit in det.literals):
            continue
        if det.regex.search(line):
            assert det.gate.search(line), (det.name, line)


@given(st.text(alphabet="0123456789abcdefABCDEF:.-=_ \"'passwordtokenkey", max_size=60))
@settings(max_examples=400, deadline=None)
def test_gates_are_necessary_on_made_up_lines(text: str) -> None:
    for det in GATED:
        assert det.gate is not None
        if det.regex.search(text):
            assert det.gate.search(text), (det.name, text)
