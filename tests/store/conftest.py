"""Real incidents for store tests: synthetic kernel lines diagnosed by the real engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

FIXTURES = Path(__file__).parent / "fixtures"

MESSAGES = {
    13: "Graphics SM Warp Exception on (GPC 0, TPC 0, SM 0): Out Of Range Address",
    48: "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 1, "
        "subpartition 0.",
    64: "ECC page retirement or row remapper recording failure",
    79: "GPU has fallen off the bus.",
    94: "Contained: SM (0x1). RST: No, D-RST: No",
}


def xid(ts: str, host: str, pci: str, code: int) -> str:
    """A journalctl -o short-iso kernel line: '2026-05-01T12:00:00+0000 host kernel: NVRM: Xid ...'."""
    return f"{ts} {host} kernel: NVRM: Xid (PCI:{pci}): {code}, pid=1234, name=python3, {MESSAGES[code]}"


MakeIncident = Callable[..., dict[str, Any]]


@pytest.fixture
def make_incident(catalog: Catalog, tmp_path_factory: pytest.TempPathFactory) -> MakeIncident:
    def make(*lines: str, files: dict[str, str] | None = None) -> dict[str, Any]:
        d = tmp_path_factory.mktemp("evidence")
        return diagnose_files(catalog, d, files if files is not None else {"kern.log": "\n".join(lines) + "\n"})

    return make
