"""The incident as JSON: exactly the shared schema, keys sorted for byte-stable output."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def render_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def write_incident(doc: dict[str, Any], out_dir: Path) -> Path:
    """Write atomically (temp file + rename), so a reader never sees half a document."""
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{doc['id']}.json"
    fd, tmp = tempfile.mkstemp(prefix=".incident-", suffix=".json", dir=out_dir)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(render_json(doc))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
