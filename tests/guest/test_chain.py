"""The first guest test: built module, booted guest, fsdax namespace with dax=1, insmod against
it, read the module's sysfs directory, rmmod, nothing bad in the kernel log."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

# The module builds and loads on every kernel; make check runs these too.
pytestmark = [pytest.mark.kernel_matrix, pytest.mark.check]


def test_namespace_is_fsdax_with_dax(pmem_dev: str) -> None:
    name = Path(pmem_dev).name
    assert Path(f"/sys/block/{name}/queue/dax").read_text().strip() == "1"
    namespaces = json.loads(subprocess.run(["ndctl", "list", "-N"], capture_output=True, text=True,
                                           check=True).stdout)
    if isinstance(namespaces, dict):
        namespaces = [namespaces]
    modes = {ns["blockdev"]: ns["mode"] for ns in namespaces}
    assert modes.get(name) == "fsdax"


def test_module_matches_guest_kernel(ko: Path) -> None:
    info = subprocess.run(["modinfo", "-F", "vermagic", str(ko)], capture_output=True, text=True, check=True)
    release = subprocess.run(["uname", "-r"], capture_output=True, text=True, check=True).stdout.strip()
    assert info.stdout.split()[0] == release


def test_insmod_sysfs_rmmod(module, pmem_dev: str) -> None:
    with module(target=pmem_dev) as sysfs:
        assert sysfs.is_dir()
        entries = {p.name for p in sysfs.iterdir()}
        assert {"version", "target", "target_size", "state"} <= entries
        assert (sysfs / "target").read_text().strip() == pmem_dev
        size = int((sysfs / "target_size").read_text())
        blockdev_size = int(subprocess.run(["blockdev", "--getsize64", pmem_dev], capture_output=True,
                                           text=True, check=True).stdout)
        assert 0 < size <= blockdev_size
        assert (sysfs / "state").read_text().strip() == "idle"
    assert not Path("/sys/module/pmemlab").exists()
