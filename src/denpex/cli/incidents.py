"""``denpex incidents list|show|export|add|clear``: the local incident store.

Incidents are the JSON files in ``$DENPEX_HOME/incidents/`` (default ``~/.denpex``), whoever
wrote them: ``denpex diagnose --out``, the wrapper, a copy from another node. The helpers at
the bottom are shared by the other store commands (gpus, rma, metrics, exporter).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from denpex.catalog import Catalog, CatalogError, load_catalog
from denpex.catalog.loader import catalog_dirs
from denpex.report.json_report import render_json, write_incident
from denpex.report.markdown import render_markdown
from denpex.report.text import render_text
from denpex.store import Store, StoreError
from denpex.store.lifecycle import FindingState
from denpex.store.records import IncidentRecord, iso_utc
from denpex.store.view import Snapshot, snapshot

EXAMPLES = """examples:
  denpex diagnose job/ --out ~/.denpex/incidents     # any producer writes into the store
  denpex incidents list                              # newest last; open findings marked
  denpex incidents list --status open --owner gpu_hardware --since 30d
  denpex incidents list --gpu gpu-node07/0000:41:00.0 --format json
  denpex incidents show dpx-f7b4                      # a unique prefix is enough
  denpex incidents export --out /tmp/for-node12       # incident files another node can read
  denpex incidents add incoming/*.json
  denpex incidents clear dpx-f7b4 --reason "GPU reseated, dcgmi diag -r 3 passed"
  denpex incidents clear dpx-9a1c --reason "fault injection test" --exclude

The store is $DENPEX_HOME (default ~/.denpex); --home overrides it.
exit codes: 0 ok, 2 usage error, unknown incident or unusable store
"""

EXIT_OK, EXIT_FAILURE, EXIT_USAGE = 0, 1, 2


def register(sub: Any) -> None:
    p = sub.add_parser("incidents", help="list, show, export, add or clear stored incidents",
                       description="The local incident store: history of diagnosed failures on this node.",
                       epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    ssub = p.add_subparsers(dest="action", metavar="ACTION", required=True)
    lp = ssub.add_parser("list", help="one line per incident, oldest first")
    add_home(lp)
    _add_filters(lp)
    lp.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    sp = ssub.add_parser("show", help="one incident with its lifecycle state")
    add_home(sp)
    sp.add_argument("id", help="incident id or a unique prefix")
    sp.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    ep = ssub.add_parser("export", help="incidents as JSON lines on stdout, or as files into --out DIR")
    add_home(ep)
    _add_filters(ep)
    ep.add_argument("--out", type=Path, metavar="DIR", help="write one <id>.json per incident into DIR")
    ap = ssub.add_parser("add", help="copy incident JSON files into the store (validated; an id is stored once)")
    add_home(ap)
    ap.add_argument("files", nargs="+", type=Path, metavar="FILE")
    cp = ssub.add_parser("clear", help="close a finding by hand, with a reason (recorded)")
    add_home(cp)
    cp.add_argument("id", help="incident id or a unique prefix")
    cp.add_argument("--reason", required=True, help="why it is resolved, e.g. what was run and passed")
    cp.add_argument("--by", help="who clears it (default: the login name)")
    cp.add_argument("--exclude", action="store_true",
                    help="the incident is not evidence against the hardware (test injection, misattributed, "
                         "board since replaced): leave it out of GPU RMA candidacy")
    p.set_defaults(func=run)


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--status", choices=("open", "closed", "all"), default="all",
                   help="open findings, closed ones (cleared or healthy), or all (default)")
    p.add_argument("--owner", help="only this owner class, e.g. gpu_hardware")
    p.add_argument("--signature", help="only this root signature id, e.g. xid.79")
    p.add_argument("--gpu", help="only incidents naming this GPU (UUID, host/PCI or PCI id)")
    p.add_argument("--since", help="only incidents observed since: 30d, 12h, 90m or an ISO date")
    p.add_argument("--limit", type=int, help="only the newest N")


def run(args: argparse.Namespace) -> int:
    try:
        with open_store(args) as store:
            catalog = store_catalog()
            if args.action == "add":
                return _add(store, args.files)
            if args.action == "clear":
                return _clear(store, catalog, args)
            snap = snapshot(store, catalog)
            warn_bad_files(snap)
            if args.action == "show":
                return _show(store, snap, args)
            rows = select(snap, args)
            if args.action == "export":
                return _export(store, rows, args.out)
            sys.stdout.write(render_list(rows, snap, args.format))
            print(f"{len(rows)} incident(s), {sum(1 for r in rows if snap.states[r.id].open)} open",
                  file=sys.stderr)
            return EXIT_OK
    except (StoreError, CatalogError, ValueError) as exc:
        print(f"denpex: {exc}", file=sys.stderr)
        return EXIT_USAGE


def _add(store: Store, files: list[Path]) -> int:
    rc = EXIT_OK
    for f in files:
        try:
            res = store.add_file(f)
        except StoreError as exc:
            print(f"denpex: {exc}", file=sys.stderr)
            rc = EXIT_USAGE
            continue
        print(f"{'stored' if res.created else 'already stored'} {res.id}")
    return rc


def _clear(store: Store, catalog: Catalog, args: argparse.Namespace) -> int:
    data = store.clear(args.id, args.reason, by=args.by, exclude=args.exclude)
    note = " (left out of RMA candidacy)" if data["exclude"] else ""
    print(f"cleared {data['incident_id']} by {data['by']} at {data['at']}: {data['reason']}{note}")
    return EXIT_OK


def _show(store: Store, snap: Snapshot, args: argparse.Namespace) -> int:
    path, rec = store.find(args.id)
    doc = store.document(rec.id)
    st = snap.states[rec.id]
    doc["lifecycle"] = lifecycle_dict(st)
    if args.format == "json":
        sys.stdout.write(render_json(doc))
    elif args.format == "markdown":
        sys.stdout.write(render_markdown(doc) + f"\n**Lifecycle:** {_state_word(st)}: {st.reason}\n")
    else:
        sys.stdout.write(render_text(doc, color=False))
        sys.stdout.write(f"\nLifecycle\n  {_state_word(st)}: {st.reason}\n  file: {path}\n")
        gpus = sorted({e.gpu_key for e in rec.events})
        if gpus:
            sys.stdout.write("  GPUs: " + ", ".join(gpus) + "  (history: denpex gpus GPU)\n")
    return EXIT_OK


def _export(store: Store, rows: list[IncidentRecord], out: Path | None) -> int:
    for rec in rows:
        doc = store.document(rec.id)
        if out is None:
            sys.stdout.write(json.dumps(doc, sort_keys=True, ensure_ascii=False) + "\n")
        else:
            try:
                write_incident(doc, out)
            except OSError as exc:
                raise StoreError(f"cannot write into {out}: {exc.strerror or exc}") from exc
    if out is not None:
        print(f"exported {len(rows)} incident(s) to {out}", file=sys.stderr)
    return EXIT_OK


# -- shared by the store commands -----------------------------------------------------------------

def add_home(p: argparse.ArgumentParser) -> None:
    p.add_argument("--home", metavar="DIR", help="the store (default: $DENPEX_HOME, else ~/.denpex)")


def open_store(args: argparse.Namespace) -> Store:
    return Store(getattr(args, "home", None))


_CATALOGS: dict[tuple[str, ...], Catalog] = {}


def store_catalog() -> Catalog:
    """The catalog, loaded once per process and catalog path (the exporter and tests call often)."""
    key = tuple(str(d) for d in catalog_dirs())
    if key not in _CATALOGS:
        _CATALOGS[key] = load_catalog()
    return _CATALOGS[key]


def warn_bad_files(snap: Snapshot) -> None:
    if snap.bad_files:
        name, err = snap.bad_files[0]
        more = f" (and {len(snap.bad_files) - 1} more)" if len(snap.bad_files) > 1 else ""
        print(f"denpex: warning: skipped {name}: {err}{more}", file=sys.stderr)


_SINCE = re.compile(r"^(\d+)\s*([dhm])$")


def parse_since(value: str, now: float) -> float:
    m = _SINCE.match(value.strip())
    if m:
        return now - int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]
    from denpex.store.records import parse_time

    ts = parse_time(value.strip())
    if ts is None:
        raise ValueError(f"--since {value!r}: expected 30d, 12h, 90m or an ISO date")
    return ts


def select(snap: Snapshot, args: argparse.Namespace) -> list[IncidentRecord]:
    rows = snap.records
    if args.status != "all":
        want_open = args.status == "open"
        rows = [r for r in rows if snap.states[r.id].open == want_open]
    if args.owner:
        rows = [r for r in rows if r.owner == args.owner]
    if args.signature:
        rows = [r for r in rows if r.signature == args.signature]
    if args.gpu:
        from denpex.store.gpus import find_gpu

        found = find_gpu(snap.gpus, args.gpu)
        if not found:
            raise StoreError(f"no GPU {args.gpu!r} in the store's history")
        ids = {i for g in found for i in g.incidents}
        rows = [r for r in rows if r.id in ids]
    if args.since:
        cut = parse_since(args.since, snap.now if snap.now else time.time())
        rows = [r for r in rows if r.observed_ts >= cut]
    if args.limit is not None:
        rows = rows[-args.limit:] if args.limit > 0 else []
    return rows


def lifecycle_dict(st: FindingState) -> dict[str, Any]:
    return {"open": st.open, "state": st.how, "reason": st.reason, "cleared_at": st.cleared_at,
            "excluded": st.excluded}


def _state_word(st: FindingState) -> str:
    return "open" if st.open else ("healthy" if st.how == "healthy" else "closed")


def render_list(rows: list[IncidentRecord], snap: Snapshot, fmt: str) -> str:
    if fmt == "json":
        items = [{"id": r.id, "observed_at": iso_utc(r.observed_ts), "generated_at": r.generated_at,
                  "status": r.status, "owner": r.owner, "category": r.category, "signature_id": r.signature,
                  "title": r.title, "hosts": r.hosts, "gpus": sorted({e.gpu_key for e in r.events}),
                  "rma_candidate": r.rma_candidate, "lifecycle": lifecycle_dict(snap.states[r.id])} for r in rows]
        return json.dumps(items, indent=2, ensure_ascii=False) + "\n"
    if fmt == "markdown":
        out = ["| id | observed | state | owner | signature | title |", "|---|---|---|---|---|---|"]
        for r in rows:
            title = r.title.replace("|", "\\|")
            out.append(f"| {r.id} | {iso_utc(r.observed_ts)} | {_state_word(snap.states[r.id])} | {r.owner} | "
                       f"{r.signature or ''} | {title} |")
        return "\n".join(out) + "\n"
    out = [f"{'ID':24} {'OBSERVED':20} {'STATE':7} {'OWNER':13} {'SIGNATURE':32} TITLE"]
    for r in rows:
        out.append(f"{r.id:24} {iso_utc(r.observed_ts) or '':20} {_state_word(snap.states[r.id]):7} {r.owner:13} "
                   f"{(r.signature or '-'):32} {r.title}")
    return "\n".join(out) + "\n"
