"""The target axis and the MLC-style one-liners against the real module in the guest (TCG: the
numbers show function only): one CSV from a sweep over the pmem namespace and DRAM (each a named
target of the one load, no reload), each one-liner's table on the module and on the user
backend, and the NUMA matrices with the runs checked against the nodes when the guest has two
(scripts/vm --numa-nodes 2)."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

import pmemlab.cli as cli
from pmemlab.params import parse_cpulist


def pmemlab(*args: str) -> subprocess.CompletedProcess:
    """The command line in this process (a new Python with pandas takes ~25 s to start under TCG)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    res = subprocess.CompletedProcess(["pmemlab", *args], code, out.getvalue(), err.getvalue())
    print(f"$ pmemlab {' '.join(args)}\n{res.stdout}{res.stderr}")  # the tables, for the record (pytest -s)
    return res


TARGETS = Path("/sys/kernel/pmemlab/targets")


def named_targets() -> list[str]:
    """The module's named targets now."""
    return sorted(p.name for p in TARGETS.iterdir() if p.is_dir())


def table(out: str) -> dict[str, list[str]]:
    """The printed table's rows by their first cell."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if not line.strip()) + 2
    rows = {}
    for line in lines[start:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def nodes_with_cpus_and_memory() -> list[int]:
    found = []
    for node in sorted(Path("/sys/devices/system/node").glob("node[0-9]*")):
        cpus = (node / "cpulist").read_text().strip()
        mem = re.search(r"MemTotal:\s+(\d+)", (node / "meminfo").read_text())
        if cpus and mem and int(mem.group(1)) > 0:
            found.append(int(node.name[4:]))
    return found


TWO_TARGETS = """
[sweep]
name = "guest-targets"
repeats = 1

[sweep.targets]
pmem = "target=@PMEM@"
dram = "target=dram dram_size=64M"

[base]
mode = "bandwidth"
pattern = "seq"
threads = 1
working_set = "16M"
duration_ms = 30

[axes]
op = ["load", "ntstore"]
"""


def test_sweep_over_pmem_and_dram_into_one_csv(tmp_path: Path, module, pmem_dev: str) -> None:
    """pmemlab sweep makes each target a named target of the module loaded without target= (no
    reload): one CSV, a target_label column, each target's own conditions, the sidecar describing
    both, the targets removed after; resumed, nothing runs again."""
    cfg = tmp_path / "two.toml"
    cfg.write_text(TWO_TARGETS)
    out = tmp_path / "two.csv"
    with module():
        loaded_at = os.stat("/sys/module/pmemlab").st_ino
        res = pmemlab("sweep", str(cfg), "-o", str(out), "--pmem", pmem_dev, "--no-progress")
        assert res.returncode == 0, res.stderr
        assert os.stat("/sys/module/pmemlab").st_ino == loaded_at, "the same load: no rmmod/insmod"
        assert named_targets() == [], "the targets the sweep added are removed"
        res = pmemlab("sweep", str(cfg), "-o", str(out), "--pmem", pmem_dev, "--no-progress")
        assert res.returncode == 0 and "0 runs" in res.stdout and "4 resumed" in res.stdout, res.stdout + res.stderr
    df = pd.read_csv(out, dtype={"thread": str})
    agg = df[df["thread"] == "all"]
    assert list(agg["target_label"]) == ["pmem", "pmem", "dram", "dram"] and (agg["status"] == "ok").all()
    by = agg.drop_duplicates("target_label").set_index("target_label")
    assert by.loc["pmem", "target"] == pmem_dev and by.loc["pmem", "target_kind"] == "fsdax"
    assert by.loc["dram", "target"] == "dram" and by.loc["dram", "target_size"] == 64 << 20
    assert (agg["bw_gbps"] > 0).all()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["targets"]["pmem"]["load"] == f"target={pmem_dev}"
    assert side["targets"]["dram"]["conditions"]["target_kind"] == "dram"


def test_sweep_over_two_targets_beside_the_top_level_one(tmp_path: Path, module, pmem_dev: str) -> None:
    """insmod target= stays as it is: a sweep over two DRAM targets beside it adds them as named
    targets, finds one that is there already (and leaves it), runs each through its own directory
    while both are loaded, and never touches the top level's target or its runs."""
    cfg = tmp_path / "two.toml"
    cfg.write_text(TWO_TARGETS)
    out = tmp_path / "two.csv"
    with module(target=pmem_dev, targets='"kept dram dram_size=32M"') as sysfs:  # quoted for the kernel's parser
        run_id = (sysfs / "run_id").read_text()
        res = pmemlab("sweep", str(cfg), "-o", str(out), "--no-progress",
                      "--targets", "kept=dram dram_size=32M,added=dram dram_size=16M dram_pages=4k")
        assert res.returncode == 0, res.stderr
        assert named_targets() == ["kept"], "the one it added went, the one it found stays"
        assert (sysfs / "target").read_text().strip() == pmem_dev and (sysfs / "run_id").read_text() == run_id
    df = pd.read_csv(out, dtype={"thread": str})
    agg = df[df["thread"] == "all"]
    assert list(dict.fromkeys(agg["target_label"])) == ["kept", "added"] and (agg["status"] == "ok").all()
    by = agg.drop_duplicates("target_label").set_index("target_label")
    assert by.loc["kept", "target_size"] == 32 << 20 and by.loc["added", "target_size"] == 16 << 20
    assert by.loc["added", "target_page_size"] == 4096


