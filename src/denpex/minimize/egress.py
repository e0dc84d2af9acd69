"""The bytes that would leave this machine, built one way for every sender.

``masked``: the incident document diagnosed from masked copies of the evidence (secrets,
personal data and infrastructure identity replaced), file names masked too, then masked once
more as a whole (a no-op unless masking missed something). ``strict``: signature ids, counts,
relative times, ranks and coarse context only (``strict.py``). ``denpex egress preview`` prints
exactly these bytes; anything that sends or uploads must call ``build_payload`` and send its
result unchanged.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from denpex.catalog.loader import Catalog
from denpex.collect.inputs import Source, expand_paths
from denpex.diagnose import diagnose_paths
from denpex.diagnose.incident import build_incident
from denpex.diagnose.model import Diagnosis
from denpex.minimize.masker import Masker
from denpex.minimize.stream import MaskInputError, learn_stream, mask_stream, open_input
from denpex.minimize.strict import Context, build_strict
from denpex.report.json_report import render_json

MODES = ("masked", "strict")


@dataclass
class Payload:
    data: bytes
    errors: list[str] = field(default_factory=list)  # inputs that could not be read at all
    sources: int = 0


@dataclass
class MaskedEvidence:
    diag: Diagnosis
    context: Context
    errors: list[str]


def diagnose_masked(catalog: Catalog, paths: list[str], masker: Masker, workdir: Path) -> MaskedEvidence:
    """Mask every source into ``workdir`` (streaming) and diagnose the masked copies."""
    sources, errors = expand_paths(paths)
    for src in sources:
        if src.path is None:
            continue
        try:
            with open_input(str(src.path)) as fin:
                learn_stream(fin, masker)
        except (MaskInputError, OSError) as exc:
            errors.append(f"{src.display}: {exc}")
    context = Context()
    masked: list[Source] = []
    used: set[str] = set()
    for src in sources:
        name = masker.mask_name(src.display)
        while name in used:
            name += "_"
        used.add(name)
        target = workdir / f"s{src.index:05d}" / Path(name).name
        target.parent.mkdir(parents=True)
        try:
            with open_input("-" if src.path is None else str(src.path)) as fin, target.open("wb") as fout:
                mask_stream(fin, fout, masker, context.observe)
        except (MaskInputError, OSError) as exc:
            errors.append(f"{src.display}: {exc}")
        masked.append(Source(display=name, path=target, index=len(masked)))
    return MaskedEvidence(diagnose_paths(catalog, masked), context, errors)


def mask_document(doc: Any, masker: Masker) -> Any:
    """Every string of a document masked: the last line of defence before anything is stored or sent."""
    if isinstance(doc, dict):
        return {k: mask_document(v, masker) for k, v in doc.items()}
    if isinstance(doc, list):
        return [mask_document(v, masker) for v in doc]
    if isinstance(doc, str):
        return masker.mask_text(doc)
    return doc


def build_payload(catalog: Catalog, paths: list[str], mode: str, key: bytes,
                  generated_at: datetime | None = None) -> Payload:
    if mode not in MODES:
        raise ValueError(f"unknown egress mode {mode!r}; choose one of {', '.join(MODES)}")
    masker = Masker(key, identity=True)
    with tempfile.TemporaryDirectory(prefix="denpex-egress-") as tmp:
        ev = diagnose_masked(catalog, paths, masker, Path(tmp))
        doc = build_incident(ev.diag, generated_at)
        if mode == "masked":
            data = render_json(mask_document(doc, masker)).encode("utf-8", "surrogateescape")
        else:
            strict = build_strict(ev.diag, ev.context, doc["confidence"], doc["category"])
            data = (json.dumps(strict, indent=2, sort_keys=True) + "\n").encode()
    return Payload(data=data, errors=ev.errors, sources=len(ev.diag.results))
