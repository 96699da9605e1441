"""Sweeps against the fake module: CSV schema, sidecar, resume, Ctrl-C, failures, adaptive repeats."""

from __future__ import annotations

import json
import sys
from textwrap import dedent

import pandas as pd
import pytest

from sweep_toml import bandwidth_toml

import pmemlab.cli as cli
import pmemlab.cli.backend as cli_backend
from pmemlab import exitcodes
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab.host import ipmctl
from pmemlab.params import PARAM_NAMES
from pmemlab.table import CONDITION_COLUMNS, ID_COLUMNS

from testlib import HOST_FIXTURES

FIX = HOST_FIXTURES

CONFIG = bandwidth_toml('op = ["load", "ntstore", "store+clwb"]\naccess_size = "64..4096 *8"')


@pytest.fixture
def config_text() -> str:
    return CONFIG


def sweep(cfg, out, *extra):
    return cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress", *extra])


def test_csv_schema_and_sidecar(env):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    df = pd.read_csv(out)
    assert len(fake.runs) == 9 * 2
    # a row per (point, repeat, thread) plus an aggregate row per (point, repeat)
    assert len(df) == 9 * 2 * 2
    assert (df.groupby(["point", "repeat"]).size() == 2).all()
    agg = df[df["thread"] == "all"]
    assert len(agg) == 18 and (agg["status"] == "ok").all()
    cols = list(df.columns)
    assert cols[: len(ID_COLUMNS)] == list(ID_COLUMNS)
    for c in [*PARAM_NAMES, *CONDITION_COLUMNS, "bw_gbps", "bw_mbps", "elapsed_ns", "elapsed_ticks", "irqoff_pct",
              "gap_ticks", "gap_ns", "thread_node", "cpu", "ewr", "err", "media_write_64b", "started_at", "run_s"]:
        assert c in cols, c
    assert not [c for c in cols if "cycle" in c]
    assert df["bw_gbps"].dtype.kind == "f" and (df["bw_gbps"] > 0).all()
    assert set(df["access_size"]) == {64, 512, 4096} and set(df["op"]) == {"load", "ntstore", "store+clwb"}
    assert (df["target"] == "/dev/pmem0").all() and (df["target_kind"] == "fsdax").all()
    assert (df["tsc_khz"] == 2_000_000).all() and (df["target_page_size"] == 2097152).all()
    assert df["ewr"].isna().all()  # no ipmctl here
    assert ((df["elapsed_ns"] - df["elapsed_ticks"] * 1e6 / 2_000_000).abs() <= 1).all()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["status"] == "complete" and side["sweep"] == "t" and side["points"] == 9
    assert side["started_at"] and side["ended_at"]
    assert side["config"]["text"].strip() == CONFIG.strip()
    assert side["toolkit"]["revision"]
    assert side["machine"]["module"]["version"] == "0.1.0"
    assert any("ipmctl" in n for n in side["notes"])
    assert side["sessions"][0]["runs"] == 18 and side["sessions"][0]["ok"] == 18
    summ = pd.read_csv(out.with_name("t.summary.csv"))
    assert len(summ) == 9 and (summ["n"] == 2).all()
    assert {"bw_gbps_mean", "bw_gbps_stddev", "bw_gbps_ci95"} <= set(summ.columns)


def test_resume_skips_completed_points(env):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    df = pd.read_csv(out)
    # Lose the last three (point, repeat) runs and tear the last line, as a crash would.
    keep_pairs = set(map(tuple, df[["point", "repeat"]].drop_duplicates().values.tolist()[:-3]))
    kept = df[[tuple(x) in keep_pairs for x in df[["point", "repeat"]].values.tolist()]]
    text = kept.to_csv(index=False) + "t,8,abc,1,0,ok,,band"
    out.write_text(text)
    fake.runs.clear()
    assert sweep(cfg, out) == 0
    assert len(fake.runs) == 3
    df2 = pd.read_csv(out)
    assert len(df2) == len(df)
    assert not df2.duplicated(["point_key", "repeat", "thread"]).any()
    side = json.loads(out.with_suffix(".json").read_text())
    assert len(side["sessions"]) == 2 and side["sessions"][1]["resumed_runs"] == 15
    fake.runs.clear()
    assert sweep(cfg, out) == 0 and fake.runs == []
    assert sweep(cfg, out, "--fresh") == 0 and len(fake.runs) == 18


