"""What one signature is.

A signature is data: patterns that recognise one failure (or one piece of context) in a log
line, plus what we know about it: who must act, how bad it is, whether it can start a failure
or only follows one, and what a human should run next. The engine never special-cases a
signature id; everything it needs to decide is a field here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

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
    # Compiled forms; built once by the loader.
    compiled: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)
    compiled_extract: tuple[re.Pattern[str], ...] = field(default=(), compare=False, repr=False)

    @property
    def is_failure(self) -> bool:
        """Whether a hit of this signature, on its own, means something went wrong."""
        return self.role != "context" and self.severity in ("fatal", "error")

    def matches(self, line: str) -> bool:
        return any(p.search(line) for p in self.compiled)

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
