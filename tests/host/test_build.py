"""The module builds cleanly (W=1, no warnings) against every installed headers tree, directly
and through DKMS. Host-side: nothing is loaded."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testlib import TOP

TREES = sorted(Path("/lib/modules").glob("*/build"))


def test_headers_of_the_matrix_are_installed() -> None:
    releases = {t.parent.name for t in TREES}
    assert any(re.fullmatch(r"6\.1\.\d+-\d+-amd64", r) for r in releases), releases
    assert any(re.fullmatch(r"6\.12\.\d+\+deb12-amd64", r) for r in releases), releases
    assert any(r.endswith("-rt-amd64") for r in releases), releases


def test_check_build_every_tree_w1() -> None:
    res = subprocess.run([str(TOP / "scripts" / "check-build")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.count(": ok (W=1, no warnings)") == len(TREES), res.stdout


def test_compat_shims_live_in_one_header() -> None:
    users = [p for p in (TOP / "kmod").rglob("*.[ch]") if "LINUX_VERSION_CODE" in p.read_text()]
    assert [p.name for p in users] == ["compat.h"], users


@pytest.mark.skipif(shutil.which("dkms") is None, reason="dkms not installed")
def test_dkms_build(tmp_path: Path) -> None:
    conf = (TOP / "dkms.conf").read_text()
    version = re.search(r'^PACKAGE_VERSION="(.+)"', conf, re.M).group(1)
    source = tmp_path / "src"
    tree = tmp_path / "dkms"
    src = source / f"pmemlab-{version}"
    src.mkdir(parents=True)
    tree.mkdir()
    for name in ("Kbuild", "kmod", "dkms.conf"):
        path = TOP / name
        (shutil.copytree if path.is_dir() else shutil.copy2)(path, src / name)
    common = ["-m", "pmemlab", "-v", version, "--sourcetree", str(source), "--dkmstree", str(tree)]
    subprocess.run(["dkms", "add", *common], check=True, capture_output=True)
    for build in TREES:  # every installed headers tree: 6.1, 6.1-rt, 6.12
        kernel = build.parent.name
        res = subprocess.run(["dkms", "build", *common, "-k", kernel], capture_output=True, text=True)
        assert res.returncode == 0, kernel + ": " + res.stdout + res.stderr
        assert list((tree / "pmemlab" / version / kernel).rglob("pmemlab.ko*")), f"dkms build for {kernel} left no module"
