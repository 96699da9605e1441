"""What a researcher new to pmemlab copies from the docs on a CXL machine (issue 34), in the guest
booted with scripts/vm --cxl:

- README's ("On CXL memory", step 3) and docs/interface.md's ("Several targets in one load")
  command lines for named targets, read FROM THE FILES and run as they stand through `sh -c`,
  each checked by what it should have made under /sys/kernel/pmemlab/targets/. The only changes
  are the ones the docs name: the CXL node N (interface.md's example node 2) is this guest's,
  `/dev/pmem0` an fsdax namespace this guest has, `pmemlab.ko` (interface.md's short form) the
  module built for this kernel, and each `dram_size=` 4M (README: on the emulated bed the CXL
  node's target gets a few MiB, since the module fills it at a few MB/s);
- `pmemlab info` with no module loaded shows the CXL memdevs, root decoders, regions (pmem and
  ram: mode, size, ways, granularity, node, what each became) and the advertised values;
- the user backend knows `cxl` (the CXL ram region's node) and refuses another bare name in one
  line without advising to create a file, as README's one-liners meet them with no module."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import controller_cli

pytestmark = pytest.mark.cxl

TOP = Path(__file__).resolve().parents[2]
DOCS = Path(os.environ.get("PMEMLAB_DOCS_ROOT") or TOP)  # where README.md and docs/ are read (another revision's)
TARGETS = Path("/sys/kernel/pmemlab/targets")
SMALL = "4M"


def cxl_env(name: str) -> str:
    value = os.environ.get(name, "")
    if not value:
        pytest.skip(f"{name} unset: the guest was booted without scripts/vm --cxl")
    return value


def rmmod() -> None:
    if Path("/sys/module/pmemlab").exists():
        subprocess.run(["rmmod", "pmemlab"], check=True)


def code_lines(doc: Path, heading: str) -> list[str]:
    """The command lines of the fenced code blocks under `heading` (to the next heading of its
    level or above) that make or drive named targets: every insmod and every echo into targets/
    of a block holding an insmod with targets= or such an echo."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = doc.read_text().splitlines()
    out: list[str] = []
    block: list[str] | None = None
    for line in lines[lines.index(heading) + 1:]:
        m = re.match(r"(#+) ", line)
        if m and len(m.group(1)) <= level and block is None:
            break
        if line.strip().startswith("```"):
            if block is not None and any("targets=" in c or "/sys/kernel/pmemlab/targets/" in c for c in block):
                out += block
            block = None if block is not None else []
            continue
        cmd = line.strip()
        if block is not None and (cmd.startswith("insmod") or
                                  cmd.startswith("echo") and "/sys/kernel/pmemlab/targets/" in cmd):
            block.append(cmd)
    return out


def fill(cmd: str, ko: Path, node: int, pmem: str) -> str:
    """The documented placeholders of a command filled for this guest (the module docstring)."""
    cmd = re.sub(r"dram_node=(N|2)\b", f"dram_node={node}", cmd)
    cmd = re.sub(r"dram_size=\w+", f"dram_size={SMALL}", cmd)
    cmd = cmd.replace("/dev/pmem0", pmem)
    if not (TOP / "build" / os.uname().release / "pmemlab.ko").exists():
        cmd = cmd.replace("build/$(uname -r)/pmemlab.ko", str(ko))
    return re.sub(r"(?<![/\w])pmemlab\.ko", str(ko), cmd)


def named() -> set[str]:
    return {p.name for p in TARGETS.iterdir() if p.is_dir()} if TARGETS.is_dir() else set()


def expect(cmd: str, before: set[str]) -> set[str]:
    """The named targets a command leaves: an insmod's targets= entries, an echo's add or remove."""
    m = re.search(r"""targets="([^"]*)\"""", cmd)
    if cmd.startswith("insmod"):
        return {e.split()[0] for e in m.group(1).split(";") if e.strip()} if m else set()
    after = set(before)
    for value, path in re.findall(r"""echo\s+"?([^">]*?)"?\s*>\s*([^\s;]+)""", cmd):
        if path.endswith("/targets/add"):
            after.add(value.split()[0])
        elif path.endswith("/targets/remove"):
            after.discard(value.strip())
    return after


