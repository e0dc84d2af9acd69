"""The local incident store: incident files, their SQLite index, lifecycle, GPU history, RMA packets."""

from denpex.store.gpus import GpuHistory, RmaVerdict, build_histories, find_gpu
from denpex.store.layout import StoreError, denpex_home
from denpex.store.lifecycle import FindingState, evaluate
from denpex.store.records import IncidentRecord
from denpex.store.store import AddResult, Store

__all__ = ["AddResult", "FindingState", "GpuHistory", "IncidentRecord", "RmaVerdict", "Store", "StoreError",
           "build_histories", "denpex_home", "evaluate", "find_gpu"]
