"""`pmemlab compare A B`: on synthetic runs with known answers (faster, slower, overlapping CIs,
a difference within the threshold, a single repeat, latency where lower is faster), and on the
recorded fixtures (dram against pmem) checked against the sweep's own summary CSV."""

from __future__ import annotations

import io
import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats as scipy_stats

import pmemlab.cli as cli
from pmemlab.analysis.compare import compare, verdict

from recorded_targets import RECORDED, one_target


def write_sweep(path: Path, points: dict[int, list[float]], mode: str = "bandwidth", target: str = "/dev/pmem0",
                host: str = "a") -> Path:
    """A sweep 'syn' varying threads; one aggregate row per value (the repeats) of each point."""
    base = pd.read_csv(RECORDED / "bw-threads.csv", dtype={"thread": str})
    template = base[(base["thread"] == "all") & (base["status"] == "ok")].iloc[0]
    rows = []
    for threads, values in points.items():
        for repeat, value in enumerate(values):
            row = template.copy()
            row["sweep"], row["threads"], row["repeat"], row["point_key"] = "syn", threads, repeat, f"k{threads}"
            row["mode"], row["target"], row["hostname"] = mode, target, host
            row["bw_gbps" if mode == "bandwidth" else "lat_ns_p50"] = value
            rows.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


QUIET = [10.0, 10.1, 9.9]


def half_width(values) -> float:
    s = pd.Series(values)
    return scipy_stats.t.ppf(0.975, len(s) - 1) * s.std(ddof=1) / math.sqrt(len(s))


def test_known_answers(tmp_path):
    a = write_sweep(tmp_path / "a" / "syn.csv", {1: QUIET, 2: QUIET, 3: [10, 12, 8], 4: [10.0, 10.01, 9.99], 5: [10.0]})
    b = write_sweep(tmp_path / "b" / "syn.csv", {1: [12.0, 12.1, 11.9], 2: [8.0, 8.1, 7.9], 3: [10.5, 12.5, 8.5],
                                                 4: [10.2, 10.21, 10.19], 5: [20.0], 6: QUIET}, target="dram", host="b")
    c = compare(a, b)
    rows = c.rows.set_index("threads")
    assert list(rows.index) == [1, 2, 3, 4, 5]
    assert rows.loc[1, "ratio"] == pytest.approx(1.2) and rows.loc[1, "verdict"] == "faster"
    assert rows.loc[1, "ci_overlap"] == "no"
    assert rows.loc[2, "ratio"] == pytest.approx(0.8) and rows.loc[2, "verdict"] == "slower"
    assert rows.loc[3, "ci_overlap"] == "yes" and rows.loc[3, "verdict"] == "no difference"
    assert rows.loc[4, "ci_overlap"] == "no" and rows.loc[4, "verdict"] == "no difference", "within 5 %"
    assert rows.loc[5, "ci_overlap"] == "unknown" and rows.loc[5, "verdict"] == "faster" and rows.loc[5, "ratio"] == 2
    assert rows.loc[1, "a_ci95"] == pytest.approx(half_width(QUIET)) and rows.loc[1, "a_n"] == 3
    assert math.isnan(rows.loc[5, "a_ci95"]) and rows.loc[5, "b_n"] == 1
    assert c.only_b == ["syn: threads=6 metric=bw_gbps"] and c.only_a == []
    assert c.counts() == {"faster": 2, "slower": 1, "no difference": 2}
    assert c.sides["syn"]["target"] == ["/dev/pmem0", "dram"] and c.sides["syn"]["hostname"] == ["a", "b"]
    strict = compare(a, b, threshold=0.01).rows.set_index("threads")
    assert strict.loc[4, "verdict"] == "faster"


def test_latency_lower_is_faster(tmp_path):
    a = write_sweep(tmp_path / "a.csv", {1: [100.0, 101.0, 99.0], 2: [100.0, 101.0, 99.0]}, mode="latency")
    b = write_sweep(tmp_path / "b.csv", {1: [150.0, 151.0, 149.0], 2: [50.0, 51.0, 49.0]}, mode="latency")
    rows = compare(a, b).rows.set_index("threads")
    assert set(rows["metric"]) == {"lat_ns_p50"}
    assert rows.loc[1, "verdict"] == "slower" and rows.loc[2, "verdict"] == "faster"
    assert verdict(100, 1, 3, 90, 1, 3, "bw_gbps")["verdict"] == "slower"
    assert verdict(100, 1, 3, 90, 1, 3, "lat_ns_p99")["verdict"] == "faster"


