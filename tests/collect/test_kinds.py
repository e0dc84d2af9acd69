"""Kind detection: the text hints that spare most samples the regexes must never change a kind."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from denpex.collect import kinds

_LINES = [
    "==============NVSMI LOG==============", "Attached GPUs                             : 8",
    "|  Diagnostic                | Result   |", "| Deployment     | Pass |", "|Hardware  |", "dcgmi diag -r 3",
    "Health Monitor Report", "slurmstepd: error: *** JOB 12 CANCELLED", "srun: error: node1: task 3",
    "[  123.456789] NVRM: Xid (PCI:0000:3b:00): 79", "[Mon Jun  3 10:00:00 2024] mlx5_core 0000:3b:00.0",
    "Jun  3 10:00:00 node1 kernel: NVRM: Xid 48", "2024-06-03T10:00:00+00:00 node1 kernel: EDAC MC0",
    "node1:123:456 [0] NCCL INFO Bootstrap : Using eth0", "node1:123:456 [0] NCCL WARN Call to connect failed",
    "[rank0]: Traceback (most recent call last):", "iteration 10/100 | loss 1.0 |", "", "| x |", "[",
]


def _reference(name: str, sample: str) -> str:
    """The same rules with every regex run on every sample."""
    for kind, rx, need in kinds.KIND_RULES:
        if sum(1 for _ in itertools.islice(rx.finditer(sample), need)) >= need:
            if kind == "nccl_debug" and kinds._mostly_training(sample):
                return "training_log"
            return kind
    return kinds.detect_kind(name, "")  # what the name alone says


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_LINES), max_size=12), st.booleans())
def test_hints_never_change_the_kind(lines: list[str], crlf: bool) -> None:
    sample = ("\r\n" if crlf else "\n").join(lines)
    assert kinds.detect_kind("job.log", sample) == _reference("job.log", sample)


def test_kernel_log_and_dcgm_table_at_the_very_start_are_still_found() -> None:
    kernel = "[  1.000000] a\n[  2.000000] b\n[  3.000000] c\n"
    assert kinds.detect_kind("x.log", kernel) == "kernel_log"
    assert kinds.detect_kind("x.log", "| Deployment     | Pass |\n") == "dcgm_diag"


_KIND_PIECES = st.sampled_from([
    "[ 12.5] NVRM: Xid", "[Tue May  7 12:00:00 2024] x", "May  7 12:00:00 node kernel: y", "[default3]:step",
    "2024-05-07T12:00:00 node kernel: z", "gpu1:12:34 [0] NCCL INFO Init", "slurmstepd: error", "srun: error",
    "| Deployment | Pass |", "Diagnostic | Result", "dcgmi diag -r 1", "==NVSMI LOG==", "Attached GPUs : 8",
    "[", "|", " kernel:", "\n", " ", "x"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_KIND_PIECES, max_size=40))
def test_hinted_line_count_agrees_with_trying_every_line(pieces: list[str]) -> None:
    # The hints only choose which lines the regex runs on; the count must be the full one.
    sample = "".join(pieces)
    for kind, rx, need in kinds.KIND_RULES:
        for want in (1, need, 3):
            full = sum(1 for line in sample.split("\n") for _ in rx.finditer(line))
            assert kinds._enough_lines(sample, rx, kinds._HINTS[kind], want) == (full >= want), kind
