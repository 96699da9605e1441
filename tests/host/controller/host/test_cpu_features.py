"""The CPU features `pmemlab info` reports come from the one table, core/features.def (through
libplcore.so's schema, written into the package's schema.json by `make docs`, as the parameters and
ops are), not from a list of the controller's own: a row added to the table reaches
`pmemlab.host.machine` and the facts it reads from /proc/cpuinfo."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pmemlab.host.machine as machine
import pmemlab.params as P

from testlib import TOP

ROW = re.compile(r'^PL_FEAT\(\s*\w+,\s*"([^"]+)"', re.M)


def table_names(path: Path) -> list[str]:
    return ROW.findall(path.read_text())


def test_the_features_are_the_tables_in_its_order() -> None:
    names = table_names(TOP / "core" / "features.def")
    assert names and list(P.CPU_FEATURES) == names
    assert machine.CPU_FEATURES_OF_INTEREST == (*names, *machine.TSC_FLAGS)


PROBE = """
import json, sys
from pathlib import Path
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
root = Path(sys.argv[1])
print(json.dumps(machine.cpu_info(probe.HostPaths(proc=root / "proc", sys=root / "sys", dev=root / "dev"))["features"]))
"""


def test_a_row_added_to_the_table_reaches_info(tmp_path: Path) -> None:
    """A copy of the core with one more row, its libplcore.so built as `make` builds it: the
    package refuses that library while its schema.json is the old table (in one line: run `make
    docs`), and a copy of the package whose schema.json the build step wrote from it reports the
    new feature from /proc/cpuinfo's flags."""
    shutil.copytree(TOP / "core", tmp_path / "core")
    runner = tmp_path / "userspace" / "runner"
    shutil.copytree(TOP / "userspace" / "runner", runner,
                    ignore=shutil.ignore_patterns("*.o", "*.so", "pmemlab-run", "pmemlab-run-ubsan", "ubsan"))
    table = tmp_path / "core" / "features.def"
    text = table.read_text()
    last = [m for m in re.finditer(r"^PL_FEAT\(.*\)$", text, re.M)][-1]
    table.write_text(text[:last.end()] + '\nPL_FEAT(PLTEST,     "pltest",     XMM2,        1,          0,  d,  26, 0)'
                     + text[last.end():])
    assert table_names(table)[-1] == "pltest"
    # -O0 -g0: the table reaches the library the same way at any optimisation, and the optimised
    # engine.c took 71 s here quiet and over 600 s beside CI's guests (15 s at -O0)
    built = subprocess.run(["make", "-s", "-C", str(runner), f"-j{min(2, os.cpu_count() or 1)}",
                            "CFLAGS=-O0 -g0", "libplcore.so"],
                           capture_output=True, text=True, timeout=1200)
    assert built.returncode == 0, built.stderr[-2000:]
    root = tmp_path / "host"
    (root / "proc").mkdir(parents=True)
    (root / "sys" / "devices/system/cpu").mkdir(parents=True)
    (root / "proc" / "cpuinfo").write_text("processor\t: 0\nflags\t\t: fpu sse2 clwb pltest constant_tsc\n")
    env = {**os.environ, "PMEMLAB_PLCORE": str(runner / "libplcore.so")}
    stale = subprocess.run([sys.executable, "-c", "import pmemlab.plcore as c; c.lib()"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert stale.returncode == 1 and stale.stderr.strip().splitlines()[-1].startswith("pmemlab.plcore.CoreMissing: ")
    assert "another core/params.def, ops.def or features.def than the package's schema.json" in stale.stderr
    assert "run `make docs`" in stale.stderr
    check = subprocess.run([sys.executable, str(TOP / "scripts" / "update-docs"), "--check"], capture_output=True,
                           text=True, env=env, timeout=120)
    assert check.returncode == 1
    assert check.stderr == "update-docs: userspace/pmemlab/schema.json is stale: run `make docs`\n"
    shutil.copytree(TOP / "userspace" / "pmemlab", tmp_path / "userspace" / "pmemlab",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env["PYTHONPATH"] = str(tmp_path / "userspace")
    wrote = subprocess.run([sys.executable, "-c", "import pmemlab.plcore as c; print(c.write_schema(), c.SCHEMA)"],
                           capture_output=True, text=True, env=env, timeout=120)
    assert wrote.stdout == f"True {tmp_path / 'userspace' / 'pmemlab' / 'schema.json'}\n", wrote.stderr
    res = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    features = json.loads(res.stdout)
    assert list(features) == [*table_names(table), *machine.TSC_FLAGS]
    assert features["pltest"] is True and features["clwb"] is True and features["avx"] is False
    assert features["constant_tsc"] is True and features["nonstop_tsc"] is False
