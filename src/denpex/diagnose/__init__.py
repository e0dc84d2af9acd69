"""Diagnose: order the evidence in time, find the first failure, decide who must act."""

from denpex.diagnose.model import Diagnosis
from denpex.diagnose.run import diagnose_paths, diagnose_results

__all__ = ["Diagnosis", "diagnose_paths", "diagnose_results"]
