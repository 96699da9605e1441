"""The module builds cleanly (W=1, no warnings) against every installed headers tree, directly
and through DKMS. Host-side: nothing is loaded."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testlib import TOP, load_script

kernels = load_script("kernels")
LISTED = kernels.load()
# every headers tree on the host, and those of the list's kernels in build roots (5.10, 7.2)
TREES = sorted(Path("/lib/modules").glob("*/build")) + [
    k.kdir(k.release) for k in LISTED if k.root and k.release]


def test_every_kernel_of_the_list_is_installed() -> None:
    """install-deps brought all five: 6.1, 6.1-rt and 6.12 on the host, 5.10 and 7.2 in their
    build roots (each with an image to boot and a headers tree to build against)."""
    missing = [k.name for k in LISTED if not k.release]
    assert not missing, f"not installed: {missing} (scripts/install-deps)"
    assert {k.name for k in LISTED} == {"5.10", "6.1", "6.1-rt", "6.12", "7.2"}
    for k in LISTED:
        assert k.image(k.release).exists() and (k.kdir(k.release) / "Makefile").is_file(), k


def test_check_build_every_tree_w1() -> None:
    """check-build builds for every kernel of the list (the roots' ones inside their root) and
    any other headers tree, W=1 without a warning, and names each kernel it built for."""
    res = subprocess.run([str(TOP / "scripts" / "check-build")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(": ok (W=1, no warnings)") == len(TREES), res.stdout
    built = res.stdout.split("check-build: built for ", 1)[1]
    for k in LISTED:
        assert f"    {k.release} ({k.name}" in built, (k.name, res.stdout)


def test_check_build_fails_on_a_kernel_of_the_list_that_is_missing(tmp_path: Path) -> None:
    """With a build root gone (an empty roots directory), check-build says which kernel is
    missing and fails, though every tree it found built."""
    env = dict(os.environ, PMEMLAB_ROOTS=str(tmp_path))
    res = subprocess.run([str(TOP / "scripts" / "kernels"), "releases"], capture_output=True, text=True, env=env)
    assert res.returncode == 3
    assert "not installed: 5.10, 7.2" in res.stderr, res.stderr
    assert res.stdout.split() == [k.release for k in LISTED if not k.root]


def test_compat_shims_live_in_one_header() -> None:
    users = [p for p in (TOP / "kmod").rglob("*.[ch]") if "LINUX_VERSION_CODE" in p.read_text()]
    assert [p.name for p in users] == ["compat.h"], users


@pytest.mark.skipif(shutil.which("dkms") is None, reason="dkms not installed")
def test_dkms_build(tmp_path: Path) -> None:
    """DKMS (dkms.conf, the source layout `make dkms-install` copies) builds the module for every
    headers tree: the host's with the host's dkms, and each build root's kernel with that root's
    own dkms and compiler, as dkms on bullseye or sid would."""
    conf = (TOP / "dkms.conf").read_text()
    version = re.search(r'^PACKAGE_VERSION="(.+)"', conf, re.M).group(1)
    source = tmp_path / "src"
    src = source / f"pmemlab-{version}"
    src.mkdir(parents=True)
    for name in ("Kbuild", "kmod", "dkms.conf"):
        path = TOP / name
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, src / name)
    roots = {k.kdir(k.release): k.root_dir for k in LISTED if k.root and k.release}
    built = []
    for build in TREES:  # every headers tree: the host's (6.1, 6.1-rt, 6.12) and the roots' (5.10, 7.2)
        kernel = build.parent.name
        root = roots.get(build)
        tree = tmp_path / ("dkms-" + (root.name if root else "host"))
        common = ["-m", "pmemlab", "-v", version, "--sourcetree", str(source), "--dkmstree", str(tree)]
        run = ["dkms"] if root is None else [str(TOP / "scripts" / "build-root"), "run", str(root),
                                               "--bind", str(tmp_path), "--", "dkms"]
        if not tree.exists():
            tree.mkdir()
            res = subprocess.run([*run, "add", *common], capture_output=True, text=True)
            assert res.returncode == 0, f"dkms add ({root or 'host'}): " + res.stdout + res.stderr
        res = subprocess.run([*run, "build", *common, "-k", kernel], capture_output=True, text=True)
        assert res.returncode == 0, kernel + ": " + res.stdout + res.stderr
        assert list((tree / "pmemlab" / version / kernel).rglob("pmemlab.ko*")), f"dkms build for {kernel} left no module"
        built.append(kernel)
    assert {k.release for k in LISTED} <= set(built)
