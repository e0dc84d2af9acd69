"""The incident as JSON: exactly the shared schema, keys sorted for byte-stable output."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def render_json(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=True, ensure_ascii=False) + "\n"


_QUOTED = ("text", "summary")


def mask_quoted(doc: Any, masker: Any) -> Any:
    """Secrets and personal data masked in every quoted log line of an incident.

    Only the quoted text is touched (evidence ``text``, ``summary``, RMA and rule reasons):
    ids, hashes and signature names are the document's own and stay as they are.
    """
    if isinstance(doc, dict):
        out: dict[str, Any] = {}
        for k, v in doc.items():
            if k in _QUOTED and isinstance(v, str):
                out[k] = masker.mask_text(v)
            elif k in ("reasons", "reason") and isinstance(v, list):
                out[k] = [masker.mask_text(x) if isinstance(x, str) else x for x in v]
            elif k == "reason" and isinstance(v, str):
                out[k] = masker.mask_text(v)
            else:
                out[k] = mask_quoted(v, masker)
        return out
    if isinstance(doc, list):
        return [mask_quoted(v, masker) for v in doc]
    return doc


def stored_form(doc: dict[str, Any]) -> dict[str, Any]:
    """What is written to disk: the same incident with secrets in quoted lines masked.

    Evidence that reaches a file may later be copied, attached to a ticket or shipped to a
    vendor; a token pasted into a training log must not travel with it.
    """
    from denpex.minimize.keys import load_or_create_key
    from denpex.minimize.masker import Masker

    masker = Masker(load_or_create_key(), identity=False)
    masked: dict[str, Any] = mask_quoted(doc, masker)
    return masked


def write_incident(doc: dict[str, Any], out_dir: Path, mask_secrets: bool = True) -> Path:
    """Write atomically (temp file + rename), so a reader never sees half a document.

    Quoted lines are stored with secrets masked (``stored_form``) unless ``mask_secrets`` is off.
    """
    if mask_secrets:
        doc = stored_form(doc)
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
