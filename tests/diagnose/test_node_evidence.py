"""Node evidence: nvidia-smi -q sections, kernel logs joined to the job's hosts."""

from __future__ import annotations

from pathlib import Path

from denpex.catalog import Catalog
from tests.helpers import diagnose_files

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def test_nvidia_smi_values_belong_to_the_gpu_section_they_sit_in(catalog: Catalog, tmp_path: Path) -> None:
    text = (FIXTURES / "nvidia-smi-q-remap-failure.txt").read_text()
    doc = diagnose_files(catalog, tmp_path, {"nvidia-smi-q.txt": text})
    assert doc["owner"] == "gpu_hardware"
    assert doc["rma"]["candidate"] is True
    assert doc["affected"]["gpus"] == [{"pci_bus_id": "0000:3b:00.0",
                                        "uuid": "GPU-aaaaaaaa-2222-3333-4444-555555555555"}]


def test_correctable_ecc_alone_is_healthy(catalog: Catalog, tmp_path: Path) -> None:
    text = (FIXTURES / "nvidia-smi-q-remap-failure.txt").read_text().split("GPU 00000000:3B:00.0")[0]
    doc = diagnose_files(catalog, tmp_path, {"nvidia-smi-q.txt": text})
    assert doc["status"] == "healthy"


def test_kernel_log_takes_the_single_job_host(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {
        "train.log": "node9:77:77 [0] NCCL INFO comm 0x1 rank 0 nranks 1 cudaDev 0 busId 3b000 - Init COMPLETE\n",
        "dmesg.txt": "[ 812.1] NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n",
    })
    assert doc["root_cause"]["evidence"][0]["host"] == "node9"
    assert any("node9" in a.get("command", "") for a in doc["actions"])


HUNG_IN_UVM = ("[  721.028170] INFO: task nvc:[driver]:5403 blocked for more than 120 seconds.\n"
               "[  721.028346] Call Trace:\n"
               "[  721.028379]  [<ffffffff8170fca4>] __mutex_lock_slowpath+0xb4/0x130\n"
               "[  721.028422]  [<ffffffffa09c376e>] uvm_gpu_retain_by_uuid+0x1e/0x40 [nvidia_uvm]\n")


def test_hung_task_waiting_in_the_gpu_driver_is_the_drivers(catalog: Catalog, tmp_path: Path) -> None:
    # k8s-device-plugin#77 (tests/corpus/holdout127): nvidia-container-cli stuck in nvidia_uvm.
    doc = diagnose_files(catalog, tmp_path, {"dmesg.log": HUNG_IN_UVM})
    assert doc["owner"] == "driver"
    assert "hang_in_gpu_driver" in {r["rule"] for r in doc["rules_fired"]}


def test_hung_task_in_the_filesystem_stays_with_the_host(catalog: Catalog, tmp_path: Path) -> None:
    text = HUNG_IN_UVM.replace("uvm_gpu_retain_by_uuid+0x1e/0x40 [nvidia_uvm]", "nfs_wait_on_request+0x1e/0x40 [nfs]")
    doc = diagnose_files(catalog, tmp_path, {"dmesg.log": text})
    assert doc["owner"] == "host"


OOPS = ("BUG: unable to handle kernel NULL pointer dereference at 0000000000000078\n"
        "IP: [<ffffffff810a2c38>] pick_next_task_fair+0x6b8/0x820\n")


def test_oops_in_the_core_kernel_is_the_hosts(catalog: Catalog, tmp_path: Path) -> None:
    # node-problem-detector's kernel-log fixture (tests/corpus/holdout129).
    doc = diagnose_files(catalog, tmp_path, {"kern.log": OOPS})
    assert doc["owner"] == "host"
    assert "oops_in_core_kernel" in {r["rule"] for r in doc["rules_fired"]}


def test_oops_in_a_driver_module_names_no_host_fault(catalog: Catalog, tmp_path: Path) -> None:
    doc = diagnose_files(catalog, tmp_path, {"kern.log": OOPS.replace("pick_next_task_fair+0x6b8/0x820",
                                                                      "_nv012345rm+0x6b8/0x820 [nvidia]")})
    assert doc["owner"] == "driver"
