"""Unit tests of the test bed script (no guest boot)."""
from __future__ import annotations

import argparse

import pytest

from testlib import load_vm_script

vm = load_vm_script()


@pytest.mark.parametrize("line", [
    "[   12.3] WARNING: CPU: 1 PID: 77 at kmod/core.c:10 init+0x10/0x20 [pmemlab]",
    "[    4.0] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[    5.1] Oops: 0002 [#1] PREEMPT SMP NOPTI",
    "[   30.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [pmemlab/0:120]",
    "[   40.0] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1",
    "[   50.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "[   50.0] rcu: INFO: rcu_sched self-detected stall on CPU",
    "[    6.0] BUG: scheduling while atomic: pmemlab/0/99/0x00000002",
    "[    7.0] general protection fault, probably for non-canonical address 0xdead: 0000 [#1]",
    "[    8.0] kernel BUG at mm/slub.c:100!",
])
def test_scan_log_catches_splats(line: str) -> None:
    assert vm.scan_log("[ 0.0] Linux version 6.1\n" + line) == [line]


@pytest.mark.parametrize("line", [
    "[    0.5] ACPI: Added _OSI(Module Device)",
    "[    1.0] nd_pmem namespace0.0: unable to guarantee persistence of writes",
    "[    2.0] pmemlab: loaded, target /dev/pmem0 (1040187392 bytes, node 0)",
    "[    3.0] platform regulatory.0: Direct firmware load for regulatory.db failed with error -2",
])
def test_scan_log_ignores_ordinary_lines(line: str) -> None:
    assert vm.scan_log(line) == []


def test_parse_size() -> None:
    assert vm.parse_size("1G") == 1 << 30
    assert vm.parse_size("256M") == 256 << 20
    assert vm.parse_size("4096") == 4096
    with pytest.raises(argparse.ArgumentTypeError):
        vm.parse_size("1.5G")


def test_default_kernel_is_installed() -> None:
    from pathlib import Path
    kernel = vm.default_kernel()
    assert Path(f"/boot/vmlinuz-{kernel}").exists()


def test_guest_kernels_cover_the_matrix() -> None:
    """make test boots every installed kernel: Debian 12's default first, 6.12 and 6.1-rt too."""
    import re
    kernels = vm.guest_kernels()
    assert kernels[0] == vm.default_kernel()
    assert len(set(kernels)) == len(kernels)
    assert any(re.fullmatch(r"6\.12\.\d+\+deb12-amd64", k) for k in kernels), kernels
    assert any(k.endswith("-rt-amd64") for k in kernels), kernels


def _junit(path, tests: int, failures: int, skipped: int) -> None:
    path.write_text(f'<testsuites><testsuite name="pytest" tests="{tests}" failures="{failures}" '
                    f'errors="0" skipped="{skipped}"/></testsuites>')


def test_summary_adds_every_report_and_failed_boot(tmp_path) -> None:
    import subprocess
    import sys
    from testlib import TOP
    summary = [sys.executable, str(TOP / "scripts" / "test-summary"), str(tmp_path)]
    _junit(tmp_path / "host.xml", 10, 0, 1)
    _junit(tmp_path / "guest-6.1.xml", 5, 0, 0)
    _junit(tmp_path / "guest-6.12.xml", 4, 0, 0)
    res = subprocess.run(summary, capture_output=True, text=True)
    assert res.returncode == 0
    assert res.stdout.splitlines()[-1] == "total: 18 passed, 0 failed, 1 skipped"
    (tmp_path / "vm-failed-6.12").touch()
    res = subprocess.run(summary, capture_output=True, text=True)
    assert res.returncode == 1
    assert res.stdout.splitlines()[-1] == "total: 18 passed, 1 failed, 1 skipped"
    for path in tmp_path.iterdir():
        path.unlink()
    res = subprocess.run(summary, capture_output=True, text=True)
    assert res.returncode == 1 and res.stdout.splitlines()[-1] == "total: 0 passed, 1 failed, 0 skipped"
