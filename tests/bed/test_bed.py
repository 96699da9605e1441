"""Tests of the test bed itself: a guest whose module fails to load, or whose kernel log shows a
WARN, must fail the run. A throwaway module is built in a temporary directory against the guest
kernel's headers; each test boots one guest without NVDIMMs (the namespace set-up is not what
these judge, and every other guest test goes through it), about 27 s under TCG."""
from __future__ import annotations

import fcntl
import os
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from testlib import TOP, load_vm_script

vm = load_vm_script()

THROWAWAY_C = textwrap.dedent("""\
    // SPDX-License-Identifier: GPL-2.0
    #include <linux/module.h>
    #include <linux/string.h>
    #include <linux/bug.h>

    static char *mode = "ok";
    module_param(mode, charp, 0444);

    static int __init bedtest_init(void)
    {
    \tif (!strcmp(mode, "fail"))
    \t\treturn -ENODEV;
    \tWARN(!strcmp(mode, "warn"), "bedtest: deliberate warning\\n");
    \treturn 0;
    }

    static void __exit bedtest_exit(void)
    {
    }

    module_init(bedtest_init);
    module_exit(bedtest_exit);
    MODULE_LICENSE("GPL");
    MODULE_DESCRIPTION("pmemlab test-bed self-test: fails to load or warns on request");
""")


@pytest.fixture(scope="module")
def throwaway_ko(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("bedtest")
    (src / "bedtest.c").write_text(THROWAWAY_C)
    (src / "Kbuild").write_text("obj-m := bedtest.o\n")
    kdir = Path(f"/lib/modules/{vm.default_kernel()}/build")
    res = subprocess.run(["make", "-C", str(kdir), f"M={src}", "modules"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return src / "bedtest.ko"


@pytest.fixture(scope="module")
def bed_env() -> Iterator[dict[str, str]]:
    """With PMEMLAB_VM_LOCK set, hold the lock for all three boots (one wait, not three) and run
    the beds without it."""
    env = dict(os.environ)
    lock_path = env.pop("PMEMLAB_VM_LOCK", "")
    if not lock_path:
        yield env
        return
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield env


def run_bed(*cmd: str, tmp_path: Path, env: dict[str, str]) -> tuple[int, str, str]:
    verdict = tmp_path / "verdict"
    res = subprocess.run([str(TOP / "scripts" / "vm"), "--no-module", "--nvdimms", "0", "--verdict", str(verdict),
                          "--", *cmd], capture_output=True, text=True, cwd=TOP, timeout=900, env=env)
    return res.returncode, res.stderr, verdict.read_text() if verdict.exists() else "<no verdict>"


def test_clean_guest_passes(throwaway_ko: Path, tmp_path: Path, bed_env: dict[str, str]) -> None:
    rc, err, verdict = run_bed("sh", "-c", f"insmod {throwaway_ko} && rmmod bedtest", tmp_path=tmp_path, env=bed_env)
    assert rc == 0, err
    assert verdict == ""
    # the guest's root over virtio-fs (install-deps' virtiofsd): over 9p a guest's Python starts
    # 2.4 times slower and make test leaves its 30 minutes; the run would pass, only this says so
    assert "vm: root file system virtiofs" in err, err[-2000:]


def test_warn_in_guest_log_fails_the_run(throwaway_ko: Path, tmp_path: Path, bed_env: dict[str, str]) -> None:
    # The guest command itself succeeds; only the kernel log says something went wrong.
    rc, err, verdict = run_bed("sh", "-c", f"insmod {throwaway_ko} mode=warn && rmmod bedtest",
                               tmp_path=tmp_path, env=bed_env)
    assert rc != 0
    assert "WARNING" in verdict and "bedtest" in err


def test_module_that_fails_to_load_fails_the_run(throwaway_ko: Path, tmp_path: Path,
                                                  bed_env: dict[str, str]) -> None:
    rc, err, verdict = run_bed("insmod", str(throwaway_ko), "mode=fail", tmp_path=tmp_path, env=bed_env)
    assert rc != 0
    assert verdict == ""  # the failure is the command's exit status, not a log splat