def test_recorded_dram_against_pmem_matches_the_summaries():
    """bw-threads on dram (A) against pmem (B), both in the one recorded CSV: each point's means
    and CIs are the sweep's summary CSV's, the ratio is B/A and the verdict follows the overlap rule."""
    one = RECORDED / "bw-threads.csv"
    c = compare(one, one, a_target="dram", b_target="pmem")
    summary = pd.read_csv(RECORDED / "bw-threads.summary.csv").set_index(["target_label", "threads", "op"])
    sa, sb = summary.loc["dram"], summary.loc["pmem"]
    assert len(c.rows) == len(sa) == 6
    for row in c.rows.itertuples():
        key = (row.threads, row.op)
        assert row.a_mean == pytest.approx(sa.loc[key, "bw_gbps_mean"]) and row.b_mean == pytest.approx(sb.loc[key, "bw_gbps_mean"])
        assert row.a_ci95 == pytest.approx(sa.loc[key, "bw_gbps_ci95"]) and row.b_ci95 == pytest.approx(sb.loc[key, "bw_gbps_ci95"])
        assert row.ratio == pytest.approx(row.b_mean / row.a_mean)
        apart = row.a_mean + row.a_ci95 < row.b_mean - row.b_ci95 or row.b_mean + row.b_ci95 < row.a_mean - row.a_ci95
        assert row.ci_overlap == ("no" if apart else "yes")
        expected = "no difference" if not apart else ("faster" if row.ratio > 1 else "slower")
        assert row.verdict == expected
    pmem_dev = pd.read_csv(one, dtype=str).query("target_label == 'pmem'")["target"].unique()
    assert c.sides["bw-threads"]["target"] == ["dram", *pmem_dev]


def test_directories_pair_their_targets(tmp_path):
    """Two result directories holding the same targets compare each target with itself; the
    same directory against itself: ratio 1 and no difference everywhere."""
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        for path in RECORDED.glob("bw-threads.*"):
            shutil.copy(path, tmp_path / name / path.name)
    c = compare(tmp_path / "a", tmp_path / "b")
    assert len(c.rows) == 12 and set(c.rows["target_label"]) == {"dram", "pmem"}
    assert (c.rows["ratio"] == 1.0).all() and (c.rows["verdict"] == "no difference").all()


def test_command_outputs(tmp_path, capsys):
    a, b = one_target("bw-threads", "dram", tmp_path / "a"), one_target("bw-threads", "pmem", tmp_path / "b")
    assert cli.main(["compare", str(a), str(b)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"A: {a}\nB: {b}\n") and "B/A" in text and "6 points: B faster at" in text
    assert cli.main(["compare", str(a), str(b), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["points"]) == 6 and doc["threshold"] == 0.05 and sum(doc["counts"].values()) == 6
    assert all(p["verdict"] in ("faster", "slower", "no difference") for p in doc["points"])
    out = tmp_path / "cmp.csv"
    assert cli.main(["compare", str(a), str(b), "--csv", "-o", str(out)]) == 0
    printed = pd.read_csv(io.StringIO(capsys.readouterr().out))
    written = pd.read_csv(out)
    assert len(printed) == len(written) == 6 and {"ratio", "ci_overlap", "verdict", "a_ci95"} <= set(written.columns)


def test_refusals(tmp_path, capsys):
    pmem = one_target("bw-threads", "pmem", tmp_path / "pmem")
    assert cli.main(["compare", str(RECORDED), str(pmem)]) == 2
    assert "holds targets dram, pmem" in capsys.readouterr().err
    assert cli.main(["compare", str(RECORDED / "bw-size.csv"), str(RECORDED / "ewr.csv")]) == 2
    assert "no experiment in both" in capsys.readouterr().err
    assert cli.main(["compare", str(tmp_path / "nope.csv"), str(RECORDED / "ewr.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert cli.main(["compare", str(RECORDED / "ewr.csv"), str(RECORDED / "ewr.csv"), "--threshold", "2"]) == 2


def test_two_targets_of_one_csv(tmp_path, capsys):
    """A CSV of several targets (pmemlab sweep --targets): --a-target and --b-target pick one each,
    and the comparison is the one of single-target files holding each target's rows."""
    one = RECORDED / "bw-threads.csv"
    picked = compare(one, one, a_target="dram", b_target="pmem")
    files = compare(one_target("bw-threads", "dram", tmp_path / "a"), one_target("bw-threads", "pmem", tmp_path / "b"))
    cols = ["threads", "op", "a_mean", "b_mean", "ratio", "verdict"]
    assert picked.rows[cols].reset_index(drop=True).equals(files.rows[cols].reset_index(drop=True))
    assert cli.main(["compare", str(one), str(one)]) == 0  # each target with itself
    capsys.readouterr()
    assert cli.main(["compare", str(one), str(one), "--a-target", "dram", "--b-target", "nvm"]) == 2
    assert "has no target 'nvm' (it has dram, pmem)" in capsys.readouterr().err