def run_doc(doc: str, heading: str, ko: Path, node: int, pmem: str) -> list[str]:
    cmds = code_lines(DOCS / doc, heading)
    assert any(c.startswith("insmod") for c in cmds), f"{doc}: no insmod ... targets= line under {heading!r}"
    ran = []
    rmmod()
    try:
        for doc_cmd in cmds:
            cmd = fill(doc_cmd, ko, node, pmem)
            if cmd.startswith("insmod"):
                rmmod()
            want = expect(cmd, named())
            res = subprocess.run(["sh", "-c", cmd], cwd=TOP, capture_output=True, text=True, timeout=600)
            assert res.returncode == 0, f"{doc}: `{doc_cmd}` run as `sh -c '{cmd}'`: {res.stderr.strip()}"
            assert named() == want, (doc_cmd, named(), want)
            for value, path in re.findall(r"""echo\s+"?([^">]*?)"?\s*>\s*([^\s;]+)""", cmd):
                if "/targets/" in path and not path.endswith(("/add", "/remove")):
                    assert Path(path).read_text().strip() == value.strip(), (doc_cmd, path)
            if "targets=" in cmd and "dram_node=" in cmd and cmd.startswith("insmod"):
                for entry in re.search(r"""targets="([^"]*)\"""", cmd).group(1).split(";"):
                    m = re.search(r"dram_node=(\d+)", entry)
                    if m:
                        name = entry.split()[0]
                        assert (TARGETS / name / "target_node").read_text().strip() == m.group(1), (doc_cmd, name)
            ran.append(cmd)
    finally:
        rmmod()
    return ran


@pytest.fixture(scope="module")
def cxl_node() -> int:
    return int(cxl_env("PMEMLAB_CXL_NODE"))


@pytest.fixture(scope="module")
def a_pmem() -> str:
    """An fsdax namespace for the docs' /dev/pmem0: /dev/pmem0 itself where the guest has it."""
    devs = os.environ.get("PMEMLAB_PMEM", "").split() + cxl_env("PMEMLAB_CXL_PMEM").split()
    return "/dev/pmem0" if "/dev/pmem0" in devs else devs[0]


def test_readme_named_target_lines_run_as_typed(ko: Path, cxl_node: int, a_pmem: str) -> None:
    ran = run_doc("README.md", "## On CXL memory", ko, cxl_node, a_pmem)
    assert len(ran) == 3 and ran[0].startswith("insmod")


def test_interface_named_target_lines_run_as_typed(ko: Path, cxl_node: int, a_pmem: str) -> None:
    ran = run_doc("docs/interface.md", "## Several targets in one load (named targets)", ko, cxl_node, a_pmem)
    assert sum(c.startswith("insmod") for c in ran) == 3 and sum(c.startswith("echo") for c in ran) == 3


def test_the_form_the_docs_warn_of_fails(ko: Path, cxl_node: int) -> None:
    """The docs' reason for the single quotes holds: the same value in double quotes alone, through
    a shell, fails the load and leaves no module."""
    rmmod()
    res = subprocess.run(["sh", "-c", f'insmod {ko} targets="a dram dram_node=0;b dram '
                                      f'dram_node={cxl_node} dram_size={SMALL}"'], capture_output=True, text=True)
    assert res.returncode != 0 and "Invalid parameters" in res.stderr, res.stderr
    assert not Path("/sys/module/pmemlab").exists()


# ---------------------------------------------------------------------------------------------
# pmemlab info without the module
# ---------------------------------------------------------------------------------------------
def cxl_list(*args: str):
    out = subprocess.run(["cxl", "list", *args], capture_output=True, text=True, check=True).stdout
    return json.loads(out) if out.strip() else []


