"""backend=user in the controller: `pmemlab run` / `sweep` through pmemlab-run, same CSV columns."""
from __future__ import annotations

import io
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmemlab import cli
from pmemlab.backends.protocol import SAMPLE_NONE
from pmemlab.backends.user import UserBackend, UserRunOutcome, run_conditions, split_output
from pmemlab.cli.args import split_backend_args
from pmemlab.errors import ParamRefused, PmemlabError
from pmemlab.table import BASE_COLUMNS, rows_for_outcome

from testlib import TOP


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def run_csv(*argv: str) -> tuple[int, pd.DataFrame]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli.main(["run", *argv, "--csv"])
    return rc, pd.read_csv(io.StringIO(buf.getvalue())) if buf.getvalue() else pd.DataFrame()


def test_run_user_backend_csv_has_the_module_columns() -> None:
    rc, df = run_csv("backend=user", "target=dram", "dram_size=8M", "op=ntstore", "threads=2", "count=2000",
                     "access_size=1K")
    assert rc == 0
    assert list(df.columns) == [c for c in BASE_COLUMNS if c in df.columns], "same order as a module run"
    for col in ("ops", "bytes", "bw_gbps", "elapsed_ns", "width_used", "target_kind", "target_page_size"):
        assert col in df.columns
    agg = df[df["thread"].astype(str) == "all"].iloc[0]
    assert agg["ops"] == 4000 and agg["bytes"] == 4000 * 1024 and agg["status"] == "ok"
    assert agg["target_kind"] == "user-dram" and agg["target"] == "dram"


def test_run_user_backend_refusal_and_options() -> None:
    # the controller checks the target size itself (nothing runs) ...
    rc, df = run_csv("--backend", "user", "--target", "dram", "dram_size=4M", "working_set=8M")
    assert rc == 2 and df.empty
    # ... and every rule of the combination too, with the module's validator: nothing runs
    rc, df = run_csv("--backend", "user", "--target", "dram", "dram_size=4M", "fence=sfence",
                     "fence_interval=192", "access_size=256")
    assert rc == 2 and df.empty
    with pytest.raises(PmemlabError):
        split_backend_args({"backend": "gpu"})
    assert cli.main(["run", "dram_size=4M"]) != 0  # a target option without backend=user


def test_run_user_backend_csv_carries_the_runs_own_pages() -> None:
    """target_page_size / target_pages / map_sync come from the run's mapping, per row."""
    rc, df = run_csv("backend=user", "target=dram", "dram_size=8M", "dram_pages=4k", "op=store", "count=100")
    assert rc == 0
    agg = df[df["thread"].astype(str) == "all"].iloc[0]
    assert (agg["target_page_size"], agg["target_pages"], agg["map_sync"]) == (4096, "4k", 0)
    rc, df = run_csv("backend=user", "target=dram", "dram_size=64M", "dram_pages=2m", "op=load", "count=100")
    agg = df[df["thread"].astype(str) == "all"].iloc[0]
    assert rc == 0 and agg["target_pages"] == "thp"
    thp = "[never]" not in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    assert agg["target_page_size"] == (2 << 20 if thp else 4096)


def test_run_user_backend_file_size_creates_it_and_allow_file(tmp_path: Path) -> None:
    """A file target through the controller: size= creates it for a write run (the facts probe says
    the size a run maps, not "empty"), a file not on DAX needs allow_file=1, and a refusal is bad
    input (exit 2) that leaves no file."""
    pool = tmp_path / "pool"
    rc, df = run_csv("backend=user", f"target={pool}", "size=4M", "op=ntstore", "count=100", "access_size=4K")
    assert rc == 2 and df.empty and not pool.exists()
    rc, df = run_csv("backend=user", f"target={pool}", "size=4M", "allow_file=1", "op=ntstore", "count=100",
                     "access_size=4K")
    assert rc == 0, df
    agg = df[df["thread"].astype(str) == "all"].iloc[0]
    assert (agg["status"], agg["target_kind"], agg["target_size"]) == ("ok", "user-file", 4 << 20)
    assert pool.stat().st_size == 4 << 20
    b = UserBackend(str(pool), {"size": "8M", "allow_file": "1"})
    assert b.facts()["target_size"] == 8 << 20 and b.facts()["dax"] == 0
    # over a target axis too: the file the sweep's write runs use is created at size
    cfg = tmp_path / "f.toml"
    cfg.write_text('[sweep]\nname = "f"\n[base]\ncount = 200\naccess_size = "4K"\n[axes]\nop = ["ntstore", "load"]\n')
    fresh = tmp_path / "fresh"
    out = tmp_path / "f.csv"
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress", "--backend", "user",
                     "--targets", f"fresh={fresh} size=4M allow_file=1"]) == 0
    rows = pd.read_csv(out, dtype={"thread": str})
    agg = rows[rows["thread"] == "all"]
    assert (agg["status"] == "ok").all() and set(agg["target_size"]) == {4 << 20}, agg
    assert fresh.stat().st_size == 4 << 20


