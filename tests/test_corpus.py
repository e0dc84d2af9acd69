"""The real-log corpus: healthy logs stay silent, and the score never silently drops."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from denpex.catalog import Catalog
from denpex.collect.inputs import expand_paths
from denpex.diagnose import diagnose_paths
from denpex.evaluate.corpus import evidence_paths, find_cases, score_corpus

CORPUS = Path(__file__).resolve().parent / "corpus"
HEALTHY = CORPUS / "healthy"
EXCEPTIONS = tomllib.loads((CORPUS / "healthy_exceptions.toml").read_text())["exceptions"]

# Floors under the measured score (see README); raise them when the score rises. Twenty-three held-out
# healthy cases are known false positives: holdout41's PCIe A100 for which DCGM reports every
# NVLink down (a DCGM bug on GPUs without NVLink; the text alone cannot tell it from links that
# failed), holdout30's one-line excerpt of Horovod's stall warning from a run that went on
# (with the training lines after it the warning is recovered; alone it reads as the hang it
# usually is), and holdout60's benchmark that its owner cancelled once it had printed its
# numbers (a cancel with no reason in the banner reads as a failure), and holdout85's vLLM service
# that failed one start for want of KV-cache memory and was restarted by systemd (the restart
# that served is not in the text as progress), and holdout97's CosyVoice web UI whose ONNX Runtime
# could not load its CUDA provider (the small ONNX models ran on the CPU, the PyTorch ones on the
# GPU; the same line ends another corpus case's run), and holdout116's two vLLM scripts whose only
# posted line is the client's "Engine core proc EngineCore_DP0 died unexpectedly" printed at
# interpreter exit (a vLLM shutdown bug; alone the line reads as the crash it usually reports),
# holdout123's desktop whose Chrome process drew an Xid 31 that broke nothing (an MMU fault is a
# process's fault whoever the process is), and holdout127's question about a kernel soft lockup
# during a long final save (the job finished; the line alone reads as the stall it reports), and
# holdout152's AReaL run whose reporter paraphrased its teardown warnings into one line without
# the "[W" stamps that mark them as warnings ("TCPStore.recvValue failed ... Connection reset by
# peer"), and holdout158's vLLM embedding server that its user stopped with scancel (a plain
# CANCELLED line, which ends as many failed jobs in the corpus as healthy ones), and holdout163's
# Kubernetes pod that ran nvidia-smi once under restartPolicy Always (its "Back-off restarting
# failed container" is what a crash loop prints), holdout173's MLPerf RetinaNet run whose teardown
# barrier hit ncclInvalidUsage after its run_stop success (an error with an owner after the end
# still counts: a final save that fails is a failure), and holdout174's MLPerf Inference CPU
# reference run whose TensorFlow logged "failed call to cuInit: CUDA_ERROR_NO_DEVICE" (the
# harness hid the GPUs on purpose; the same line is another corpus case's failure), and holdout191's
# pyxis demo whose "srun: error: ... task 0: Exited with exit code 1" was the expected answer of a
# 'which' that found nothing (a task's non-zero exit is a failure in every other case), and
# holdout197's dcgmi diag that failed NVLink on A100s without NVLink (holdout41's DCGM bug again,
# from another thread), and holdout202's trtexec run whose CUDA-graph capture failed before it
# fell back to plain launches (the fallback line clears the error next to it, not the copy of the
# error the reporter pasted at the top), and holdout210's BigScience probe cancelled by its owner
# once timed (holdout60's cancel again, a sibling run), and holdout243's rembg and ReActor runs
# whose ONNX Runtime could not load its CUDA provider and went on on the CPU (holdout97's case
# again; seven other corpus cases end on the same line), and holdout260's training run whose
# wandb upload thread died of a read timeout between epochs (the excerpt ends inside that
# thread's traceback, which reads as the process's own), and holdout274's two Automodel
# validation runs whose wrapper's `python -c` one-liner failed on lost quotes before training
# started (a `python -c` error is the failure in most threads that show one), and holdout283's
# PaiNN run that its owner stopped with bkill (LSF's TERM_OWNER record clears the exit code
# after it, not the KeyboardInterrupt tracebacks Python printed above it, which alone read as
# the interrupted run they are): 24 of 1,024 healthy cases, and a twenty-sixth fails the build.
# Owner and root-line floors sit a few points under the measured 83.6% and 86.6%, room for a
# new held-out set scored before its fixes.
FLOORS = {"owner_accuracy": 0.80, "root_line_hit": 0.83, "healthy_fp_rate": 0.0250}


@pytest.mark.parametrize("case", find_cases(HEALTHY), ids=lambda p: p.name)
def test_healthy_case_has_no_failure_findings(catalog: Catalog, case: Path) -> None:
    sources, _ = expand_paths(evidence_paths(case))
    diag = diagnose_paths(catalog, sources)
    hits = sorted({f.sig.id for f in diag.failures if f.sig.id not in EXCEPTIONS})
    assert not hits, f"{case.name}: {hits}"


def test_corpus_case_files_are_well_formed() -> None:
    for case in find_cases(CORPUS):
        meta = tomllib.loads((case / "case.toml").read_text())
        assert meta.get("source", "").startswith("http"), case
        exp = meta["expect"]
        assert exp["status"] in ("failed", "healthy"), case
        if exp["status"] == "failed":
            lines = [ln for p in evidence_paths(case) for ln in Path(p).read_text(errors="replace").splitlines()]
            assert any(exp["root_line"] in ln for ln in lines), f"{case}: root_line not in evidence"


def test_corpus_score_does_not_drop(catalog: Catalog) -> None:
    score = score_corpus(catalog, CORPUS)
    assert score.owner_accuracy >= FLOORS["owner_accuracy"]
    assert score.root_line_hit >= FLOORS["root_line_hit"]
    assert score.healthy_fp_rate <= FLOORS["healthy_fp_rate"]
