"""Diagnose: order the evidence in time, find the first failure, decide who must act."""

from denpex.diagnose.run import Diagnosis, diagnose_paths, diagnose_results

__all__ = ["Diagnosis", "diagnose_paths", "diagnose_results"]
