"""The MLC-style one-liners: idle-latency, loaded-latency, peak-bw, latency-matrix, bw-matrix on the
fake module (reloadable, two NUMA nodes for the matrices) and on the real user backend; tables
with units and statistics, --json, -o into a sweep CSV the figures render."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from oneliner_bed import fake_module_bed

import pmemlab.cli as cli
import pmemlab.host.machine as machine
from pmemlab.cli import oneliners
from pmemlab import params as P

TWO_NODES = {"nodes": [{"node": 0, "cpus": "0", "mem_total_kib": 1 << 20, "distances": [10, 20]},
                       {"node": 1, "cpus": "1", "mem_total_kib": 1 << 20, "distances": [20, 10]}],
             "source": "fixture"}


@pytest.fixture
def fake_bed(tmp_path, monkeypatch):
    """The fake module as the loaded kernel backend, with named targets; 2 online CPUs on one node."""
    fake = fake_module_bed(tmp_path, monkeypatch, cpu_features="sse2 avx avx2 clflush clflushopt rdtscp")  # no clwb
    monkeypatch.setattr(oneliners.matrix, "fsdax_namespaces", lambda host: ["/dev/pmem0"])
    monkeypatch.delenv("PMEMLAB_PMEM_DRAM", raising=False)
    return fake


def run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    return code, capsys.readouterr().out


def table_rows(out: str) -> dict[str, list[str]]:
    """The printed table's rows by their first cell (cells split on two or more spaces)."""
    import re

    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if not line.strip()) + 1
    rows: dict[str, list[str]] = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def test_idle_latency_table_on_the_module(fake_bed, capsys):
    fake = fake_bed
    code, out = run(capsys, "idle-latency", "--backend", "kernel", "--count", "500")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("pmemlab idle-latency (kernel backend") and "/dev/pmem0 (fsdax, node 0)" in lines[0]
    assert "median, p5 and p95 of every sample" in lines[1] and "500 samples per row" in lines[1]
    assert "access  " in lines[3] and "median ns" in lines[3] and "samples" in lines[3]
    rows = table_rows(out)
    assert list(rows) == ["load, random, cold line", "load, sequential, cold line", "store+clwb, warm line",
                          "ntstore, warm line"]
    # the fake's histogram: thread 0 buckets at 600, 608, 1200 ticks (16, 16, 22 samples) at 2 GHz: the median is the 27th, in the 608 bucket
    assert rows["ntstore, warm line"][0] == "306.0" and rows["ntstore, warm line"][5] == "54" and rows["ntstore, warm line"][6:] == ["n/a", "n/a"]
    assert rows["store+clwb, warm line"][:5] == ["n/a"] * 5, "no clwb on this CPU"
    assert "n/a store+clwb, warm line: skipped: op: store+clwb at width 8 (mov+clwb) needs clwb" in out
    ran = [(r["op"], r["pattern"], r["cold"], r["warm"], r["count"], r["working_set"]) for r in fake.runs]
    assert ran == [("load", "rand", "1", "0", "500", str(1 << 30)), ("load", "seq", "1", "0", "500", str(1 << 30)),
                   ("ntstore", "seq", "0", "1", "500", str(1 << 30))]


def test_idle_latency_json_and_two_targets(fake_bed, capsys):
    fake = fake_bed
    code, out = run(capsys, "idle-latency", "--backend", "kernel", "--count", "500", "--json",
                    "--targets", "pmem=/dev/pmem0,dram=dram dram_size=64M")
    assert code == 0
    doc = json.loads(out)
    assert doc["command"] == "idle-latency" and len(doc["rows"]) == 8
    assert set(doc["rows"][0]) == {"target", "access", "op", "pattern", "median_ns", "p5_ns", "p95_ns", "mean_ns",
                                   "max_ns", "samples", "advertised_ns", "median_over_advertised"}
    assert (doc["rows"][0]["target"], doc["rows"][0]["access"]) == ("pmem", "load, random, cold line")
    assert (doc["rows"][4]["target"], doc["rows"][4]["median_ns"]) == ("dram", 306.0)
    assert doc["rows"][2]["median_ns"] is None
    assert fake.adds == ["pmem /dev/pmem0", "dram dram dram_size=64M"], "a named target each, no reload"
    assert fake.removes == ["dram", "pmem"] and not fake.named, "removed after: the command added them"
    # the 64 MiB DRAM target sizes the window of both
    assert {r["working_set"] for r in fake.runs} == {str(64 << 20)}


