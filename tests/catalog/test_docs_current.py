"""docs/signatures is generated from the catalog; stale pages mislead readers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_signature_docs_are_current() -> None:
    r = subprocess.run([sys.executable, str(REPO / "tools" / "gen_signature_docs.py"), "--check",
                        "--out", str(REPO / "docs" / "signatures")], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
