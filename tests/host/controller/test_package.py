"""The package as a user installs it: a wheel holds every subpackage and its commands work."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from testlib import TOP

USERSPACE = TOP / "userspace"


def _subpackages() -> set[str]:
    root = USERSPACE / "pmemlab"
    return {str(p.parent.relative_to(USERSPACE)) for p in root.rglob("__init__.py") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    # Build from a copy: setuptools leaves build/ next to the sources.
    src = tmp_path_factory.mktemp("src")
    shutil.copy(USERSPACE / "pyproject.toml", src)
    shutil.copytree(USERSPACE / "pmemlab", src / "pmemlab", ignore=shutil.ignore_patterns("__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    res = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                          "--no-index", "-w", str(out), str(src)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    (whl,) = out.glob("pmemlab-*.whl")
    return whl


def test_wheel_holds_every_subpackage(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    pkgs = _subpackages()
    assert {"pmemlab", "pmemlab/plots"} <= pkgs
    for pkg in pkgs:
        assert f"{pkg}/__init__.py" in names, f"{pkg} missing from the wheel"
    assert "pmemlab/cli/plot.py" in names
    assert "pmemlab/schema.json" in names  # the parameter table: every command reads it


def test_wheel_installed_runs_params(wheel: Path, tmp_path: Path) -> None:
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(env_dir)
    py = env_dir / "bin" / "python"
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(py), "install", "-q", "--no-deps",
                          "--no-index", str(wheel)], capture_output=True, text=True, timeout=300)
    if res.returncode != 0 and "no such option: --python" in res.stderr:  # pip < 22.3
        res = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index",
                              "--prefix", str(env_dir), str(wheel)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    # Run outside the source tree so the editable install cannot answer instead of the wheel.
    # The parameter table is the package's schema.json: `pmemlab params` lists it with or without
    # the library `make` builds (found through PMEMLAB_PLCORE), the same text.
    lib = USERSPACE / "runner" / "libplcore.so"
    env = {k: v for k, v in os.environ.items() if k != "PMEMLAB_PLCORE"}
    run = subprocess.run([str(env_dir / "bin" / "pmemlab"), "params"], capture_output=True, text=True,
                         cwd=tmp_path, timeout=120, env={**env, "PMEMLAB_PLCORE": str(lib)})
    assert run.returncode == 0, run.stderr
    assert "access_size" in run.stdout
    alone = subprocess.run([str(env_dir / "bin" / "pmemlab"), "params"], capture_output=True, text=True,
                           cwd=tmp_path, timeout=120, env=env)
    assert alone.returncode == 0 and alone.stdout == run.stdout and alone.stderr == "", alone.stderr
    where = subprocess.run([str(py), "-c", "import pmemlab.cli.plot as m; print(m.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60, env=env)
    assert where.returncode == 0 and str(env_dir) in where.stdout, where.stdout + where.stderr
