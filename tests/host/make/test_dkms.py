"""DKMS builds the module for every kernel of scripts/kernels.list and every other headers tree:
the host's kernels with the host's dkms, each build root's kernel with that root's own dkms and
compiler. Host-side: nothing is loaded."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from testlib import TOP, headers_trees, load_script

LISTED = load_script("kernels").load()
TREES = headers_trees()


@pytest.mark.skipif(shutil.which("dkms") is None, reason="dkms not installed")
def test_dkms_build(tmp_path: Path) -> None:
    """DKMS (dkms.conf, the source layout `make dkms-install` copies) builds the module for every
    headers tree: the host's with the host's dkms, and each build root's kernel with that root's
    own dkms and compiler, as dkms on bullseye or sid would."""
    conf = (TOP / "dkms.conf").read_text()
    version = re.search(r'^PACKAGE_VERSION="(.+)"', conf, re.M).group(1)
    source = tmp_path / "src"
    src = source / f"pmemlab-{version}"
    # the tree `make dkms-install` copies: make module-tree (core/core.mk's list) and dkms.conf
    res = subprocess.run(["make", "-s", "-C", str(TOP), "module-tree", f"DEST={src}"], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    shutil.copy2(TOP / "dkms.conf", src / "dkms.conf")
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
