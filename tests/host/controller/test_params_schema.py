"""The run-parameter table the controller reads is data in the package (userspace/pmemlab/schema.json),
written at build time by `make docs` from libplcore.so's table (core/params.def, ops.def,
features.def): the file and the tables agree, and reading it loads no library."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pmemlab import params as P
from pmemlab import plcore

from testlib import TOP


def test_the_packaged_schema_is_the_libraries_table() -> None:
    """core/params.def, ops.def or features.def changed without `make docs` fails here (and so does
    loading the library: pmemlab.plcore.lib refuses a table that is not the file's)."""
    assert plcore.SCHEMA == TOP / "userspace" / "pmemlab" / "schema.json"
    assert plcore.library_schema() == json.loads(plcore.SCHEMA.read_text()), \
        "userspace/pmemlab/schema.json is stale: run `make docs`"
    table = plcore.schema()
    assert [row["name"] for row in table["params"]] == list(P.PARAM_NAMES)
    assert {op["name"] for op in table["ops"]} == {*P.OPS, *P.CHASE_OPS, *P.COPY_OPS}
    assert P.PARAMS["access_size"].hi == next(r["hi"] for r in table["params"] if r["name"] == "access_size")


def test_update_docs_check_passes_on_the_tree() -> None:
    """`scripts/update-docs --check` (`make docs`'s files, checked): the tree's schema.json and doc
    table are what the library writes (test_cpu_features: a changed table makes it fail)."""
    ok = subprocess.run([sys.executable, str(TOP / "scripts" / "update-docs"), "--check"], capture_output=True,
                        text=True, timeout=120)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr


@pytest.mark.parametrize("command", [["params"], ["params", "--json"], ["params", "--markdown"]])
def test_the_table_is_read_without_the_library(command: list[str], tmp_path: Path) -> None:
    """With no libplcore.so anywhere the controller looks, the package imports, its commands parse
    and `pmemlab params` lists the table: the same text as with the library."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PMEMLAB_")}
    env["PMEMLAB_PLCORE"] = str(tmp_path / "no" / "libplcore.so")
    probe = ("import sys, pmemlab.cli as cli, pmemlab.plots.recipes, pmemlab.report, pmemlab.params as P; "
             "print(len(P.PARAMS), 'pmemlab.plcore' in sys.modules, "
             "any('libplcore' in line for line in open('/proc/self/maps')))")
    res = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"{len(P.PARAMS)} True False\n"
    without = subprocess.run([sys.executable, "-m", "pmemlab", *command], capture_output=True, text=True, env=env,
                             timeout=120)
    assert without.returncode == 0, without.stderr
    env["PMEMLAB_PLCORE"] = str(TOP / "userspace" / "runner" / "libplcore.so")
    with_lib = subprocess.run([sys.executable, "-m", "pmemlab", *command], capture_output=True, text=True,
                              env=env, timeout=120)
    assert with_lib.returncode == 0 and without.stdout == with_lib.stdout and without.stdout
