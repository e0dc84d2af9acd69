"""Who must act: the rules that move the owner away from the root signature's own.

A signature names the usual owner of its line; the evidence around the root often says
better (the frame that raised a generic exception, the engine it ran in, the driver module a
hung task waits in, the Xid a line names as its cause). Each rule reads the diagnosis,
records why it changed the owner in ``diag.fired``, and leaves it alone otherwise.
``decide_owner`` runs them in order; a later rule sees what an earlier one decided.
"""

from __future__ import annotations

from denpex.diagnose.findings import Finding, exit_hang_after
from denpex.diagnose.model import Diagnosis
from denpex.diagnose.timeline import seconds_between
from denpex.scan.frames import owner_of_frame


def decide_owner(diag: Diagnosis) -> None:
    """Apply the owner rules to a diagnosis whose root and initiating rank are chosen."""
    many_gpus_same_xid(diag)
    # Before the packaged-engine rule: an exception raised in an engine's own source checkout
    # reads as the job's code, which that rule then gives to the engine.
    owner_from_raising_frame(diag)
    inside_packaged_engine(diag)
    owner_from_named_cause(diag)
    exit_hang(diag)
    hang_in_gpu_driver(diag)
    first_collective_timeout(diag)


MANY_GPUS = 3
APP_XIDS = {"13", "31", "43", "45"}


def owner_from_named_cause(diag: Diagnosis) -> None:
    """A line that names the Xid it follows (Xid 45 "caused by previous Xid 149") takes that Xid's owner."""
    root = diag.root
    if root is None:
        return
    code = root.event.fields.get("caused_by_xid")
    cause = diag.catalog.get(f"xid.{code}") if code else None
    if cause is None or cause.owner == diag.owner:
        return
    diag.fired.append(("owner_from_named_cause",
                       f"the root line names Xid {code} as its cause: owner {diag.owner} -> {cause.owner}", [root]))
    diag.owner = cause.owner


# Faults that mean "the code that ran was wrong" without naming a setting: in a script they
# are the user's, inside a packaged inference engine they are the engine's.
ENGINE_CODE_FAULTS = frozenset({"python_exception", "device_assert", "gpu_app_fault", "device_placement",
                                "shape_mismatch"})
ENGINE_NATIVE_CRASHES = frozenset({"native_crash"})


def owner_from_raising_frame(diag: Diagnosis) -> None:
    """A generic exception takes the owner of the code that raised it (``frames``).

    The signature's own owner (``unknown``, or a class's usual owner) is what stands when the
    traceback above the exception is not in the evidence.
    """
    root = diag.choice.root
    if root is None or not root.sig.frame_owner or diag.owner != root.sig.owner:
        return
    path = root.event.fields.get("raised_in")
    if not path:
        return
    owner = owner_of_frame(path)
    where = "an installed library" if owner == "framework" else "the job's own code"
    change = f"owner {owner}" if owner == diag.owner else f"owner {diag.owner} -> {owner}"
    diag.fired.append(("raising_frame", f"the exception was raised in {where} ({path}): {change}", [root]))
    diag.owner = owner


def inside_packaged_engine(diag: Diagnosis) -> None:
    """A code fault inside vLLM, SGLang, TGI, llama.cpp, ComfyUI... is the engine's, not the user's.

    The user of an inference engine configures it; the kernels and Python that ran are the
    engine's (or its extensions'). Faults whose message names a setting (heads not divisible
    by the tensor-parallel size, too long a context) have categories of their own and stay
    with the user.
    """
    root = diag.root
    if root is None:
        return
    code_fault = diag.owner == "user_code" and root.sig.category in ENGINE_CODE_FAULTS
    # A native crash that names no library: in an engine's process it is the engine's native
    # code (its kernels and extensions) that crashed.
    crash = diag.owner == "unknown" and root.sig.category in ENGINE_NATIVE_CRASHES
    if not (code_fault or crash):
        return
    engine = next((f for f in diag.findings if f.sig.category == "serving_engine"), None)
    if engine is None:
        return
    diag.fired.append(("inside_packaged_engine",
                       f"{root.sig.id} was raised inside a packaged engine ({engine.sig.title}): "
                       f"owner {diag.owner} -> framework", [root, engine]))
    diag.owner = "framework"


FIRST_COLLECTIVES = 2  # a timeout at one of the job's first collectives: a rank was not there yet