def test_one_liners_on_the_module(module, pmem_dev: str) -> None:
    with module(target=pmem_dev):
        res = pmemlab("idle-latency", "--count", "2000", "--working-set", "16M")
        assert res.returncode == 0, res.stderr
        assert "kernel backend" in res.stdout and f"on {pmem_dev} (fsdax" in res.stdout and "EMULATED" in res.stdout
        rows = table(res.stdout)
        # median, p5, p95, mean, max, samples, then the advertised columns; under TCG the clock steps
        # by 10 ns and an access can cost no more than the empty bracket subtracted from it, so 0 ns
        # is a real median: the percentiles' order and the sample count are what hold everywhere
        cold = rows["load, random, cold line"]
        median, p5, p95, mean, top = (float(v) for v in cold[:5])
        assert 0 <= p5 <= median <= p95 <= top and 0 <= mean <= top and cold[5] == "2000", cold
        res = pmemlab("loaded-latency", "--duration-ms", "40", "--delays", "0,2000", "--working-set", "16M")
        assert res.returncode == 0, res.stderr
        rows = table(res.stdout)
        # delay ns, the probe's median, p5, p95, then the GB/s of every thread: the probe's median
        # can be 0 ns under TCG (above); the bandwidth is bytes over a run's ticks, above 0 whenever
        # one access ran, and the delay in ns follows the ticks asked for (0 at 0)
        assert list(rows) == ["0", "2000"], rows
        for delay, r in rows.items():
            median, p5, p95, bw = (float(v) for v in r[1:5])
            assert 0 <= p5 <= median <= p95 and bw > 0, (delay, r)
            assert (float(r[0]) > 0) == (delay != "0"), (delay, r)
        res = pmemlab("peak-bw", "--duration-ms", "20", "--repeats", "2", "--working-set", "16M", "--json")
        assert res.returncode == 0, res.stderr
        done = {r["access"]: r for r in json.loads(res.stdout)["rows"] if r["bw_gbps_mean"] is not None}
        assert {"load", "ntload", "store", "ntstore", "1:1 load:store"} <= set(done)
        assert all(r["runs"] == 2 and r["bw_gbps_mean"] > 0 for r in done.values())


def test_one_liner_over_pmem_and_dram(module, pmem_dev: str) -> None:
    with module():
        res = pmemlab("idle-latency", "--backend", "kernel", "--targets", "pmem,dram=dram dram_size=64M",
                      "--pmem", pmem_dev, "--count", "1000", "--json")
        assert res.returncode == 0, res.stderr
        assert named_targets() == []
    rows = json.loads(res.stdout)["rows"]
    assert [r["target"] for r in rows] == ["pmem"] * 4 + ["dram"] * 4
    # a median, never a missing one; under TCG an access can cost no more than the empty
    # bracket subtracted from it, so 0 ns is a real median here (bare metal: tens of ns)
    assert all(r["median_ns"] is not None and r["median_ns"] >= 0 for r in rows if r["op"] in ("load", "ntstore"))


