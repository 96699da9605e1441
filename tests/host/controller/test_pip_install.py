"""The controller alone, as a laptop installs it to look at results copied from a lab machine
(README, "The controller alone"): `pip install ./userspace` into a fresh virtual environment, not
editable, with no compiler on PATH and no libplcore.so anywhere the package looks, then `pmemlab
summarize`, `plot`, `plot-all`, `compare` and `report` of tests/host/fixtures/recorded (a copy)
each succeed and write their files; `run` and `sweep` say in one line what is missing and how
to get it, with the exit code pmemlab.exitcodes documents.

The venv sees the system's site-packages, as scripts/install-deps's .venv does: pandas, numpy,
matplotlib and tqdm are Debian's, so pip resolves the package's dependencies without fetching
anything (--no-index) and builds it with the system's setuptools (--no-build-isolation)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from pmemlab import exitcodes

from testlib import HOST_FIXTURES, TOP

USERSPACE = TOP / "userspace"
RECORDED = HOST_FIXTURES / "recorded"
TOOLCHAIN = ("cc", "gcc", "c99", "clang", "ld", "make", "as")


class Installed:
    """The venv with pmemlab installed, and how to run its `pmemlab` there."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "venv" / "bin"
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("PMEMLAB_") and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        self.env["PATH"] = str(self.bin)  # nothing else: no cc, gcc, make (asserted)

    def run(self, *args: str, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(self.bin / "pmemlab"), *args], capture_output=True, text=True, cwd=cwd,
                              env=self.env, timeout=timeout)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("laptop")
    # userspace/ as a checkout holds it, without what `make` built there (runner/: the C side)
    src = root / "userspace"
    src.mkdir()
    shutil.copy(USERSPACE / "pyproject.toml", src)
    shutil.copytree(USERSPACE / "pmemlab", src / "pmemlab", ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    venv.EnvBuilder(system_site_packages=True, with_pip=False).create(root / "venv")
    inst = Installed(root)
    for tool in TOOLCHAIN:
        assert shutil.which(tool, path=inst.env["PATH"]) is None, tool
    # pip of the test's interpreter, run by the venv's (pip --python): the venv needs no pip of its own
    res = subprocess.run([sys.executable, "-m", "pip", "--python", str(inst.bin / "python"), "install", "-q",
                          "--disable-pip-version-check", "--no-index", "--no-build-isolation", str(src)],
                         capture_output=True, text=True, cwd=root, env=inst.env, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    return inst


def test_installed_not_editable_and_without_the_library(installed: Installed, tmp_path: Path) -> None:
    probe = ("import importlib.metadata as md, pmemlab, pmemlab.plcore as c; "
             "print(pmemlab.__file__); print(md.version('pmemlab'), pmemlab.__version__); "
             "print(md.distribution('pmemlab').entry_points['pmemlab'].value); "
             "print(c.SCHEMA.is_file(), [str(p) for p in c.candidates() if p.exists()])")
    res = subprocess.run([str(installed.bin / "python"), "-c", probe], capture_output=True, text=True,
                         cwd=tmp_path, env=installed.env, timeout=120)
    assert res.returncode == 0, res.stderr
    where, versions, entry, schema = res.stdout.splitlines()
    assert where.startswith(str(installed.root / "venv" / "lib")), where  # the copy in site-packages
    a, b = versions.split()
    assert a == b and a
    assert entry == "pmemlab.__main__:run"
    assert schema == "True []"
    version = installed.run("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout == f"pmemlab {a}\n", version.stderr


def test_reads_plots_compares_and_reports_recorded_results(installed: Installed, tmp_path: Path) -> None:
    results = tmp_path / "from-the-lab"
    shutil.copytree(RECORDED, results)
    (results / "bw-size.summary.csv").unlink()

    res = installed.run("summarize", "bw-size.csv", cwd=results)
    assert res.returncode == 0, res.stderr
    assert (results / "bw-size.summary.csv").stat().st_size > 0 and "summary -> bw-size.summary.csv" in res.stdout

    res = installed.run("plot", "bw-size.csv", "-o", str(tmp_path / "plot"), cwd=results)
    assert res.returncode == 0, res.stderr
    assert {p.name for p in (tmp_path / "plot").iterdir()} == {"bw-size.png", "bw-size.svg"}

    # plot-all's command over two experiments (the report below draws every experiment's figure)
    two = tmp_path / "two"
    two.mkdir()
    for name in ("idle-latency", "bw-threads"):
        for f in RECORDED.glob(f"{name}.*"):
            shutil.copy(f, two)
    res = installed.run("plot-all", str(two), "-o", str(tmp_path / "all"), "--format", "png", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    assert {p.name for p in (tmp_path / "all").iterdir()} == {"idle-latency.png", "bw-threads.png"}

    res = installed.run("compare", "idle-latency.csv", "idle-latency.csv", "-o", str(tmp_path / "cmp.csv"),
                        cwd=results)
    assert res.returncode == 0, res.stderr
    assert "no difference" in (tmp_path / "cmp.csv").read_text()

    res = installed.run("report", str(results), "-o", str(tmp_path / "report"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    html = (tmp_path / "report" / "report.html").read_text()
    figures = {p.stem for p in (tmp_path / "report" / "report-figures").glob("*.png")}
    experiments = {p.stem for p in RECORDED.glob("*.json")}
    assert figures == experiments and html.count("data:image/png;base64,") >= len(experiments)


@pytest.mark.parametrize("command", [["run", "op=load"], ["sweep", str(TOP / "configs" / "bw-size.toml")]])
def test_running_says_the_library_is_missing(installed: Installed, tmp_path: Path, command: list[str]) -> None:
    res = installed.run(*command, cwd=tmp_path, timeout=120)
    assert res.returncode == exitcodes.BAD_INPUT and res.stdout == ""
    assert res.stderr.count("\n") == 1, res.stderr
    assert res.stderr.startswith("pmemlab: libplcore.so (the module's validator, which judges every run) not found (")
    assert "; fix: run `make` in the pmemlab tree (it builds userspace/runner/libplcore.so), or set PMEMLAB_PLCORE " \
           "to the library's path\n" in res.stderr
    assert "libplcore.so to judge a run with" in dict(exitcodes.EXIT_CODES)[exitcodes.BAD_INPUT]
    assert list(tmp_path.iterdir()) == []  # nothing written