def test_run_conditions_override_the_facts_probe() -> None:
    b = UserBackend("dram", {"dram_size": "8M", "dram_pages": "4k"})
    out = b.run({"op": "load", "count": 10})
    assert isinstance(out, UserRunOutcome) and out.ok
    assert out.conditions == {"target_kind": "user-dram", "target_size": 8 << 20, "target_node": 0,
                              "target_page_size": 4096, "target_pages": "4k", "map_sync": 0,
                              "target_placement": "any"}  # no node asked: no nodes, weights or bytes
    out = UserBackend("dram", {"dram_size": "8M", "dram_pages": "4k", "dram_nodes": "0", "dram_weights": "2"}).run(
        {"op": "load", "count": 10})
    assert {k: v for k, v in out.conditions.items() if k.startswith("target_n") or k.endswith(("weights", "placement"))} \
        == {"target_node": 0, "target_nodes": "0", "target_weights": "2", "target_node_bytes": "0:8388608",
            "target_placement": "node"}
    rows = rows_for_outcome({"sweep": "s", "point": 0, "point_key": "", "repeat": 0}, {}, out, "ok", "", 1e6,
                            {"target_page_size": 123, "target_pages": None, "cpu_model": "x"})
    assert all(r["target_page_size"] == 4096 and r["target_pages"] == "4k" and r["cpu_model"] == "x" for r in rows)


def test_unknown_page_size_is_an_empty_cell() -> None:
    """The runner prints target_page_size 0 when smaps does not show the pages (fsdax files)."""
    cond = run_conditions({"target_page_size": 0, "target_pages": "file", "map_sync": 1, "version": "x"})
    assert cond == {"target_page_size": None, "target_pages": "file", "map_sync": 1}
    assert run_conditions({"target_page_size": 4096})["target_page_size"] == 4096


def test_user_backend_delay_ticks_slows_the_loop() -> None:
    """delay_ticks on the user backend: at most one access per delay_ticks of the run's time."""
    b = UserBackend("dram", {"dram_size": "8M", "dram_pages": "4k"})
    delay = 200_000
    rows = {}
    for d in (0, delay):
        out = b.run({"op": "load", "duration_ms": 200, "delay_ticks": d})
        assert out.ok, out.error
        rows[d] = [dict(f.split("=", 1) for f in ln.split()) for ln in out.result.splitlines()][-1]
    slow, fast = int(rows[delay]["ops"]), int(rows[0]["ops"])
    assert 0 < slow <= int(rows[delay]["ticks"]) // delay + 1, rows[delay]
    # by the counts, not by a ratio of the two runs' speeds (fast > 20 x slow: a run starved of its
    # CPU for its window runs one late segment of a batch): the run without a delay did more
    # accesses than its own ticks would hold at one per delay (as the guest's test_delay_ticks)
    assert fast * delay > int(rows[0]["ticks"]), (rows[0], delay)


def test_user_backend_latency_histogram() -> None:
    b = UserBackend("dram", {"dram_size": "4M", "dram_pages": "4k"})
    f = b.facts()
    assert f["target_kind"] == "user-dram" and f["target_page_size"] == 4096 and f["tsc_khz"] > 0
    out = b.run({"mode": "latency", "count": 2000, "pattern": "rand"})
    assert out.ok and out.result.count("\n") == 2
    assert sum(int(ln.split()[3]) for ln in out.histogram.splitlines() if ln.startswith("all ")) == 2000
    with pytest.raises(ParamRefused):
        b.run({"mode": "latency", "probe": 1, "threads": 2})


