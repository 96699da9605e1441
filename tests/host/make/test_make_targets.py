"""Every make target that runs the controller builds userspace first: on a fresh clone (no build
products) `make demo` once failed in the guest because libplcore.so, the validator every
`pmemlab` run loads, had never been built. Checked with `make -n` in a copy of the tracked files:
the recursive make into userspace/ runs (dry) and prints the library's link line before the
target's own command.
"""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from testlib import TOP


# target (and its arguments), a word of the target's own command
CONTROLLER_TARGETS = [
    (["demo"], "run-configs"),
    (["sweep", "CONFIG=configs/bw-size.toml"], "run-configs"),
    (["sweep-all"], "run-configs"),
    (["plots"], "plot-all"),
    (["bench"], "scripts/bench"),
    (["soak"], "pytest"),
    (["test-host"], "pytest"),
    (["test-guest"], "pytest"),
    (["test-kasan"], "debug-kernel"),
]


@pytest.fixture(scope="module")
def fresh_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tracked files only, as a fresh clone has them."""
    tree = tmp_path_factory.mktemp("fresh")
    files = subprocess.run(["git", "-C", str(TOP), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        src, dst = TOP / name, tree / name
        if src.is_file():
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    return tree


@pytest.mark.parametrize("argv,own", CONTROLLER_TARGETS, ids=[" ".join(t[0]) for t in CONTROLLER_TARGETS])
def test_controller_targets_build_userspace_first(fresh_tree: Path, argv: list[str], own: str) -> None:
    assert not (fresh_tree / "userspace" / "runner" / "libplcore.so").exists()
    res = subprocess.run(["make", "-n", "-C", str(fresh_tree), *argv], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    out = res.stdout
    link = out.find("-o libplcore.so")
    assert link >= 0, f"make -n {' '.join(argv)} does not build libplcore.so:\n{out}"
    assert own in out[link:], f"make -n {' '.join(argv)}: {own} does not come after the userspace build:\n{out}"