def test_loaded_latency_latency_and_bandwidth_per_delay(fake_bed, capsys):
    fake = fake_bed
    code, out = run(capsys, "loaded-latency", "--backend", "kernel", "--duration-ms", "5", "--delays",
                    "0,1000,10000", "--repeats", "2")
    assert code == 0
    assert "thread 0 probes the latency of single loads (rand) while 1 thread(s) inject" in out
    rows = table_rows(out)
    assert list(rows) == ["0", "1000", "10000"]
    assert [rows[d][0] for d in rows] == ["0.000", "500.0", "5000"], "delay ns at the module's 2 GHz TSC"
    bw = [float(rows[d][4]) for d in rows]
    assert bw[0] > bw[1] > bw[2] > 0 and all(float(rows[d][5]) >= 0 for d in rows), "mean and its CI"
    assert all(rows[d][1] == "306.0" for d in rows), "the probe's median from the all histogram"
    assert {(r["probe"], r["threads"], r["op"]) for r in fake.runs} == {("1", "2", "load")} and len(fake.runs) == 6


def test_peak_bandwidth_per_op_and_mix(fake_bed, capsys):
    fake = fake_bed
    code, out = run(capsys, "peak-bw", "--backend", "kernel", "--duration-ms", "5", "--json")
    assert code == 0
    doc = json.loads(out)
    rows = {r["access"]: r for r in doc["rows"]}
    assert list(rows) == ["load", "ntload", "store", "ntstore", "store+clwb", "store+clflushopt", "store+clflush",
                          "3:1 load:store", "2:1 load:store", "1:1 load:store"]
    assert rows["load"]["runs"] == 3 and rows["load"]["bw_gbps_mean"] > rows["ntstore"]["bw_gbps_mean"] > 0
    assert rows["store+clwb"]["bw_gbps_mean"] is None and rows["store+clwb"]["runs"] == 0
    assert rows["3:1 load:store"]["read_pct"] == 75 and rows["3:1 load:store"]["op"] == "store"
    assert any("store+clwb: skipped: op: store+clwb at width" in n for n in doc["notes"])
    assert "GB/s (1e9 B/s), all 2 threads together: mean over 3 run(s) of 5 ms and its 95 % CI" in doc["statistic"]
    assert {(r["mode"], r["threads"], r["access_size"]) for r in fake.runs} == {("bandwidth", "2", "256")}


@pytest.mark.parametrize("command", ["latency-matrix", "bw-matrix"])
def test_matrices_nodes_by_memories(fake_bed, capsys, monkeypatch, command):
    fake = fake_bed
    monkeypatch.setattr(machine, "numa_info", lambda host: TWO_NODES)
    extra = ["--count", "500"] if command == "latency-matrix" else ["--duration-ms", "5", "--repeats", "1"]
    code, out = run(capsys, command, "--backend", "kernel", *extra)
    assert code == 0
    lines = out.splitlines()
    header = lines[3]
    assert header.split("  ")[0] == "CPUs \\ memory"
    unit = "median ns" if command == "latency-matrix" else "GB/s"
    for column in ("dram-node0", "dram-node1", "pmem0 (/dev/pmem0, node 0)"):
        assert f"{column} {unit}" in header
    rows = table_rows(out)
    cpus = ("0", "1") if command == "latency-matrix" else ("0", "1")
    assert list(rows) == [f"node 0 (CPU {cpus[0]})", f"node 1 (CPU {cpus[1]})", "advertised (access0)",
                          "measured / advertised"]
    assert all(len(cells) == 3 for cells in rows.values())
    assert all("n/a" not in rows[f"node {n} (CPU {cpus[n]})"] for n in (0, 1))
    assert fake.adds[:3] == ["dram-node0 dram dram_node=0 dram_size=256M", "dram-node1 dram dram_node=1 dram_size=256M",
                             "pmem0 /dev/pmem0"]
    # each cell ran on the row's CPUs against the column's target
    assert sorted({(r["cpus"], r["threads"]) for r in fake.runs}) == [("0", "1"), ("1", "1")]
    assert len(fake.runs) == 6
    code, out = run(capsys, command, "--backend", "kernel", "--json", *extra)
    cells = json.loads(out)["rows"]
    assert {(c["cpu_node"], c["memory"]) for c in cells} == {(n, m) for n in (0, 1)
                                                             for m in ("dram-node0", "dram-node1", "pmem0")}


