"""Tests of the test bed itself: a guest whose module fails to load, or whose kernel log shows a
WARN, must fail the run. Each test builds a throwaway module in a temporary directory against
the guest kernel's headers and boots one guest (about 25 s under TCG)."""
from __future__ import annotations

import subprocess
import textwrap
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


def run_bed(*cmd: str, tmp_path: Path) -> tuple[int, str, str]:
    verdict = tmp_path / "verdict"
    res = subprocess.run([str(TOP / "scripts" / "vm"), "--no-module", "--verdict", str(verdict), "--", *cmd],
                         capture_output=True, text=True, cwd=TOP, timeout=900)
    return res.returncode, res.stderr, verdict.read_text() if verdict.exists() else "<no verdict>"


def test_clean_guest_passes(throwaway_ko: Path, tmp_path: Path) -> None:
    rc, err, verdict = run_bed("sh", "-c", f"insmod {throwaway_ko} && rmmod bedtest", tmp_path=tmp_path)
    assert rc == 0, err
    assert verdict == ""


def test_warn_in_guest_log_fails_the_run(throwaway_ko: Path, tmp_path: Path) -> None:
    # The guest command itself succeeds; only the kernel log says something went wrong.
    rc, err, verdict = run_bed("sh", "-c", f"insmod {throwaway_ko} mode=warn && rmmod bedtest",
                               tmp_path=tmp_path)
    assert rc != 0
    assert "WARNING" in verdict and "bedtest" in err


def test_module_that_fails_to_load_fails_the_run(throwaway_ko: Path, tmp_path: Path) -> None:
    rc, err, verdict = run_bed("insmod", str(throwaway_ko), "mode=fail", tmp_path=tmp_path)
    assert rc != 0
    assert verdict == ""  # the failure is the command's exit status, not a log splat
