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