def test_one_liner_output_is_a_sweep_csv_the_figures_render(fake_bed, capsys, tmp_path):
    fake = fake_bed
    out = tmp_path / "res" / "idle-latency.csv"
    code, _ = run(capsys, "idle-latency", "--backend", "kernel", "--count", "500", "-o", str(out),
                  "--targets", "pmem=/dev/pmem0,dram")
    assert code == 0
    df = pd.read_csv(out, dtype={"thread": str})
    assert set(df["target_label"]) == {"pmem", "dram"} and out.with_suffix(".json").exists()
    assert cli.main(["plot-all", str(out.parent), "-o", str(tmp_path / "plots")]) == 0
    assert (tmp_path / "plots" / "idle-latency.png").exists()


def test_user_backend_one_liners_for_real(capsys):
    """pmemlab-run on this machine's DRAM: the numbers are the host's (noisy: other work runs);
    the tables have every row with a value."""
    code, out = run(capsys, "idle-latency", "--backend", "user", "--count", "2000", "--working-set", "16M")
    assert code == 0
    rows = table_rows(out)
    assert len(rows) == 4 and all(float(cells[0]) > 0 for cells in rows.values())
    code, out = run(capsys, "peak-bw", "--backend", "user", "--duration-ms", "10", "--repeats", "1",
                    "--working-set", "16M", "--threads", "1", "--json")
    assert code == 0
    doc = json.loads(out)
    done = [r for r in doc["rows"] if r["bw_gbps_mean"] is not None]
    assert len(done) >= 7 and all(r["bw_gbps_mean"] > 0 for r in done)
    code, out = run(capsys, "latency-matrix", "--backend", "user", "--count", "1000", "--dram-size", "16M", "--json")
    assert code == 0
    cells = json.loads(out)["rows"]
    assert cells and all(c["memory"].startswith("dram-node") and c["latency_median_ns"] > 0 for c in cells)


