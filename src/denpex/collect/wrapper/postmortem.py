"""After the child has exited: decide whether to diagnose, diagnose, report, store the incident.

Runs only once the job is over, inside a time budget: Denpex must never be the reason a job
step ends late. The diagnosis reads the capture plus the node's kernel log for the run's
window. On a zero exit only the capture is scanned first, and the kernel log is fetched only
when that scan finds a fatal signature (a launcher that swallowed its worker's crash).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from denpex.collect.wrapper.kernel import collect
from denpex.collect.wrapper.meta import META_DIR

# Words at least one of which appears near the end of almost any fatal output; on a zero exit
# the catalog is loaded only when the last TAIL_CHECK bytes hold one of them.
FATAL_HINTS = (b"Traceback (most recent call last)", b"Error", b"ERROR", b"error:", b"FAILED", b"Fatal", b"FATAL",
               b"fatal", b"Xid", b"Segmentation fault", b"core dumped", b"Aborted", b"Killed", b"terminate called",
               b"out of memory", b"Exception", b"exception")
TAIL_CHECK = 256 * 1024


@dataclass
class Postmortem:
    capture: Path
    job_dir: Path
    run_dir: Path
    incident_store: Path
    host: str
    started: float
    exit_code: int
    mode: str                                    # auto | always
    color: bool = False
    report: str = ""                             # what to print on stderr
    meta: dict[str, Any] = field(default_factory=dict)


def run_postmortem(pm: Postmortem) -> None:
    """Fill ``pm.report`` and ``pm.meta``; exceptions propagate to the caller's fail-open guard."""
    failed_exit = pm.exit_code != 0
    if not failed_exit and pm.mode == "auto" and not _hints_in_tail(pm.capture):
        pm.meta["diagnosis"] = "exit 0, no sign of a failure at the end of the output"
        return
    # Imported here, not at module level: `denpex run` must start the job without paying for them.
    from denpex.catalog import load_catalog
    from denpex.diagnose import diagnose_paths
    from denpex.diagnose.incident import build_incident
    from denpex.report.json_report import write_incident
    from denpex.report.text import render_text

    catalog = load_catalog()
    if not failed_exit and pm.mode == "auto":
        quick = diagnose_paths(catalog, _sources([pm.capture]))
        root = quick.root
        if root is None or root.sig.severity != "fatal":
            pm.meta["diagnosis"] = "exit 0, no fatal signature in the output"
            return
    kernel = collect(pm.started, pm.host)
    paths = [pm.capture]
    pm.meta["kernel_log"] = {"source": kernel.source, "lines": len(kernel.lines), "tried": kernel.tried}
    if kernel.lines:
        klog = pm.job_dir / f"dmesg-{pm.host}.txt"
        _atomic_text(klog, "\n".join(kernel.lines) + "\n")
        paths.append(klog)
        pm.meta["kernel_log"]["path"] = str(klog)
    diag = diagnose_paths(catalog, _sources(paths))
    doc = build_incident(diag)
    if doc["status"] == "healthy":
        pm.meta["diagnosis"] = "no known failure signature"
        if failed_exit:
            pm.report = (f"denpex: exit status {pm.exit_code}; no known failure signature in the output "
                         f"(capture: {pm.capture})\n")
        return
    local = write_incident(doc, pm.run_dir / META_DIR)
    stored = write_incident(doc, pm.incident_store)
    pm.meta["diagnosis"] = "failed"
    pm.meta["incident"] = {"id": doc["id"], "run_dir_copy": str(local), "store_copy": str(stored),
                           "owner": doc["owner"], "signature_id": doc["root_cause"]["signature_id"]}
    text = render_text(doc, color=pm.color, timeline_rows=4)
    hint = f"denpex diagnose {pm.job_dir}" if pm.job_dir != pm.run_dir else f"denpex diagnose {pm.run_dir}"
    pm.report = (f"\n{_rule('denpex', pm.color)}\n{text}"
                 f"  incident {doc['id']}: {stored}\n  all evidence: {hint}\n")


def _sources(paths: list[Path]) -> list[Any]:
    from denpex.collect.inputs import expand_paths

    sources, _ = expand_paths([str(p) for p in paths if p.exists()])
    return sources


def _hints_in_tail(capture: Path) -> bool:
    try:
        with capture.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - TAIL_CHECK))
            tail = fh.read()
    except OSError:
        return False
    return any(h in tail for h in FATAL_HINTS)


def _rule(label: str, color: bool) -> str:
    line = f"── {label} " + "─" * 40
    return f"\x1b[2m{line}\x1b[0m" if color else line


def _atomic_text(target: Path, text: str) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".kernel-", suffix=".txt", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
