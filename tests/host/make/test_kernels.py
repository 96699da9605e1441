"""The one list of kernels (scripts/kernels.list, read through scripts/kernels) and what follows
from it: the README's kernel table, where a kernel is found (host or build root), the build
roots' own helper, and make test's failure for a listed kernel it did not boot."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from testlib import TOP, load_script

kernels = load_script("kernels")
KERNELS = TOP / "scripts" / "kernels"
BUILD_ROOT = TOP / "scripts" / "build-root"


def readme_kernel_table() -> list[list[str]]:
    text = (TOP / "README.md").read_text()
    section = text.split("### Kernels", 1)[1].split("\n#", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows[2:]]


def test_readme_kernel_table_is_the_list() -> None:
    """The README names the five kernels of the list, in its order, and says what make test runs
    on each as run-tests does it: everything on the first, two NUMA nodes on the last."""
    rows = readme_kernel_table()
    assert [r[0] for r in rows] == [k.name for k in kernels.load()]
    assert "every guest test" in rows[0][-1]
    assert all("kernel matrix" in r[-1] for r in rows[1:])
    assert "two NUMA nodes" in rows[-1][-1] and "two_nodes" in rows[-1][-1]
    for row, k in zip(rows, kernels.load()):
        assert (" build root" in row[3]) == (k.root is not None), row
        assert row[2] == k.suites[-1], row  # where the image comes from: the last suite listed


@pytest.mark.parametrize("name,flavour,release,ok", [
    ("6.1", "amd64", "6.1.0-56-amd64", True),
    ("6.1", "amd64", "6.1.0-56-rt-amd64", False),
    ("6.1-rt", "rt-amd64", "6.1.0-56-rt-amd64", True),
    ("6.1", "amd64", "6.12.95+deb12-amd64", False),
    ("6.12", "amd64", "6.12.95+deb12-amd64", True),
    ("5.10", "amd64", "5.10.0-46-amd64", True),
    ("7.2", "amd64", "7.2.13+deb14-amd64", True),
    ("7.2", "amd64", "7.20.1+deb14-amd64", False),
    ("7.2", "amd64", "7.2.13+deb14-cloud-amd64", False),
])
def test_a_release_belongs_to_one_kernel_of_the_list(name: str, flavour: str, release: str, ok: bool) -> None:
    assert kernels.Kernel(name, ("sid",), flavour, None).matches(release) is ok


def test_newest_release_wins_in_version_order(tmp_path: Path, monkeypatch) -> None:
    """Two ABIs of one kernel in a root: the newer by version (56 after 9), and only with headers."""
    monkeypatch.setattr(kernels, "ROOTS", tmp_path)
    root = tmp_path / "bullseye"
    for abi in ("9", "56", "60"):
        rel = f"5.10.0-{abi}-amd64"
        (root / "boot").mkdir(parents=True, exist_ok=True)
        (root / "boot" / f"vmlinuz-{rel}").write_bytes(b"\0")
        if abi != "60":  # no headers: not a kernel the bed can build for
            (root / "lib" / "modules" / rel / "build").mkdir(parents=True)
            (root / "lib" / "modules" / rel / "build" / "Makefile").write_text("\n")
    k = kernels.Kernel("5.10", ("bullseye",), "amd64", "bullseye")
    assert k.installed() == ["5.10.0-9-amd64", "5.10.0-56-amd64"]
    assert k.release == "5.10.0-56-amd64"
    monkeypatch.setattr(kernels, "load", lambda path=None: [k])
    image, kdir, where = kernels.locate("5.10.0-56-amd64")
    assert (image, kdir, where) == (root / "boot" / "vmlinuz-5.10.0-56-amd64",
                                    root / "lib" / "modules" / "5.10.0-56-amd64" / "build", root)
    assert kernels.locate("5.10.0-99-amd64") is None


def test_a_bad_list_line_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "kernels.list"
    bad.write_text("# name suites flavour root\n6.1 bookworm amd64\n")
    with pytest.raises(ValueError, match=r"kernels.list:2: want NAME SUITES FLAVOUR ROOT"):
        kernels.load(bad)
    bad.write_text("6.1 bookworm amd64 -\n6.1 bookworm amd64 -\n")
    with pytest.raises(ValueError, match="listed twice"):
        kernels.load(bad)


def test_unbooted_names_each_kernel_make_test_did_not_boot(tmp_path: Path) -> None:
    """run-tests writes a failure marker for each line: a kernel not installed says so; one
    installed but not booted was left out by VM_KERNELS; booted ones are not named."""
    env = dict(os.environ, PMEMLAB_ROOTS=str(tmp_path))  # no build root: 5.10 and 7.2 missing
    host = [k for k in kernels.load() if not k.root]
    booted = [host[0].release] if host[0].release else []
    res = subprocess.run([str(KERNELS), "unbooted", *booted], capture_output=True, text=True, env=env, check=True)
    lines = dict(line.split(": ", 1) for line in res.stdout.splitlines())
    assert lines["5.10"] == lines["7.2"] == "not installed (scripts/install-deps)"
    assert host[0].name not in lines
    for k in host[1:]:
        assert lines[k.name] == ("left out (VM_KERNELS)" if k.release else "not installed (scripts/install-deps)")


def test_summary_counts_a_kernel_that_was_not_booted(tmp_path: Path) -> None:
    (tmp_path / "host.xml").write_text('<testsuites><testsuite name="pytest" tests="3" failures="0" '
                                       'errors="0" skipped="0"/></testsuites>')
    (tmp_path / "kernel-missing-7.2").write_text("not installed (scripts/install-deps)\n")
    res = subprocess.run([sys.executable, str(TOP / "scripts" / "test-summary"), str(tmp_path)],
                         capture_output=True, text=True)
    assert res.returncode == 1
    assert "kernel 7.2: not booted (not installed (scripts/install-deps))" in res.stdout
    assert res.stdout.splitlines()[-1] == "total: 3 passed, 1 failed, 0 skipped"


def test_build_root_of_a_path(tmp_path: Path) -> None:
    """`build-root of` finds the root a headers tree lies in (the Makefile builds inside it), and
    nothing for a host tree."""
    root = tmp_path / "roots" / "sid"
    kdir = root / "lib" / "modules" / "7.2.13+deb14-amd64" / "build"
    kdir.mkdir(parents=True)
    (root / ".pmemlab-root").write_text("layout=1\n")
    out = subprocess.run([str(BUILD_ROOT), "of", str(kdir)], capture_output=True, text=True, check=True).stdout
    assert out.strip() == str(root)
    out = subprocess.run([str(BUILD_ROOT), "of", "/lib/modules/6.1.0-56-amd64/build"], capture_output=True,
                         text=True, check=True).stdout
    assert out == ""


def test_build_root_refuses_a_directory_that_is_none(tmp_path: Path) -> None:
    res = subprocess.run([str(BUILD_ROOT), "run", str(tmp_path), "--", "true"], capture_output=True, text=True)
    assert res.returncode == 1
    assert "is not a build root" in res.stderr


@pytest.mark.parametrize("k", [k for k in kernels.load() if k.root], ids=lambda k: k.name)
def test_build_root_runs_its_own_toolchain(k) -> None:
    """A command in a root sees the root's compiler and C library, not the host's (bookworm has
    neither gcc-10 nor gcc-16), and the repository at its own path."""
    if not k.release:
        pytest.skip(f"{k.name} not installed")
    cc = {"5.10": "gcc-10", "7.2": "gcc-16"}[k.name]
    res = subprocess.run([str(BUILD_ROOT), "run", str(k.root_dir), "--", "sh", "-c",
                          f"x86_64-linux-gnu-{cc} --version && ldd --version && ls {TOP}/scripts/kernels.list"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    glibc = re.search(r"ldd \(.*\) (\d+\.\d+)", res.stdout)
    assert glibc, res.stdout
    host_glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    assert glibc.group(1) != host_glibc, (glibc.group(1), host_glibc)