def test_ctrl_c_leaves_valid_csv_and_resume_finishes(env, capsys):
    fake, cfg, out = env
    fake.interrupt_at_run = 5
    rc = sweep(cfg, out)
    err = capsys.readouterr().err
    assert rc == 130
    assert "interrupted" in err and "resume" in err and err.strip().count("\n") == 0
    assert "interrupted after 4 runs; the run in progress was aborted;" in err
    assert fake.aborts == 1 and (fake.root / "state").read_text().strip() == "error:aborted"
    df = pd.read_csv(out)  # valid CSV
    assert len(df[df["thread"] == "all"]) == 4 and (df["status"] == "ok").all()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["status"] == "interrupted" and side["ended_at"]
    assert side["sessions"][-1]["interrupted"] == "during a run (aborted)"
    fake.interrupt_at_run = None
    fake.runs.clear()
    assert sweep(cfg, out) == 0
    assert len(fake.runs) == 18 - 4
    df = pd.read_csv(out)
    assert len(df[df["thread"] == "all"]) == 18


def test_failed_points_are_recorded_and_sweep_goes_on(env, capsys):
    fake, cfg, out = env
    fake.fail = lambda p: "media error" if p["op"] == "ntstore" and p["access_size"] == "512" else None
    fake.refuse = {"access_size=4096": "too large for this window"}
    assert sweep(cfg, out) == exitcodes.PARTIAL == 3  # some runs ok, some failed: a script can tell
    assert "pmemlab: 8 of 18 runs failed (status error, timeout or refused)" in capsys.readouterr().err
    df = pd.read_csv(out)
    agg = df[df["thread"] == "all"]
    err = agg[agg["status"] == "error"]
    assert len(err) == 2 and (err["error"].str.contains("media error")).all()
    refused = agg[agg["status"] == "refused"]
    assert len(refused) == 6 and refused["error"].str.contains("too large for this window").all()
    assert (agg["status"] == "ok").sum() == 18 - 8
    # failed rows are single aggregate rows without results
    assert df[df["status"] != "ok"]["bw_gbps"].isna().all()
    # resume retries the failed runs only
    fake.fail = None
    fake.refuse = {}
    fake.runs.clear()
    assert sweep(cfg, out) == 0
    assert len(fake.runs) == 8
    assert (pd.read_csv(out).query("thread == 'all'")["status"] == "ok").sum() == 18


def test_refusal_at_start_is_recorded(env):
    fake, cfg, out = env
    fake.refuse_start = lambda p: "working set past the end of the target" if p["op"] == "load" else None
    assert sweep(cfg, out) == exitcodes.PARTIAL
    agg = pd.read_csv(out).query("thread == 'all'")
    refused = agg[agg["status"] == "refused"]
    assert len(refused) == 6 and (refused["op"] == "load").all()
    assert refused["error"].str.startswith("refused at start: working set past the end").all()
    assert len(fake.runs) == 12


def test_fail_fast(env, capsys):
    fake, cfg, out = env
    fake.fail = lambda p: "boom"
    assert sweep(cfg, out, "--fail-fast") == 1
    assert "failed: error: boom" in capsys.readouterr().err
    assert len(fake.runs) == 1
    assert len(pd.read_csv(out)) == 1
    assert json.loads(out.with_suffix(".json").read_text())["status"] == "failed"


def test_bad_config_never_touches_the_module(env, capsys):
    fake, cfg, out = env
    cfg.write_text(CONFIG.replace('access_size = "64..4096 *8"', 'access_size = [64, 100]'))
    assert sweep(cfg, out) == 2
    err = capsys.readouterr().err
    assert "access_size = 100" in err and "t.toml:13:" in err and "100 must be 8, 16, 32 or a multiple of 64" in err
    assert fake.runs == [] and not out.exists()
    assert (fake.root / "op").read_text().strip() == "load"


