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
