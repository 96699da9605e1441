"""The module builds cleanly (W=1, no warnings) against every kernel of scripts/kernels.list and
every other installed headers tree (DKMS: test_dkms.py, a file of its own so that the two sets of
builds run on two workers side by side). Host-side: nothing is loaded."""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from testlib import TOP, headers_trees, load_script

LISTED = load_script("kernels").load()
TREES = headers_trees()


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
    users = [p for d in ("kmod", "core") for p in (TOP / d).rglob("*.[ch]") if "LINUX_VERSION_CODE" in p.read_text()]
    assert [p.name for p in users] == ["compat.h"], users


def test_the_core_make_fragment_lists_every_core_file() -> None:
    """core/core.mk is the one list of the core's files (Kbuild, the runner's Makefile and the
    module and DKMS trees read it): a file of core/ it does not name would be left out of some
    client's build."""
    text = (TOP / "core" / "core.mk").read_text().replace("\\\n", " ")
    listed = set()
    for var in ("PL_CORE_SRC", "PL_CORE_HDR"):
        listed |= set(re.search(rf"^{var} := (.*)$", text, re.M).group(1).split())
    present = {p.name for p in (TOP / "core").iterdir() if p.name != "core.mk"}
    assert listed == present, (sorted(present - listed), sorted(listed - present))