def test_module_not_loaded(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", ""))
    cfg = tmp_path / "t.toml"
    cfg.write_text(CONFIG)
    rc = cli.main(["--sysfs", str(tmp_path / "none"), "sweep", str(cfg), "-o", str(tmp_path / "o.csv"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 1 and err.startswith("pmemlab: module not loaded") and err.strip().count("\n") == 0


def test_wrong_target_refused(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out, "--target", "/dev/pmem1") == 1
    assert "not /dev/pmem1" in capsys.readouterr().err and fake.runs == []


def test_unsupported_points_recorded_as_skipped(env):
    fake, cfg, out = env
    (fake.root / "cpu_features").write_text("sse2 avx avx2 clflush rdtscp\n")  # no clwb
    assert sweep(cfg, out) == 0
    df = pd.read_csv(out)
    sk = df[df["status"] == "skipped"]
    assert len(sk) == 3 * 2 and (sk["op"] == "store+clwb").all() and sk["error"].str.contains("clwb").all()
    assert len(fake.runs) == 6 * 2
    assert sweep(cfg, out, "--fresh", "--strict") == 2


def test_new_result_fields_become_columns(env):
    fake, cfg, out = env
    fake.interrupt_at_run = 3
    assert sweep(cfg, out) == 130
    fake.interrupt_at_run = None
    fake.extra_fields = "retired_loads=123 stall_ticks=4000"
    assert sweep(cfg, out) == 0
    df = pd.read_csv(out)
    assert {"retired_loads", "stall_ticks", "stall_ns"} <= set(df.columns)
    assert df["retired_loads"].isna().sum() == 4 and (df["retired_loads"].dropna() == 123).all()
    assert (df["stall_ns"].dropna() == 2000.0).all()


def test_adaptive_repeats_stop_at_target_or_cap(env):
    fake, cfg, out = env
    cfg.write_text(dedent("""
        [sweep]
        name = "t"
        [sweep.adaptive]
        metric = "bw_gbps"
        ci_target = 0.5
        min_repeats = 3
        max_repeats = 6
        [base]
        duration_ms = 2
        [axes]
        op = ["load"]
    """))
    assert sweep(cfg, out) == 0
    assert len(fake.runs) == 3  # noise ~1 %, a 50 % target is met at once
    cfg.write_text(cfg.read_text().replace("ci_target = 0.5", "ci_target = 0.00001"))
    fake.runs.clear()
    assert sweep(cfg, out) == 0
    assert len(fake.runs) == 3  # resumed 3, then 3 more up to the cap
    df = pd.read_csv(out)
    assert sorted(df[df["thread"] == "all"]["repeat"]) == [0, 1, 2, 3, 4, 5]


def test_media_counters_from_ipmctl(env, monkeypatch):
    fake, cfg, out = env
    snaps = [(FIX / "ipmctl-performance-before.txt").read_text(), (FIX / "ipmctl-performance-after.txt").read_text()]
    calls = {"n": 0}

    def tool(argv):
        if argv[0] == "ipmctl":
            calls["n"] += 1
            return probe.ToolResult(0, snaps[(calls["n"] - 1) % 2])
        return probe.ToolResult(127, "", "")

    monkeypatch.setattr(probe, "run_tool", tool)
    cfg.write_text(CONFIG.replace("repeats = 2", "repeats = 1"))
    # probe call (1) then before/after per run: keep before=odd calls after the probe
    calls["n"] = 1
    assert sweep(cfg, out) == 0
    df = pd.read_csv(out)
    agg = df[df["thread"] == "all"]
    assert ((agg["ewr"] - 0.625).abs() < 1e-12).all() and ((agg["err"] - 1.0).abs() < 1e-12).all()
    assert (agg["media_write_64b"] == 8192).all()
    assert df[df["thread"] != "all"]["ewr"].isna().all()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["machine"]["ipmctl"]["available"] is True


def test_dry_run_runs_nothing(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out, "--dry-run") == 0
    text = capsys.readouterr().out
    assert "9 points" in text and "18 runs" in text and fake.runs == [] and not out.exists()


def test_summarize_command(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    out.with_name("t.summary.csv").unlink()
    assert cli.main(["summarize", str(out)]) == 0
    assert out.with_name("t.summary.csv").exists()


def test_ipmctl_columns_constant():
    assert ipmctl.COLUMNS == ("media_read_64b", "media_write_64b", "read_request_64b", "write_request_64b", "ewr", "err")


def test_latency_histograms_and_run_id(env):
    fake, cfg, out = env
    cfg.write_text(CONFIG.replace('mode = "bandwidth"', 'mode = "latency"\ncount = 1000'))
    fake.interrupt_at_run = 7
    assert sweep(cfg, out) == 130
    hist = pd.read_csv(out.with_name("t.hist.csv"))
    assert len(hist) == 6 * 3  # runs 1..6 completed, 3 buckets each, one thread
    fake.interrupt_at_run = None
    assert sweep(cfg, out) == 0
    df = pd.read_csv(out)
    hist = pd.read_csv(out.with_name("t.hist.csv"))
    assert list(hist.columns) == ["sweep", "target_label", "point", "point_key", "repeat", "thread", "lo_ticks",
                                  "hi_ticks", "lo_ns", "hi_ns", "count"]
    assert len(hist) == 18 * 3
    assert not hist.duplicated(["point_key", "repeat", "thread", "lo_ticks"]).any()
    assert (hist["lo_ns"] == hist["lo_ticks"] / 2).all()
    assert set(zip(hist["point_key"], hist["repeat"])) == set(zip(df["point_key"], df["repeat"]))
    agg = df[df["thread"] == "all"]
    assert agg["lat_ns_p99"].notna().all() and (agg["lat_ns_p99"] == agg["lat_ticks_p99"] / 2).all()
    assert agg["run_id"].notna().all()


# ---- resume refuses rows of another config or target ------------------------------------------
def _refused(capsys, rc, *fragments):
    err = capsys.readouterr().err
    assert rc == 2, err
    # the sweep before may have warned about noisy points of the fake module; the refusal is one line
    line = "\n".join(ln for ln in err.strip().splitlines() if not ln.startswith("pmemlab: warning: "))
    assert line.count("\n") == 0 and line.startswith("pmemlab: ") and "not resuming" in line, line
    assert "fix: use --fresh to start over, or -o another CSV" in line
    for frag in fragments:
        assert frag in line, f"{frag!r} not in {line!r}"
    return line


def _snapshot(out):
    return {p.name: p.read_bytes() for p in out.parent.iterdir()}


def test_resume_refuses_a_changed_config(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    before = _snapshot(out)
    fake.runs.clear()
    cfg.write_text(CONFIG.replace("duration_ms = 2", "duration_ms = 5"))
    _refused(capsys, sweep(cfg, out), "with another configuration", "base.duration_ms: 2 -> 5")
    assert fake.runs == [] and _snapshot(out) == before  # nothing run, nothing rewritten
    cfg.write_text(CONFIG.replace('access_size = "64..4096 *8"', "access_size = [64, 512]"))
    _refused(capsys, sweep(cfg, out), "axes.access_size: [64, 512, 4096] -> [64, 512]")
    assert sweep(cfg, out, "--fresh") == 0 and len(fake.runs) == 12


def test_resume_with_same_config_written_differently_and_more_repeats(env):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    fake.runs.clear()
    # the same points (a list instead of a range, a comment), one more repeat: resumes
    cfg.write_text(CONFIG.replace('access_size = "64..4096 *8"', "access_size = [64, 512, 4096]  # same")
                   .replace("repeats = 2", "repeats = 3"))
    assert sweep(cfg, out) == 0 and len(fake.runs) == 9
    assert len(pd.read_csv(out).query("thread == 'all'")) == 27


def test_resume_refuses_a_changed_set(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out, "--set", "duration_ms=3") == 0
    fake.runs.clear()
    _refused(capsys, sweep(cfg, out, "--set", "duration_ms=4"), "base.duration_ms: 3 -> 4")
    _refused(capsys, sweep(cfg, out), "base.duration_ms: 3 -> 2")
    assert sweep(cfg, out, "--set", "duration_ms=3") == 0 and fake.runs == []


def test_resume_refuses_another_scale(env, capsys):
    fake, cfg, out = env
    cfg.write_text(CONFIG + '\n[scale.quick.base]\nworking_set = "512K"\n')
    assert sweep(cfg, out, "--scale", "quick") == 0
    fake.runs.clear()
    _refused(capsys, sweep(cfg, out, "--scale", "full"), 'scale: quick -> full', 'base.working_set: 524288 -> 1048576')
    assert sweep(cfg, out, "--scale", "quick") == 0 and fake.runs == []


def test_resume_refuses_another_target(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    fake.runs.clear()
    for name, value in (("target", "dram"), ("target_kind", "dram")):
        (fake.root / name).write_text(value + "\n")
    (fake.root.parent / "module-parameters" / "target").write_text("dram\n")
    _refused(capsys, sweep(cfg, out), "target: /dev/pmem0 -> dram", "target_kind: fsdax -> dram",
             'module load parameters: {"target": "/dev/pmem0"} -> {"target": "dram"}')
    # without the sidecar nothing tells what measured the rows: not resumed either
    side = out.with_suffix(".json")
    kept = side.read_text()
    side.unlink()
    _refused(capsys, sweep(cfg, out), f"holds 36 rows but {side} is missing")
    side.write_text(kept)
    (fake.root / "target").write_text("/dev/pmem0\n")
    (fake.root / "target_kind").write_text("fsdax\n")
    (fake.root / "version").write_text("0.2.0\n")
    _refused(capsys, sweep(cfg, out), "module_version: 0.1.0 -> 0.2.0")
    assert fake.runs == []


def test_resume_refuses_rows_of_points_not_in_the_expansion(env, capsys, monkeypatch):
    fake, cfg, out = env
    assert sweep(cfg, out) == 0
    fake.runs.clear()
    # same config and target, but ndctl now reports another interleave: every point differs
    monkeypatch.setattr(machine, "discovered_defaults", lambda info: {"interleave_ways": 2})
    _refused(capsys, sweep(cfg, out), "36 rows belong to 9 points this config does not expand to")
    assert fake.runs == []


def test_skipped_points_rerun_once_they_can_run(env):
    fake, cfg, out = env
    (fake.root / "cpu_features").write_text("sse2 avx avx2 clflush rdtscp\n")  # no clwb
    assert sweep(cfg, out) == 0
    fake.runs.clear()
    assert sweep(cfg, out) == 0 and fake.runs == []  # still skipped: nothing to do
    (fake.root / "cpu_features").write_text("sse2 avx avx2 clflush clflushopt clwb rdtscp\n")
    assert sweep(cfg, out) == 0
    assert len(fake.runs) == 3 * 2 and {r["op"] for r in fake.runs} == {"store+clwb"}
    agg = pd.read_csv(out).query("thread == 'all'")
    assert len(agg) == 18 and (agg["status"] == "ok").all()


def test_set_on_an_axis_pins_it(env, capsys):
    fake, cfg, out = env
    assert sweep(cfg, out, "--set", "op=ntstore", "--dry-run") == 0
    cap = capsys.readouterr()
    assert "3 points" in cap.out and "6 runs" in cap.out
    assert "--set op=ntstore replaces the axis op: every point runs with op=ntstore" in cap.err
    assert sweep(cfg, out, "--set", "op=ntstore") == 0
    assert len(fake.runs) == 6 and {r["op"] for r in fake.runs} == {"ntstore"}
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["config"]["set"] == {"op": "ntstore"} and side["config"]["set_pinned_axes"] == {"op": "axes"}
    assert sweep(cfg, out, "--set", "duration_ms=x") == 2
    assert '--set: duration_ms = "x": \'x\' is not a non-negative integer' in capsys.readouterr().err


def test_sweep_timeout_is_recorded_and_the_sweep_goes_on(env):
    fake, cfg, out = env
    # 0.5 s, not less: the resumed runs below (2 ms each) must not time out on a busy host
    cfg.write_text(CONFIG.replace("repeats = 2", "repeats = 1\ntimeout_s = 0.5")
                   .replace('access_size = "64..4096 *8"', "access_size = [64]"))
    fake.run_s = 600.0  # each run ended by its timeout's abort (a 5 s run could end first on a starved host)
    assert sweep(cfg, out) == 1  # every run failed
    agg = pd.read_csv(out).query("thread == 'all'")
    assert len(agg) == 3 and (agg["status"] == "timeout").all()
    assert agg["error"].str.contains("no result after 0.5 s; run aborted").all()
    assert fake.aborts == 3 and len(fake.runs) == 3
    assert (fake.root / "state").read_text().strip() == "error:aborted"
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["status"] == "complete" and side["sessions"][-1]["failed"] == 3
    # resume reruns the timed-out points; with a long timeout, as a 0.5 s one is a rate on a loaded
    # host (CI: host tests beside two TCG guests on 2 cores)
    cfg.write_text(cfg.read_text().replace("timeout_s = 0.5", "timeout_s = 60"))
    fake.run_s = 0.002
    fake.runs.clear()
    assert sweep(cfg, out) == 0 and len(fake.runs) == 3


def test_progress_on_a_terminal_is_a_bar_with_eta(env, monkeypatch):
    import io
    import re

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    fake, cfg, out = env
    fake.run_s = 0.03
    tty = Terminal()
    monkeypatch.setattr(sys, "stderr", tty)
    assert cli.main(["sweep", str(cfg), "-o", str(out)]) == 0
    err = tty.getvalue()
    frames = re.split(r"[\r\n]", err)
    counts = []
    for frame in frames:
        m = re.search(r"^t: +(\d+)%\|.*\| (\d+)/18 runs \[(\d\d:\d\d)<(\d\d:\d\d|\?)", frame)
        if m:
            counts.append((int(m.group(2)), m.group(4)))
    assert counts and counts[-1][0] == 18, err[-500:]
    # an ETA (remaining time) is shown while runs are left, and the postfix names the point
    assert any(0 < n < 18 and eta != "?" for n, eta in counts), err[-2000:]
    assert "op=" in err and "GB/s" in err and "\r" in err


def test_progress_on_a_redirected_stderr_is_whole_lines(env, capsys):
    import re

    fake, cfg, out = env
    fake.run_s = 0.03
    assert cli.main(["sweep", str(cfg), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("t: ")]
    # no carriage returns, no bar: the first run, then a line per 10 s (none on an idle host; a
    # loaded one may take longer than 10 s), and the end
    assert "\r" not in err and "|" not in err
    assert len(lines) >= 2 and lines[0].startswith("t: 1/18 runs (6 %), ") and "left; last: op=" in lines[0]
    done = [int(re.match(r"t: (\d+)/18 runs", ln).group(1)) for ln in lines]
    assert done == sorted(done) and len(set(done)) == len(done), lines
    assert re.match(r"t: 18/18 runs \(100 %\), \d+s; last: op=\S+ access_size=\d+ [\d.]+ GB/s$", lines[-1])
    # --no-progress: nothing
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--fresh", "--no-progress"]) == 0
    assert not [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("t: ")]


def test_media_counters_only_over_the_target_regions_dimms(env, monkeypatch):
    fake, cfg, out = env
    snaps = [(FIX / "ipmctl-performance-before.txt").read_text(), (FIX / "ipmctl-performance-after.txt").read_text()]
    doc = json.loads((FIX / "ndctl-list-RNDi.json").read_text())
    region = doc["regions"][0]
    # region0 without nmem2 (handle 257 = ipmctl's 0x0101): only DimmID 0x0001 is the target's
    region["mappings"] = [m for m in region["mappings"] if m["dimm"] != "nmem2"]
    calls = {"n": 1}

    def tool(argv):
        if argv[0] == "ipmctl":
            calls["n"] += 1
            return probe.ToolResult(0, snaps[(calls["n"] - 1) % 2])
        if argv[0] == "ndctl":
            return probe.ToolResult(0, json.dumps(doc))
        return probe.ToolResult(127, "", "")

    monkeypatch.setattr(probe, "run_tool", tool)
    cfg.write_text(CONFIG.replace("repeats = 2", "repeats = 1"))
    assert sweep(cfg, out) == 0
    agg = pd.read_csv(out).query("thread == 'all'")
    assert (agg["media_write_64b"] == 0x1000).all() and (agg["write_request_64b"] == 0x1000).all()
    assert (agg["ewr"] == 1.0).all()  # over every DIMM it would be 0.625
    side = json.loads(out.with_suffix(".json").read_text())
    assert "media counters: summed over the DIMMs of region0 (ipmctl DimmIDs 0x0001, 0x1001, 0x1101, 0x2101)" \
        in side["notes"]


def test_ctrl_c_between_runs_says_no_run_was_aborted(env, capsys, monkeypatch):
    from pmemlab.table import CsvSink

    fake, cfg, out = env
    real_append = CsvSink.append
    calls = {"n": 0}

    def append(self, rows):
        calls["n"] += 1
        if calls["n"] == 3:  # the third run has finished; Ctrl-C while its rows are recorded
            raise KeyboardInterrupt
        real_append(self, rows)

    monkeypatch.setattr(CsvSink, "append", append)
    assert sweep(cfg, out) == 130
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "interrupted after 2 runs; no run was in progress;" in err
    assert fake.aborts == 0 and (fake.root / "state").read_text().strip() == "done"
    df = pd.read_csv(out)
    assert len(df.query("thread == 'all'")) == 2 and (df["status"] == "ok").all()
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["status"] == "interrupted" and side["sessions"][-1]["interrupted"] == "between runs"


def test_cpus_remote_runs_on_the_nearest_other_node(env, monkeypatch):
    """cpus = "remote" reaches the module as CPUs of the nearest other node; the CSV keeps
    'remote'; on a one-node machine the points are skipped with the reason."""
    fake, cfg, out = env
    cfg.write_text(dedent("""
        [sweep]
        name = "t"
        [base]
        duration_ms = 2
        working_set = "1M"
        threads = 2
        [axes]
        cpus = ["", "remote"]
        """))
    nodes = [{"node": 0, "cpus": "0-1", "distances": [10, 32, 21]},
             {"node": 1, "cpus": "2-3", "distances": [32, 10, 32]},
             {"node": 2, "cpus": "4-5", "distances": [21, 32, 10]}]
    monkeypatch.setattr(cli_backend, "online_cpus", lambda: 6)
    monkeypatch.setattr(machine, "numa_info", lambda host: {"nodes": nodes, "source": "test"})
    assert sweep(cfg, out) == 0
    assert [r["cpus"] for r in fake.runs] == ["", "4-5"]  # node 2 is nearer to node 0 than node 1
    agg = pd.read_csv(out, keep_default_na=False).query("thread == 'all'")
    assert list(agg["cpus"]) == ["", "remote"] and (agg["status"] == "ok").all()

    monkeypatch.setattr(machine, "numa_info", lambda host: {"nodes": nodes[:1], "source": "test"})
    out2 = out.with_name("one-node.csv")
    assert sweep(cfg, out2) == 0
    assert len(fake.runs) == 3
    agg = pd.read_csv(out2, keep_default_na=False).query("thread == 'all'")
    assert list(agg["status"]) == ["ok", "skipped"]
    assert "no NUMA node other than the target's node 0 has online CPUs" in agg["error"].iloc[1]
