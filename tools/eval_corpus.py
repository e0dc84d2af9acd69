"""Score tests/corpus (``make eval``): prints the README table and every miss."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from denpex.catalog import load_catalog
from denpex.evaluate.corpus import render_misses, render_table, score_corpus


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("corpus", nargs="?", default="tests/corpus", type=Path)
    ap.add_argument("--json", action="store_true", help="per-case results as JSON")
    args = ap.parse_args()
    score = score_corpus(load_catalog(), args.corpus)
    if args.json:
        print(json.dumps([{"case": c.name, "owner": c.doc["owner"], "want": c.expect.get("owner"),
                           "root_hit": c.root_hit, "rank_ok": c.rank_ok, "healthy_fp": c.healthy_fp}
                          for c in score.cases], indent=2))
        return 0
    print(render_table(score))
    misses = render_misses(score)
    if misses:
        print("\nMisses:\n" + misses)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into head
        sys.exit(0)
