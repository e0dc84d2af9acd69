"""What one signature is.

A signature is data: patterns that recognise one failure (or one piece of context) in a log
line, plus what we know about it: who must act, how bad it is, whether it can start a failure
or only follows one, and what a human should run next. The engine never special-cases a
signature id; everything it needs to decide is a field here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

SEVERITIES = ("fatal", "error", "warning", "info")
ROLES = ("root", "cascade", "symptom", "context")
RMA_LEVELS = ("none", "supporting", "candidate")
STATUSES = ("stable", "preview", "deprecated")
WHO = ("user", "operator", "vendor", "developer")


@dataclass(frozen=True)
class Step:
    """A human-run step. Denpex proposes; a person runs it."""

    step: str
    command: str | None = None
    who: str = "user"
    disruptive: bool = False


@dataclass(frozen=True)
class Signature:
    id: str
    family: str
    title: str
    patterns: tuple[str, ...]
    owner: str
    category: str
    severity: str
    role: str
    explanation: str
    steps: tuple[Step, ...]
    references: tuple[str, ...]
    source_file: str
    case_insensitive: bool = False
    extract: tuple[str, ...] = ()
    priority: int = 50
    rma: str = "none"
    clear_when: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    status: str = "stable"
    since: str = "0.1.0"
    # The line only announces an error that the next line spells out ("BackendCompilerFailed:
    # backend='inductor' raised:" then "RuntimeError: ..."): when the next line is a failure of
    # its own, that line is the root.
    detail_follows: bool = False
    # The patterns describe a line that counts only where a source ends on it: the output
    # stops inside a traceback ('File "...", line N, in f' and its code line, no exception
    # line after them). Engines never scan for it; the scanner tests each source's last lines.
    end_of_source: bool = False
    # A line that announces a traceback the process survives ("Exception ignored in:", a
    # library's "optional X is not available" warning logged with its traceback): the first
    # failure within CLEARS_NEXT_LINES lines below it in the same source is part of it.
    clears_next_failure: bool = False
    # A line that says the failure just above it was survived (TensorRT's "Skipping tactic ...
    # due to insufficient memory" after the tactic's out-of-memory error): failures within
    # CLEARS_PRIOR_LINES lines above it in the same source are part of it.
    clears_prior_failure: bool = False
    # A line that says the failure matched on the same line is not one (a warning-level
    # "Connection reset by peer" as processes exit): only failures on its own line.
    clears_line: bool = False
    # A generic exception whose owner is where it was raised: the scanner records the file of
    # the traceback's last frame (``raised_in``); a library's code (site-packages) makes the
    # failure the framework's, the job's own files the user's (see ``scan.frames``).
    frame_owner: bool = False
    # A regex for the line just above a match that says more than the matched line: a bare
    # "AssertionError" says nothing, the "assert x > 0" code line above it says what failed.
    # When the line above matches, the event quotes that line (its text and line number).
    quote_line_above: str = ""

    @property
    def flags(self) -> int:
        # ASCII semantics for \w, \d, \s, \b and case folding: the same as Hyperscan's, so both
        # engines find the same lines; log text that matters is ASCII anyway.
        return re.ASCII | (re.IGNORECASE if self.case_insensitive else 0)

    # Compiled on first use: a scan confirms only the few signatures whose literals or
    # Hyperscan hits occur, so most of a large catalog is never compiled in a given run.
    @cached_property
    def compiled(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p, self.flags) for p in self.patterns)

    @cached_property
    def compiled_extract(self) -> tuple[re.Pattern[str], ...]:
        return tuple(re.compile(p, self.flags) for p in self.extract)

    @cached_property
    def compiled_quote_above(self) -> re.Pattern[str] | None:
        return re.compile(self.quote_line_above, self.flags) if self.quote_line_above else None

    @cached_property
    def digit_shape(self) -> bytes:
        """A translation folding the digits no pattern tells apart (see ``regex_subset.digit_shape``)."""
        from denpex.catalog.regex_subset import digit_shape

        return digit_shape(self.patterns)

    @property
    def folds_all_digits(self) -> bool:
        """No pattern tells any two digits apart: a line matches exactly when it does with every digit '0'."""
        return self.digit_shape[48:58] == b"0" * 10

    def __getstate__(self) -> dict[str, Any]:
        # A pickled catalog (the load cache, worker processes) carries data, not compiled regexes.
        state = dict(self.__dict__)
        state.pop("compiled", None)
        state.pop("compiled_extract", None)
        state.pop("digit_shape", None)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    @property
    def is_failure(self) -> bool:
        """Whether a hit of this signature, on its own, means something went wrong."""
        return self.role != "context" and self.severity in ("fatal", "error")

    def matches(self, line: str) -> bool:
        for p in self.compiled:  # noqa: SIM110 - a loop, not any() over a generator: called per candidate line
            if p.search(line):
                return True
        return False

    def extract_fields(self, line: str) -> dict[str, str]:
        """Named groups of the ``extract`` regexes; the first one to capture a name wins."""
        fields: dict[str, str] = {}
        for rx in self.compiled_extract:
            m = rx.search(line)
            if not m:
                continue
            for name, value in m.groupdict().items():
                if value is not None and name not in fields:
                    fields[name] = value
        return fields
