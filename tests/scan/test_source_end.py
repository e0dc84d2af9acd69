"""A source that ends inside a traceback is a failure on its last frame; one that goes on is not."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from denpex.catalog import Catalog
from denpex.collect.inputs import expand_paths
from denpex.diagnose.run import diagnose_paths
from denpex.scan.engine import ReEngine
from denpex.scan.source_end import cut_traceback_line

FRAME = re.compile(r'", line \d+, in [\w<]').search

# MiniCPM-V#356 (holdout5): torchrun output pasted up to the frame that raised.
MINICPM = """\
[rank6]: Traceback (most recent call last):
[rank6]:   File "/workspace/minicpm/finetune/finetune.py", line 281, in <module>
[rank6]:     train()
[rank6]:   File "/workspace/pypacks/accelerate/state.py", line 280, in __init__
[rank6]:     self.set_device()
[rank6]:   File "/workspace/pypacks/accelerate/state.py", line 790, in set_device
[rank6]:     torch.cuda.set_device(self.device)
"""


def _line_at(text: str) -> str | None:
    data = text.encode()
    at = cut_traceback_line(data, FRAME)
    return None if at is None else data[at:].split(b"\n", 1)[0].decode()


def test_a_source_ending_on_a_frames_code_line_is_cut_there() -> None:
    assert _line_at(MINICPM) == "[rank6]:     torch.cuda.set_device(self.device)"


def test_python_311_carets_and_an_empty_prefixed_line_do_not_end_the_traceback() -> None:
    text = ('Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n'
            "    x = table[key]\n        ~~~~~^^^^^\n[rank14]: \n")
    assert _line_at(text) == "    x = table[key]"


def test_a_frame_without_source_ends_it_on_the_frame_line() -> None:
    text = 'Traceback (most recent call last):\n  File "x.py", line 2, in f\n  File "<string>", line 136, in __init__\n'
    assert _line_at(text) == '  File "<string>", line 136, in __init__'


def test_an_exception_line_after_a_sourceless_frame_is_not_a_cut() -> None:
    text = 'Traceback (most recent call last):\n  File "<string>", line 136, in __init__\nRuntimeError: boom\n'
    assert _line_at(text) is None


def test_a_complete_traceback_or_later_output_is_not_a_cut() -> None:
    done = 'Traceback (most recent call last):\n  File "a.py", line 3, in <module>\n    f()\nValueError: x\n'
    assert _line_at(done) is None
    assert _line_at(done[:-len("ValueError: x\n")] + "step 10/100 loss 1.2\n") is None
    # faulthandler's and py-spy's stack dumps are no exception: no comma before "in"
    assert _line_at('Thread 0x1 (most recent call first):\n  File "t.py", line 320 in wait\n') is None


@given(st.lists(st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\n"), max_size=40), max_size=30))
def test_any_text_gives_a_line_start_or_none(lines: list[str]) -> None:
    data = "".join(f"{line}\n" for line in lines).encode()
    at = cut_traceback_line(data, FRAME)
    assert at is None or at == 0 or data[at - 1:at] == b"\n"


def test_engines_never_scan_for_a_source_end_signature(catalog: Catalog) -> None:
    idx = [i for i, s in enumerate(catalog.signatures) if s.end_of_source]
    assert idx
    engine = ReEngine(catalog.signatures)
    found = {c[2] for c in engine.scan(MINICPM.encode())}
    assert not found & set(idx)


def test_a_cut_traceback_is_a_failure_with_the_rank_that_printed_it(catalog: Catalog, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(MINICPM)
    diag = diagnose_paths(catalog, expand_paths([str(log)])[0])
    assert diag.root is not None and diag.root.sig.id == "python.traceback_cut"
    # The frame it was cut in is not under site-packages: the job's own copy of the code.
    assert diag.root.event.line_no == 7 and diag.owner == "user_code"
    assert diag.rank is not None and diag.rank.rank == 6


def test_a_traceback_followed_by_training_is_healthy(catalog: Catalog, tmp_path: Path) -> None:
    log = tmp_path / "train.log"
    log.write_text(MINICPM + "iteration      200/  1000 | consumed samples: 12800 | lm loss: 2.1E+00 |\n")
    diag = diagnose_paths(catalog, expand_paths([str(log)])[0])
    assert diag.root is None or diag.root.sig.id != "python.traceback_cut"


def test_a_frozen_last_frame_points_at_the_call_above_it() -> None:
    # NeMo Automodel PR 3686 (tests/corpus/holdout55): the cut came in os.makedirs.
    text = ('[rank8]:   File "nemo_automodel/components/checkpoint/checkpointing.py", line 2011, in _create_dirs\n'
            "[rank8]:     os.makedirs(directory, exist_ok=True)\n"
            '[rank8]:   File "<frozen os>", line 225, in makedirs\n')
    assert _line_at(text) == "[rank8]:     os.makedirs(directory, exist_ok=True)"