def test_info_without_the_module_shows_cxl(cxl_node: int) -> None:
    rmmod()
    res = controller_cli.run("info", "--json", timeout=300)
    assert res.returncode == 0, res.stderr
    info = json.loads(res.stdout)
    assert info["module"]["loaded"] is False
    inv = info["cxl"]
    listed = {m["memdev"]: m for m in cxl_list("-M")}
    assert {m["memdev"] for m in inv["memdevs"]} == set(listed) and len(listed) == 2
    for m in inv["memdevs"]:
        assert (m["serial"], m["ram_size"], m["pmem_size"]) == (listed[m["memdev"]]["serial"],
                                                                listed[m["memdev"]].get("ram_size"),
                                                                listed[m["memdev"]].get("pmem_size"))
    roots = {d["decoder"]: d for d in inv["decoders"] if d["kind"] == "root"}
    for d in cxl_list("-D", "-d", "root"):
        got = roots[d["decoder"]]
        assert (got["start"], got["size"]) == (d["resource"], d["size"])
        assert got["pmem_capable"] == bool(d.get("pmem_capable")) and got["volatile_capable"] == bool(d.get("volatile_capable"))
    regions = {r["region"]: r for r in inv["regions"]}
    listed_regions = cxl_list("-R")
    on_bus = {p.name for p in Path("/sys/bus/cxl/devices").glob("region*")}
    assert set(regions) == on_bus and {r["region"] for r in listed_regions} <= on_bus
    for lr in listed_regions:
        r = regions[lr["region"]]
        assert (r["resource"], r["size"], r["interleave_ways"], r["interleave_gran"]) == (
            lr["resource"], lr["size"], lr["interleave_ways"], lr["interleave_granularity"])
        assert r["mode"] == lr.get("type", r["mode"]) and r["node"] is not None
    modes = sorted(r["mode"] for r in regions.values())
    assert modes.count("pmem") == 1 and modes.count("ram") == 2, modes
    onlined = [r for r in regions.values() if any(x["driver"] == "kmem" for x in r["dax"])]
    assert [r["node"] for r in onlined] == [cxl_node]
    devdax = [x["device"] for r in regions.values() for x in r["dax"] if x["driver"] == "device_dax"]
    assert devdax == [cxl_env("PMEMLAB_CXL_DAX")]
    (pmem,) = [r for r in regions.values() if r["mode"] == "pmem"]
    assert pmem["nvdimm_region"] and Path(f"/sys/bus/nd/devices/{pmem['nvdimm_region']}").exists()
    # the advertised values: the node's access0 where the kernel has it, else the region's own
    base = Path(f"/sys/devices/system/node/node{cxl_node}/access0/initiators/read_latency")
    node_info = {n["node"]: n for n in info["numa"]["nodes"]}[cxl_node]
    adv = onlined[0]["advertised"]
    if base.exists():
        assert adv["read_latency"] == int(base.read_text()) and adv["source"] == f"node{cxl_node} access0"
        assert node_info["advertised"]["read_latency"] == adv["read_latency"]
    elif onlined[0]["access0"]:
        assert adv["read_latency"] == onlined[0]["access0"]["read_latency"]
    text = controller_cli.run("info", timeout=300)
    assert text.returncode == 0, text.stderr
    section = text.stdout.split("\ncxl\n", 1)
    assert len(section) == 2, text.stdout
    for want in [*listed, *roots, *regions, "root decoder (CXL window)", f"node={cxl_node}", "system RAM", "device_dax"]:
        assert want in section[1], (want, section[1])
    if adv.get("source"):
        assert f"advertised read {adv['read_latency']} ns" in section[1]


# ---------------------------------------------------------------------------------------------
# the user backend and a named target
# ---------------------------------------------------------------------------------------------
def test_user_backend_takes_cxl_for_the_cxl_node(cxl_node: int, tmp_path: Path) -> None:
    """README's one-liners with no module: `cxl` is the CXL node on the user backend (with a small
    target: the runner fills its target, and the emulated CXL memory takes writes at a few MB/s;
    loaded-latency's --probe-target cxl is the same resolution: tests/host/controller/backends/test_runner_backend.py)."""
    import pandas as pd

    rmmod()
    out = tmp_path / "idle-latency.csv"
    res = controller_cli.run("idle-latency", "--targets", "dram,cxl=cxl dram_size=4M", "--count", "200",
                             "--working-set", "1M", "--repeats", "1", "-o", str(out), timeout=900)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    rows = pd.read_csv(out, dtype={"thread": str})
    rows = rows[rows["thread"] == "all"]
    assert set(rows["status"]) == {"ok"} and set(rows["target_label"]) == {"dram", "cxl"}
    assert set(rows[rows["target_label"] == "cxl"]["target_node"]) == {cxl_node}
    assert cxl_node not in set(rows[rows["target_label"] == "dram"]["target_node"])


def test_user_backend_refuses_another_bare_name_in_one_line() -> None:
    rmmod()
    res = controller_cli.run("idle-latency", "--target", "pm", "--count", "200", timeout=300)
    assert res.returncode == 2
    err = [line for line in res.stderr.splitlines() if line.strip()]
    assert len(err) == 1 and "named targets are the module's" in err[0] and "size=" not in err[0], res.stderr
    assert "dram:NODE" in err[0] and not Path("pm").exists()