def test_bad_options_are_one_line_errors(fake_bed, capsys):
    assert cli.main(["peak-bw", "--backend", "kernel", "--threads", "0"]) == 2
    assert "--threads 0" in capsys.readouterr().err
    assert cli.main(["idle-latency", "--backend", "kernel", "--targets", "x=dram dram"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("pmemlab: ") and "not KEY=VALUE" in err and "Traceback" not in err


def test_output_checked_before_anything_runs(fake_bed, capsys, tmp_path):
    """-o as `pmemlab sweep` checks it: a NAME.csv name, and never a file a sweep did not write."""
    fake = fake_bed
    mine = tmp_path / "idle-latency.csv"
    mine.write_text("mine,not,pmemlab\n1,2,3\n")
    assert cli.main(["idle-latency", "--backend", "kernel", "--count", "500", "-o", str(mine)]) == 2
    assert "not a pmemlab sweep CSV; not taking it over" in capsys.readouterr().err
    assert mine.read_text() == "mine,not,pmemlab\n1,2,3\n" and not fake.runs and not fake.adds
    assert cli.main(["peak-bw", "--backend", "kernel", "-o", str(tmp_path / "peak.txt")]) == 2
    assert "not a NAME.csv name" in capsys.readouterr().err and not fake.runs
    assert cli.main(["loaded-latency", "--backend", "kernel", "--timeout", "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "give a number of seconds > 0" in err and not fake.runs


def test_advertised_beside_measured() -> None:
    """The advertised value a row is held against: reads by read latency and bandwidth, writes by
    write, a load:store mix by the time each share takes; the ratio is measured / advertised."""
    import math

    import pandas as pd

    from pmemlab.cli import oneliners as ol

    rows = pd.DataFrame([{"thread": "all", "target_label": "cxl", "adv_read_latency_ns": 250, "adv_write_latency_ns": 300,
                          "adv_read_bw_mbps": 8000, "adv_write_bw_mbps": 2000, "adv_node": 2},
                         {"thread": "all", "target_label": "dram", "adv_node": 0}])
    adv = ol.advertised_of(rows, "cxl")
    assert (adv["read_ns"], adv["write_ns"], adv["read_gbps"], adv["write_gbps"]) == (250, 300, 8.0, 2.0)
    assert ol.advertised_latency(adv, "load") == 250 and ol.advertised_latency(adv, "ntstore") == 300
    assert ol.advertised_bandwidth(adv, "ntload") == 8.0 and ol.advertised_bandwidth(adv, "store+clwb") == 2.0
    assert ol.advertised_bandwidth(adv, "store", 50) == 1 / (0.5 / 8 + 0.5 / 2)
    assert ol.ratio(500.0, 250.0) == 2.0 and math.isnan(ol.ratio(1.0, math.nan)) and math.isnan(ol.ratio(math.nan, 2))
    none = ol.advertised_of(rows, "dram")
    assert all(math.isnan(none[k]) for k in ("read_ns", "write_ns", "read_gbps", "write_gbps"))
    assert math.isnan(ol.advertised_bandwidth(none, "store", 75))
    assert "no HMAT" in ol.advertised_note(rows[rows["target_label"] == "dram"])[0]


# --------------------------------------------------------------------------
# named targets: --target NAME, loaded-latency's --probe-target and --load-target
# --------------------------------------------------------------------------
def test_one_liner_on_a_named_target(fake_bed, capsys):
    """--target NAME on the module: the named target targets/NAME, found (never added or removed),
    its rows labelled with the name; a name the module does not hold is one line."""
    fake = fake_bed
    fake.write(fake.root / "targets" / "add", "cxl dram dram_size=32M dram_node=0\n")
    code, out = run(capsys, "idle-latency", "--backend", "kernel", "--target", "cxl", "--count", "500", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["title"].endswith(" on dram (dram, node 0)") and len(doc["rows"]) == 4
    assert {r["working_set"] for r in fake.runs} == {str(32 << 20)}, "sized by the named target"
    assert fake.adds == ["cxl dram dram_size=32M dram_node=0"] and fake.removes == [] and "cxl" in fake.named
    assert (fake.root / "run_id").read_text() == "", "the top level ran nothing"
    code = cli.main(["idle-latency", "--backend", "kernel", "--target", "nosuch", "--count", "500"])
    err = capsys.readouterr().err
    assert code == 1 and "pmemlab: target nosuch: the module holds no target named nosuch" in err


def test_loaded_latency_probe_on_one_target_load_on_another(fake_bed, capsys, tmp_path):
    fake = fake_bed
    for line in ("cxl dram dram_size=32M dram_node=0", "dram dram dram_size=64M"):
        fake.write(fake.root / "targets" / "add", line + "\n")
    argv = ["loaded-latency", "--backend", "kernel", "--duration-ms", "5", "--delays", "0,1000", "--repeats", "1",
            "--probe-target", "cxl"]
    code, out = run(capsys, *argv, "--json")
    assert code == 0
    assert json.loads(out)["title"].endswith(" on dram (dram, node 0)")
    assert len(fake.runs) == 2 and {r.get("load_target", "") for r in fake.runs} == {""}
    code = cli.main(["loaded-latency", "--backend", "kernel", "--probe-target", "cxl", "--target", "dram"])
    assert code == 2 and "--probe-target cxl with --target dram" in capsys.readouterr().err
    code = cli.main([*argv, "--load-target", "dram", "--targets", "pmem"])
    assert code == 2 and "--load-target dram with --targets pmem" in capsys.readouterr().err
    csv = tmp_path / "ll.csv"
    code = cli.main([*argv, "--load-target", "dram", "--json", "-o", str(csv)])
    out, err = capsys.readouterr()
    if "load_target" not in P.PARAMS:  # the module and runner of this tree before the parameter
        assert code == 2 and "this build's parameter table has no load_target" in err
        return
    assert code == 0, err
    doc = json.loads(out)
    assert doc["title"].endswith(", load threads on dram") and "inject loads into dram" in doc["statistic"]
    assert {(r["probe_target"], r["load_target"]) for r in doc["rows"]} == {("cxl", "dram")}
    assert {r["load_target"] for r in fake.runs[2:]} == {"dram"}, "the runs carry the load target"
    rows = pd.read_csv(csv, dtype={"thread": str})
    assert set(rows["load_target"]) == {"dram"} and set(rows["target_label"]) == {"cxl"}
    assert set(rows["target_size"]) == {32 << 20}, "the probe's target"


def test_loaded_latency_on_the_user_backend_loads_another_target(tmp_path, capsys):
    """The runner for real: thread 0 probes target=dram while the load thread runs on the runner's
    second target, load_target=dram:0; -o's rows carry it (and give the table, as memory does)."""
    out = tmp_path / "ll.csv"
    code = cli.main(["loaded-latency", "--backend", "user", "--probe-target", "dram", "--load-target", "dram:0",
                     "--duration-ms", "20", "--delays", "0", "--threads", "2", "--working-set", "4M", "--repeats", "1",
                     "--json", "-o", str(out)])
    doc, err = capsys.readouterr()
    assert code == 0, err
    (row,) = json.loads(doc)["rows"]
    assert (row["probe_target"], row["load_target"], row["runs"]) == ("dram", "dram:0", 1)
    assert row["bw_gbps_mean"] > 0 and row["latency_median_ns"] is not None
    rows = pd.read_csv(out, dtype={"thread": str})
    assert set(rows["load_target"]) == {"dram:0"} and set(rows["status"]) == {"ok"}


# ---------------------------------------------------------------------------------------------
# a named target on the user backend (issue 34): README's one-liners with no module loaded
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def cxl_sys(tmp_path, monkeypatch):
    """A CXL machine whose ram region is onlined into node 0 (this host's node, for the runner)."""
    from cxl_sysfs import make_cxl_sysfs

    import pmemlab.backends.user as user

    sysd = make_cxl_sysfs(tmp_path / "sys", node=0)
    monkeypatch.setattr(user, "SYS", sysd)
    return sysd


def test_user_target_names(tmp_path, monkeypatch):
    from cxl_sysfs import make_cxl_sysfs

    from pmemlab.backends.user import user_target
    from pmemlab.errors import BadInput

    assert user_target("cxl", sys=make_cxl_sysfs(tmp_path / "a")) == "dram:2"  # the kmem region's node
    assert user_target("cxl", sys=make_cxl_sysfs(tmp_path / "b", kmem=False)) == "/dev/dax0.0"  # else a devdax
    for same in ("dram", "dram:1", "/dev/dax1.0", "./cxl", "pool.bin"):
        assert user_target(same, sys=tmp_path / "none") == same
    with pytest.raises(BadInput) as info:
        user_target("cxl", sys=tmp_path / "none")
    assert "no CXL ram region" in info.value.cause and "dram:NODE" in info.value.fix
    monkeypatch.chdir(tmp_path)
    with pytest.raises(BadInput) as info:
        user_target("pm", "load_target", sys=tmp_path / "none")
    assert info.value.cause.startswith("user backend load_target pm: no file pm here, and named targets are the module's")
    assert "size=" not in info.value.cause + info.value.fix and "dram:NODE" in info.value.fix
    (tmp_path / "pm").write_text("a file of that name")
    assert user_target("pm", sys=tmp_path / "none") == "pm"


def test_user_backend_runs_cxl_on_the_cxl_node(cxl_sys, tmp_path, capsys):
    """`idle-latency --targets dram,cxl` and `loaded-latency --probe-target cxl --load-target dram`
    with no module: the runner on the CXL region's node (dram:0 here), the label cxl kept."""
    out = tmp_path / "idle.csv"
    code = cli.main(["idle-latency", "--backend", "user", "--targets", "dram,cxl", "--count", "200",
                     "--working-set", "1M", "--repeats", "1", "-o", str(out)])
    assert code == 0, capsys.readouterr().err
    rows = pd.read_csv(out, dtype={"thread": str})
    rows = rows[rows["thread"] == "all"]
    assert set(rows["status"]) == {"ok"} and set(rows["target_label"]) == {"dram", "cxl"}
    assert set(rows[rows["target_label"] == "cxl"]["target_node"]) == {0}
    capsys.readouterr()
    for probe_t, load_t in (("cxl", "dram"), ("dram", "cxl")):
        code = cli.main(["loaded-latency", "--backend", "user", "--probe-target", probe_t, "--load-target", load_t,
                         "--duration-ms", "20", "--delays", "0", "--threads", "2", "--working-set", "4M",
                         "--repeats", "1", "--json"])
        doc, err = capsys.readouterr()
        assert code == 0, err
        (row,) = json.loads(doc)["rows"]
        assert (row["probe_target"], row["load_target"]) == (probe_t, load_t) and row["bw_gbps_mean"] > 0


def test_user_backend_answers_a_bare_name_in_one_line(tmp_path, monkeypatch, capsys):
    """A bare name that is no file here: one line saying named targets are the module's and what to
    give instead, never to give size= (which would make a file of that name); nothing created."""
    import pmemlab.backends.user as user

    monkeypatch.setattr(user, "SYS", tmp_path / "no-cxl")
    monkeypatch.chdir(tmp_path)
    for argv in (["idle-latency", "--backend", "user", "--target", "pm", "--count", "100"],
                 ["loaded-latency", "--backend", "user", "--probe-target", "cxl", "--load-target", "dram"]):
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "dram:NODE" in err[0] and "size=" not in err[0], err
    code = cli.main(["idle-latency", "--backend", "user", "--targets", "dram,pm", "--count", "100",
                     "--working-set", "1M", "--repeats", "1"])
    out, err = capsys.readouterr()
    assert code != 0 and "named targets are the module's" in out + err and "size=" not in out + err
    assert sorted(p.name for p in tmp_path.iterdir()) == [], "no file made"


def _old_config_text(name: str, description: str, repeats: int, base: dict, zips=(), axes=None) -> str:
    """The TOML the one-liners wrote and parsed again before they built their sweeps as data (kept
    here as the reference the data must match)."""
    def value(v) -> str:
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, bool):
            return "true" if v else "false"
        return str(v) if isinstance(v, (int, float)) else json.dumps(str(v))

    lines = ["[sweep]", f"name = {value(name)}", f"description = {value(description)}", f"repeats = {repeats}", "",
             "[base]", *(f"{k} = {value(v)}" for k, v in base.items())]
    if axes:
        lines += ["", "[axes]", *(f"{k} = {value(v)}" for k, v in axes.items())]
    for group in zips:
        lines += ["", "[[zip]]", *(f"{k} = {value(v)}" for k, v in group.items())]
    return "\n".join(lines) + "\n"


def test_each_one_liner_is_a_file_that_builds_its_sweep_as_data(monkeypatch):
    """A file per command under cli/oneliners/, its ONE the family's row; no TOML written or read
    there; each command's sweep, built as data, is the config its old TOML text parsed to (the same
    base, axes, zip tables and resume identity: a CSV an older one-liner wrote resumes)."""
    import importlib

    from pmemlab.cli.oneliners.bed import Sizing
    from pmemlab.config import parse_config
    from pmemlab.sweep.resume import config_identity

    package = Path(oneliners.__file__).parent
    source = "\n".join(p.read_text() for p in package.glob("*.py"))
    assert "parse_config" not in source and "tomllib" not in source and "[base]" not in source
    monkeypatch.setattr(machine, "numa_info", lambda host=None: {
        "nodes": [{"node": 0, "cpus": "0-1", "mem_total_kib": 1 << 20}, {"node": 1, "cpus": "", "mem_total_kib": 1 << 20}]})
    size = Sizing(target_size=1 << 30, node_threads=2, node_cpus={0: (0, 1), 1: (2, 3)}, tsc_khz=2e6)
    parser = cli.build_parser()
    for name, one in oneliners.ONELINERS.items():
        module = importlib.import_module(f"pmemlab.cli.oneliners.{name.replace('-', '_')}")
        assert module.ONE is one, name
        cfg = one.config(parser.parse_args([name]), size)
        assert cfg.text == "" and cfg.source == f"pmemlab {name}"
        d = cfg.data
        old = parse_config(_old_config_text(d["sweep"]["name"], d["sweep"]["description"], d["sweep"]["repeats"],
                                            d["base"], d.get("zip", ()), d.get("axes")), source=f"pmemlab {name}")
        assert (cfg.name, cfg.description, cfg.repeats, cfg.base) == (old.name, old.description, old.repeats, old.base)
        assert [(a.keys, a.values, a.table) for a in cfg.axes] == [(a.keys, a.values, a.table) for a in old.axes], name
        assert config_identity(cfg) == config_identity(old), name