def test_loaded_latency_probe_on_one_target_load_on_another(module, tmp_path: Path) -> None:
    """loaded-latency with thread 0 probing one named target while the load thread runs on another,
    both made at load (targets=), found and left as they were; the rows carry the probe's target
    and load_target."""
    out = tmp_path / "ll.csv"
    with module(targets='"probe dram dram_size=16M;load dram dram_size=32M"'):
        res = pmemlab("loaded-latency", "--backend", "kernel", "--probe-target", "probe", "--load-target", "load",
                      "--duration-ms", "40", "--delays", "0,2000", "--working-set", "8M", "--repeats", "1",
                      "--threads", "2", "--json", "-o", str(out))
        assert res.returncode == 0, res.stderr
        assert named_targets() == ["load", "probe"], "found, and left as they were"
    doc = json.loads(res.stdout)
    assert doc["title"].endswith(", load threads on load") and len(doc["rows"]) == 2
    assert all(r["probe_target"] == "probe" and r["load_target"] == "load" for r in doc["rows"])
    assert all(r["latency_median_ns"] is not None and r["bw_gbps_mean"] > 0 for r in doc["rows"])
    df = pd.read_csv(out, dtype={"thread": str})
    assert set(df["load_target"]) == {"load"} and set(df["target_label"]) == {"probe"}
    agg = df[df["thread"] == "all"]
    assert set(agg["status"]) == {"ok"} and set(agg["target_size"]) == {16 << 20}, "the probe's target"


def test_one_liner_on_the_user_backend() -> None:
    res = pmemlab("idle-latency", "--backend", "user", "--count", "1000", "--working-set", "16M")
    assert res.returncode == 0, res.stderr
    assert "user backend" in res.stdout and "on dram (user-dram" in res.stdout
    assert all(float(r[0]) >= 0 for r in table(res.stdout).values())  # TCG: 0 is a real median (above)


@pytest.mark.two_nodes
@pytest.mark.parametrize("command", ["latency-matrix", "bw-matrix"])
def test_matrices_across_two_nodes(tmp_path: Path, module, command: str) -> None:
    """Each cell ran on the CPUs of its row's node against the memory of its column: the runs'
    thread_node and target_node say so."""
    nodes = nodes_with_cpus_and_memory()
    if len(nodes) < 2:
        pytest.skip("guest with one NUMA node (scripts/vm --numa-nodes 2 gives two)")
    out = tmp_path / f"{command}.csv"
    extra = ["--count", "1000"] if command == "latency-matrix" else ["--duration-ms", "30", "--repeats", "1"]
    # 16 MiB targets: in the CXL guest a column is the CXL node, whose memory is emulated MMIO
    with module():
        res = pmemlab(command, "--backend", "kernel", "--dram-size", "16M", "--working-set", "8M",
                      "-o", str(out), *extra)
        assert res.returncode == 0, res.stderr
        assert named_targets() == []
    rows = table(res.stdout)
    assert list(rows)[-2:] == ["advertised (access0)", "measured / advertised"]
    adv = rows.pop("advertised (access0)")
    rows.pop("measured / advertised")
    assert [r.split(" (")[0] for r in rows] == [f"node {n}" for n in nodes]
    header = next(line for line in res.stdout.splitlines() if line.startswith("CPUs \\ memory"))
    assert all(f"dram-node{n} " in header for n in nodes) and "pmem" in header
    # every cell measured; a bandwidth above 0, a latency median at least 0: under TCG the clock
    # steps by 10 ns and a cold load can cost no more than the empty bracket subtracted from it, so
    # 0 ns is a real median (test_one_liners_on_the_module, above)
    assert all("n/a" not in cells for cells in rows.values()), rows
    if command == "latency-matrix":
        assert all(float(c) >= 0 for cells in rows.values() for c in cells), rows
    else:
        assert all(float(c) > 0 for cells in rows.values() for c in cells), rows
    told = os.environ.get("PMEMLAB_HMAT", "").split()
    if told:  # the guest's HMAT (scripts/vm --hmat): a node's own CPUs are its best initiator
        columns = re.split(r"\s{2,}", header.strip())[1:]
        for entry in told:
            i, t, lat, bw = map(int, entry.split(":"))
            name = f"dram-node{t} " + ("median ns" if command == "latency-matrix" else "GB/s")
            if i == t and name in columns:
                want = lat if command == "latency-matrix" else bw / 1000
                assert float(adv[columns.index(name)]) == pytest.approx(want, rel=1e-3), (name, adv)
    df = pd.read_csv(out, dtype={"thread": str})
    threads = df[(df["thread"] != "all") & (df["status"] == "ok")]
    cpu_node = {c: n for n in nodes
                for c in parse_cpulist(Path(f"/sys/devices/system/node/node{n}/cpulist").read_text())}
    assert all(cpu_node[int(r["cpu"])] == int(r["thread_node"]) for _, r in threads.iterrows())
    for label, grp in threads.groupby("target_label"):
        if label.startswith("dram-node"):
            assert set(grp["target_node"]) == {int(label[len("dram-node"):])}
