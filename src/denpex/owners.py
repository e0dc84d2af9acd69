"""The owner classes of the shared incident contract (shared/spec/README.md).

Kept as a constant so that the core never needs the spec folder at run time; a test checks
that this list and the schema's enum agree.
"""

OWNERS: tuple[str, ...] = (
    "user_code",
    "framework",
    "capacity",
    "gpu_hardware",
    "driver",
    "interconnect",
    "host",
    "storage",
    "scheduler",
    "unknown",
    "none",
)