def first_collective_timeout(diag: Diagnosis) -> None:
    """A collective timeout at the job's first or second collective is the job's to look at.

    Nothing has run yet that could have broken: the other ranks waited for one that was still
    preparing (tokenizing a dataset, scanning labels, loading a model on rank 0 only), started
    late, or called a different first collective. Each of those is the job's doing; the fix is
    a longer timeout or moving the work. A network that cannot carry traffic fails earlier, at
    communicator set-up, with errors of its own.
    """
    root = diag.root
    if root is None or root.sig.category != "nccl_timeout" or diag.owner != "unknown":
        return
    seq = root.event.fields.get("seq", "")
    if not seq.isdigit() or int(seq) > FIRST_COLLECTIVES:
        return
    why = (f"the collective that timed out is the job's collective #{seq}: a rank was still preparing or never "
           "arrived; owner unknown -> user_code")
    diag.fired.append(("first_collective_timeout", why, [root]))
    diag.owner = "user_code"


HANG_CATEGORIES = frozenset({"hung_task", "kernel_hang"})
OOPS_CATEGORIES = frozenset({"kernel_bug"})
HANG_TRACE_LINES = 80  # how far below a hang report its call trace may run


def hang_in_gpu_driver(diag: Diagnosis) -> None:
    """A kernel hang whose call trace runs through the GPU driver is the driver's to look at first.

    The hung-task and soft-lockup detectors name the stuck task, not the cause; the frames
    printed under them do. A task waiting in nvidia_uvm or spinning in amdgpu waits on the GPU
    driver (or the GPU behind it), not on the host's filesystems or memory.
    """
    root = diag.root
    if root is None or root.sig.category not in HANG_CATEGORIES | OOPS_CATEGORIES:
        return
    if root.sig.category in HANG_CATEGORIES and diag.owner != "host":
        return
    src, line = root.event.source_index, root.event.line_no

    def below(category: str) -> Finding | None:
        return next((f for f in diag.findings if f.sig.category == category and f.event.source_index == src
                     and 0 < f.event.line_no - line <= HANG_TRACE_LINES), None)

    frame = below("driver_stack")
    if frame is not None:
        diag.fired.append(("hang_in_gpu_driver", f"the call trace under {root.sig.id} runs through the GPU driver "
                                                 f"(line {frame.event.line_no}): owner {diag.owner} -> driver",
                           [root, frame]))
        diag.owner = "driver"
        return
    core = below("kernel_ip_core") if root.sig.category in OOPS_CATEGORIES and diag.owner == "unknown" else None
    if core is not None:
        why = (f"the oops's instruction pointer is in the core kernel (line {core.event.line_no}), no driver "
               "module: owner unknown -> host")
        diag.fired.append(("oops_in_core_kernel", why, [root, core]))
        diag.owner = "host"


def exit_hang(diag: Diagnosis) -> None:
    """A time limit long after the run said it finished: the process hung on its way out.

    The training loop is done; what kept the process alive past it is teardown (process
    groups destroyed, profilers flushed, loader workers joined), the framework's part of the
    run rather than the scheduler's, which only ended the allocation it was owed.
    """
    root = diag.root
    if root is None or root.sig.category != "time_limit":
        return
    done = [f.event for f in diag.findings
            if f.event.source_index == root.event.source_index and "completed" in f.event.fields]
    finished = exit_hang_after(root, done)
    if finished is None:
        return
    mins = (seconds_between(finished, root.event) or 0.0) / 60
    diag.fired.append(("exit_hang", f"the run said it finished {mins:.0f} min before the time limit ended the job: "
                                    f"it hung on exit; owner {diag.owner} -> framework", [root]))
    diag.owner = "framework"


def many_gpus_same_xid(diag: Diagnosis) -> None:
    """The same Xid on many GPUs at once points at the application or a peer, not at every GPU."""
    root = diag.root
    if root is None or "xid" not in root.event.fields:
        return
    code = root.event.fields["xid"]
    gpus: set[tuple[str | None, str]] = set()
    same: list[Finding] = []
    for f in diag.failures:
        if f.event.fields.get("xid") != code or not f.event.pci_bus_id:
            continue
        secs = seconds_between(root.event, f.event)
        if secs is None or abs(secs) <= 120:
            gpus.add((f.event.host, f.event.pci_bus_id))
            same.append(f)
    if len(gpus) < MANY_GPUS:
        return
    new_owner = "user_code" if code in APP_XIDS else "unknown"
    if diag.owner != new_owner:
        diag.fired.append(("same_xid_many_gpus",
                           f"Xid {code} on {len(gpus)} GPUs at once: the application or a peer, not each GPU "
                           f"(owner {diag.owner} -> {new_owner})", same[:5]))
        diag.owner = new_owner
    diag.missing.append("which process ran on the affected GPUs (application logs of the same time)")
