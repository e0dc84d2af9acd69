"""``denpex run -- CMD``: run a job unchanged, keep a bounded copy of its output, explain its death.

The wrapper is a relay first and a diagnostician second. While the child runs it only copies
bytes (``relay``), forwards signals (``signals``), keeps a bounded capture (``capture``) and
watches for silence (``stall``). Everything that can be slow or fail (the catalog, the
kernel log, the diagnosis) runs after the child has exited (``postmortem``), and any failure
of Denpex itself costs one warning line on stderr, never the job's output or exit status.
"""

from denpex.collect.wrapper.options import WrapperOptions, parse_duration, parse_size
from denpex.collect.wrapper.runner import run_wrapped

__all__ = ["WrapperOptions", "parse_duration", "parse_size", "run_wrapped"]
