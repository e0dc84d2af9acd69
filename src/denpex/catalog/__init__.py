"""The signature catalog: rules as data (TOML files under ``rules/``), loaded and validated here."""

from denpex.catalog.loader import Catalog, CatalogError, load_catalog
from denpex.catalog.model import Signature, Step

__all__ = ["Catalog", "CatalogError", "Signature", "Step", "load_catalog"]
