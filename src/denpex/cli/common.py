"""What several commands share: loading the catalog with a one-line error instead of a traceback."""

from __future__ import annotations

import sys

from denpex.catalog import Catalog, CatalogError, load_catalog


def catalog_or_report() -> Catalog | None:
    """The catalog, or None after printing why it cannot be used (the caller exits 2)."""
    try:
        return load_catalog()
    except CatalogError as exc:
        print(f"denpex: catalog error: {exc}", file=sys.stderr)
        return None
