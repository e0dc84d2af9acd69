"""Lost work: last good checkpoint, last step, world size, GPU-hours since the checkpoint."""

from __future__ import annotations

from typing import Any

from denpex.diagnose.findings import Finding
from denpex.diagnose.timeline import absolute_time, seconds_between


def _int(val: str | None) -> int | None:
    if val is None:
        return None
    try:
        return int(val.replace(",", ""))
    except ValueError:
        return None


def compute_impact(findings: list[Finding], root: Finding | None, known_ranks: set[int]) -> dict[str, Any]:
    ctx = [f for f in findings if f.role == "context"]
    before = ctx
    if root is not None:
        before = [f for f in ctx if _not_after(f, root)]
    last_ckpt: Finding | None = None
    for f in before:
        if "checkpoint" in f.event.fields:
            last_ckpt = f
    steps = [s for s in (_int(f.event.fields.get("step")) for f in before) if s is not None]
    world_sizes = [w for w in (_int(f.event.fields.get("world_size")) for f in ctx) if w]
    world = max(world_sizes) if world_sizes else (len(known_ranks) if len(known_ranks) > 1 else None)
    hours: float | None = None
    if root is not None and last_ckpt is not None and world:
        secs = seconds_between(last_ckpt.event, root.event)
        if secs is not None and secs >= 0:
            hours = round(world * secs / 3600.0, 2)
    return {
        "last_checkpoint": last_ckpt.event.fields["checkpoint"] if last_ckpt else None,
        "last_step": max(steps) if steps else None,
        "world_size": world,
        "gpu_hours_lost": hours,
    }


def _not_after(f: Finding, root: Finding) -> bool:
    if f.event.source_index == root.event.source_index:
        return f.event.line_no <= root.event.line_no
    ta, tb = absolute_time(f.event), absolute_time(root.event)
    if ta is not None and tb is not None:
        return ta <= tb
    return True