def test_user_backend_raw_samples() -> None:
    """samples = N: the runner writes each latency thread's first N samples to a file the
    backend reads back, as the module's raw_samples; they agree with the run's statistics."""
    b = UserBackend("dram", {"dram_size": "4M", "dram_pages": "4k"})
    out = b.run({"mode": "latency", "count": 500, "samples": 200, "threads": 2, "pattern": "rand"})
    assert out.ok, out.error
    ticks = out.sample_ticks()
    assert len(out.raw_samples) == 2 * 200 * 8 and len(ticks) == 400 and len(set(ticks)) > 1
    rows = [dict(f.split("=", 1) for f in ln.split()) for ln in out.result.splitlines()]
    for thread, row in enumerate(rows[:2]):
        mine = ticks[thread * 200:(thread + 1) * 200]
        assert int(row["lat_min"]) <= min(mine) and max(mine) <= int(row["lat_max"])
    assert b.run({"mode": "latency", "count": 100}).raw_samples == b""
    # samples > count: each thread's slots past its count hold the not-filled value (all ones),
    # which no sample taken has, and the reader leaves them out
    out = b.run({"mode": "latency", "count": 30, "samples": 100, "threads": 2})
    raw = np.frombuffer(out.raw_samples, dtype="<u8").reshape(2, 100)
    assert (raw[:, 30:] == SAMPLE_NONE).all() and (raw[:, :30] < SAMPLE_NONE).all()
    assert [len(t) for t in out.samples_by_thread()] == [30, 30]


def test_split_output() -> None:
    text = "#fact target dram\nthread=0 ops=1\nthread=all ops=1\n# histogram\n0 5 5 1\nall 5 5 1\n#state done\n"
    assert split_output(text) == ("thread=0 ops=1\nthread=all ops=1\n", "0 5 5 1\nall 5 5 1\n", "done")


def test_engine_ceiling_and_loop_bound_columns() -> None:
    """Every bandwidth row carries the engine's ceiling (same loop, cache-resident) and loop_bound;
    the loop and its instructions are columns too. Latency rows carry no ceiling."""
    rc, df = run_csv("backend=user", "target=dram", "dram_size=8M", "op=load", "width=32", "threads=2",
                     "working_set=64K", "access_size=4K", "duration_ms=200")
    assert rc == 0
    for _, row in df.iterrows():
        assert row["engine_ceiling_gbps"] == pytest.approx(row["ceiling_mbps"] / 1000)
        assert row["engine_ceiling_gbps"] > 0
        assert bool(row["loop_bound"]) == (row["bw_gbps"] >= 0.5 * row["engine_ceiling_gbps"])
        assert (row["insn"], row["loop"]) == ("vmovdqa", "pl_bw_load_32_linear")
    agg = df[df["thread"].astype(str) == "all"].iloc[0]
    threads = df[df["thread"].astype(str) != "all"]
    assert agg["ceiling_mbps"] == pytest.approx(threads["ceiling_mbps"].sum(), abs=0.01)
    rc, df = run_csv("backend=user", "target=dram", "dram_size=8M", "mode=latency", "count=200")
    assert rc == 0
    for col in ("engine_ceiling_gbps", "loop_bound"):
        assert col not in df or df[col].isna().all(), col
    assert set(df["loop"]) == {"pl_lat_load_64" if "avx512f" in Path("/proc/cpuinfo").read_text() else "pl_lat_load_32"}


def test_loop_bound_is_half_the_ceiling() -> None:
    from pmemlab.results import parse_result
    line = "thread=all cpu=-1 op=load width=64 mode=bandwidth insn=vmovdqa64 loop=pl_bw_load_64_linear " \
           "ops=1 bytes=64 ticks=1 bw_mbps={bw} ceiling_mbps=20000.000"
    for bw, bound in ((9999.999, False), (10000.0, True), (30000.0, True)):
        row = parse_result(line.format(bw=bw), 2e6)[0]
        assert row["engine_ceiling_gbps"] == 20.0 and row["loop_bound"] is bound, bw
    row = parse_result("thread=all op=load mode=latency ops=1 bytes=64 ticks=1 bw_mbps=1.0", 2e6)[0]
    assert "loop_bound" not in row and "engine_ceiling_gbps" not in row


def test_an_outrun_ceiling_gives_no_loop_bound() -> None:
    """ceiling_src=reused-low (core/ceil.c: the run outran the ceiling it reused, so that ceiling is
    stale): the row keeps what the run reported, but no engine_ceiling_gbps nor loop_bound is derived
    from it (a stale-low ceiling would mark the point loop-bound falsely)."""
    from pmemlab.results import parse_result
    line = "thread=all cpu=-1 op=load width=64 mode=bandwidth ops=1 bytes=64 ticks=1 bw_mbps=7000.000 " \
           "ceiling_mbps=5600.000 ceiling_src={src}"
    row = parse_result(line.format(src="reused-low"), 2e6)[0]
    assert row["ceiling_src"] == "reused-low" and row["ceiling_mbps"] == 5600.0
    assert "engine_ceiling_gbps" not in row and "loop_bound" not in row
    for src in ("measured", "reused"):
        row = parse_result(line.format(src=src), 2e6)[0]
        assert row["engine_ceiling_gbps"] == 5.6 and row["loop_bound"] is True, src
