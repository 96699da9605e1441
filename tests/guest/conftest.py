"""Fixtures for tests that run inside the emulated-NVDIMM guest (started by scripts/vm)."""
from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kernel_log import KernelLog
from kmod_driver import Module
from testlib import load_vm_script

SYSFS = Path("/sys/kernel/pmemlab")
BAD_LOG = load_vm_script().BAD_LOG


_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    # A session-wide hook: mark only the items of this directory.
    if os.environ.get("PMEMLAB_VM") != "1":
        skip = pytest.mark.skip(reason="guest test: runs inside scripts/vm only")
        for item in items:
            if _HERE in Path(item.fspath).resolve().parents:
                item.add_marker(skip)


@pytest.fixture(autouse=True)
def clean_kernel_log() -> Iterator[None]:
    """Fail the test that caused an oops, WARN, lockup or stall, not just the whole boot."""
    if os.environ.get("PMEMLAB_VM") != "1":
        yield
        return
    with KernelLog() as log:
        yield
        new = log.lines()
    bad = [line for line in new if BAD_LOG.search(line)]
    assert not bad, "kernel log during this test:\n" + "\n".join(new[-60:])


@pytest.fixture(scope="session")
def ko() -> Path:
    path = os.environ.get("PMEMLAB_KO", "")
    assert path and Path(path).exists(), f"module not built for this kernel (PMEMLAB_KO={path!r})"
    return Path(path)


@pytest.fixture(scope="session")
def pmem_dev() -> str:
    devs = os.environ.get("PMEMLAB_PMEM", "").split()
    assert devs, "no fsdax namespace on the emulated NVDIMM"
    return devs[0]


@pytest.fixture(scope="session")
def dram_pmem_dev() -> str:
    devs = os.environ.get("PMEMLAB_PMEM_DRAM", "").split()
    if not devs:
        pytest.skip("guest booted without memmap= DRAM-emulated pmem")
    return devs[0]


def module_loaded() -> bool:
    return Path("/sys/module/pmemlab").exists()


@contextmanager
def loaded(ko: Path, **params: str) -> Iterator[Path]:
    """insmod with params, yield the sysfs directory, rmmod on the way out."""
    if module_loaded():
        subprocess.run(["rmmod", "pmemlab"], check=True)
    args = [f"{k}={v}" for k, v in params.items()]
    res = subprocess.run(["insmod", str(ko), *args], capture_output=True, text=True)
    assert res.returncode == 0, f"insmod {' '.join(args)} failed: {res.stderr.strip()}"
    try:
        yield SYSFS
    finally:
        if module_loaded():
            subprocess.run(["rmmod", "pmemlab"], check=True)


@pytest.fixture(scope="session")
def module(ko: Path):
    """Factory: `with module(target=...) as sysfs:` (stateless, so fixtures of any scope use it)."""
    def factory(**params: str):
        return loaded(ko, **params)
    return factory


@pytest.fixture(scope="module")
def mod(ko: Path, pmem_dev: str) -> Iterator[Module]:
    """The module loaded on the pmem namespace for one test file (kmod_driver.Module over its
    sysfs directory), unloaded after the file's last test."""
    with loaded(ko, target=pmem_dev):
        yield Module(SYSFS)


_shared_load: tuple[int, tuple] | None = None  # (sysfs inode, params) of the load shared_module made


@pytest.fixture
def shared_module(ko: Path):
    """Factory like `module` for tests that need no fresh load, as each leaves the module in the
    state the next one expects (the bad-value tests write values it refuses, then run with the same
    parameters each time): the load is kept for the next such test with the same parameters, as
    long as nobody unloaded or reloaded the module in between (told by its sysfs inode)."""
    @contextmanager
    def factory(**params: str) -> Iterator[Path]:
        global _shared_load
        key = tuple(sorted(params.items()))
        mine = _shared_load is not None and module_loaded() and \
            _shared_load == (os.stat("/sys/module/pmemlab").st_ino, key)
        if not mine:
            if module_loaded():
                subprocess.run(["rmmod", "pmemlab"], check=True)
            args = [f"{k}={v}" for k, v in params.items()]
            res = subprocess.run(["insmod", str(ko), *args], capture_output=True, text=True)
            assert res.returncode == 0, f"insmod {' '.join(args)} failed: {res.stderr.strip()}"
            _shared_load = (os.stat("/sys/module/pmemlab").st_ino, key)
        yield SYSFS
    return factory
