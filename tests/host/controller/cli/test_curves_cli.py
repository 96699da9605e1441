"""`pmemlab curves` end to end on the real user backend (a tiny grid: structure, not speed), and
its one-line errors with their exit codes."""

from __future__ import annotations

import csv
import json
import math
import shutil
from pathlib import Path

import pytest

import pmemlab.cli as cli
from pmemlab import exitcodes
from pmemlab.analysis import curves as C
from pmemlab.cli import curves as cmd

from testlib import HOST_FIXTURES

MAX_DELAY = 4096


@pytest.fixture(scope="module")
def family(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict, Path]:
    out = tmp_path_factory.mktemp("curves") / "c.csv"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = cli.main(["curves", "--backend", "user", "--mixes", "100,0", "--points", "5", "--threads", "2",
                         "--duration-ms", "20", "--working-set", "8M", "--repeats", "2", "--max-repeats", "2",
                         "--max-delay", str(MAX_DELAY), "-o", str(out), "--json"])
    return code, json.loads(buf.getvalue()), out


def test_the_csv_has_its_columns_and_a_monotone_grid_per_mix(family) -> None:
    code, doc, out = family
    assert code == exitcodes.OK
    with out.open() as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == cmd.CSV_COLUMNS
        rows = list(reader)
    by_mix: dict[int, list[int]] = {}
    sampled: set[str] = set()
    for r in rows:
        by_mix.setdefault(int(r["mix_pct"]), []).append(int(r["delay_ticks"]))
        assert r["write_op"] == "store" and r["probe_op"] == "chase" and r["backend"] == "user"
        assert r["target"] == "dram", "no --target: the target the runs name, not an empty cell"
        assert int(r["repeats"]) == 2
        # the load threads' columns on every row (each thread's first batch always runs: method.md)
        assert float(r["bw_gbps"]) > 0
        share = float(r["read_pct_actual"])
        assert share == (100.0 if r["mix_pct"] == "100" else 0.0)
        factor = 1.0 if r["mix_pct"] == "100" else 2.0  # plain stores: read for ownership
        assert float(r["bw_memory_gbps"]) == pytest.approx(factor * float(r["bw_gbps"]))
        # the probe's: a loaded host may not schedule the probe in a short run (a chase of fewer
        # hops than a batch has no sample): none, or ordered percentiles
        if int(r["lat_samples"]) == 0:
            assert r["lat_p50_ns"] == "" and r["lat_p999_ns"] == ""
            continue
        sampled.add(r["mix_pct"])
        assert float(r["lat_p50_ns"]) <= float(r["lat_p90_ns"]) <= float(r["lat_p99_ns"]) \
            <= float(r["lat_p999_ns"]) <= float(r["lat_max_ns"])
    # some point sampled (each mix's every point unsampled needs the probe starved through ten
    # runs of 20 ms and the gaps between them, which a host at nice 19 beside two guests can do)
    assert sorted(by_mix) == [0, 100] and sampled, sampled
    for delays in by_mix.values():  # listed from the lightest load to flat out, each delay once
        assert delays == sorted(set(delays), reverse=True) and len(delays) == 5
        assert delays[0] == MAX_DELAY and delays[-1] == 0


def test_the_json_says_what_each_curve_means(family) -> None:
    _, doc, out = family
    assert doc["command"] == "curves" and doc["probe_op"] == "chase" and doc["write_op"] == "store"
    assert [s["mix"] for s in doc["summaries"]] == [100, 0]
    with out.open() as f:  # the mixes whose probe sampled at some point (above: a starved probe has none)
        sampled = {int(r["mix_pct"]) for r in csv.DictReader(f) if int(r["lat_samples"]) > 0}
    for s in doc["summaries"]:
        assert s["points"] == 5 and s["peak_gbps"] > 0
        if s["mix"] in sampled:
            assert s["unloaded_ns"] > 0, s
        else:
            assert s["unloaded_ns"] is None or math.isnan(s["unloaded_ns"]), s
    assert doc["best_mix"] == max(doc["summaries"], key=lambda s: s["peak_gbps"])["mix"]
    assert "load" in doc["unloaded_ns"] or "chase" in doc["unloaded_ns"]
    assert any("read for ownership" in n for n in doc["notes"])
    assert doc["csv"] == str(out) and len(doc["points"]) == 10


def test_the_probe_alone_is_measured_before_and_after_the_family(family) -> None:
    """The probe alone again after the curves: its ratio to the first, and a note where the two
    differ by more than DRIFT (a loaded host may move it: the note must then be there)."""
    _, doc, _ = family
    assert set(doc["unloaded_after_ns"]) == set(doc["unloaded_ns"]) == set(doc["unloaded_drift"])
    for op, before in doc["unloaded_ns"].items():
        ratio, after = doc["unloaded_drift"][op], doc["unloaded_after_ns"][op]
        noted = any(n.startswith(f"the probe alone ({op}) read") for n in doc["notes"])
        if ratio is None:  # a 0 ns median on one side (a loaded host once gave one): said, not divided
            assert not (before > 0 and after > 0) and noted, (before, after, doc["notes"])
            continue
        assert ratio == pytest.approx(after / before)
        assert noted == (abs(ratio - 1) > cmd.DRIFT), (ratio, doc["notes"])


def _curves_with_alone(monkeypatch, before: float, after: float) -> dict:
    """A small user-backend curves run whose probe alone reads `before`, then `after` (ns): its JSON."""
    import contextlib
    import io

    seen = iter([{"chase": before}, {"chase": after}])
    monkeypatch.setattr(cmd, "unloaded", lambda setup, bed, args: next(seen))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["curves", "--backend", "user", "--mixes", "100", "--points", "3", "--threads", "2",
                         "--duration-ms", "5", "--working-set", "4M", "--repeats", "1", "--max-repeats", "1",
                         "--max-delay", str(MAX_DELAY), "--json"]) == exitcodes.OK
    return json.loads(buf.getvalue())


def test_a_drift_of_the_probe_alone_is_noted(monkeypatch, capsys) -> None:
    """Before 150 ns, after 200 ns: the JSON carries both and the ratio, the text and the notes say so."""
    doc = _curves_with_alone(monkeypatch, 150.0, 200.0)
    assert doc["unloaded_ns"] == {"chase": 150.0} and doc["unloaded_after_ns"] == {"chase": 200.0}
    assert doc["unloaded_drift"]["chase"] == pytest.approx(4 / 3)
    assert any("read 150 ns before the curves and 200 ns after" in n for n in doc["notes"])
    assert "after the curves 200 ns" in cmd.text(doc)


def test_a_zero_median_alone_gives_no_ratio_but_a_note(monkeypatch) -> None:
    """Before 0 ns (a median can be 0: TCG's clock, a starved probe's clamped samples), after 150 ns:
    the drift is null, not left out and not divided, and a note says why."""
    doc = _curves_with_alone(monkeypatch, 0.0, 150.0)
    assert doc["unloaded_drift"] == {"chase": None}
    assert any("read 0 ns before the curves and 150 ns after: no ratio" in n for n in doc["notes"]), doc["notes"]

def test_the_figures_are_drawn_beside_the_csv(family) -> None:
    _, doc, out = family
    figs = [Path(p) for p in doc["figures"]]
    assert [p.name for p in figs] == ["c.family.png", "c.tails.png"]
    assert all(p.exists() and p.stat().st_size > 10_000 for p in figs)


def test_rows_turn_into_points_with_pooled_percentiles() -> None:
    import pandas as pd

    rows = pd.DataFrame([
        {"thread": "all", "status": "ok", "read_pct": 50, "delay_ticks": 0, "point_key": "a", "bw_gbps": b,
         "reads": 50, "writes": 50, "lat_ns_max": 900.0, "lat_ns_p50": 100.0 + i}
        for i, b in enumerate((1.0, 3.0))] + [
        {"thread": "0", "status": "ok", "read_pct": 50, "delay_ticks": 0, "point_key": "a", "bw_gbps": 9.0,
         "reads": 5, "writes": 0, "lat_ns_max": 900.0, "lat_ns_p50": 1.0}])
    hist = pd.DataFrame([{"point_key": "a", "thread": 0, "lo_ns": 100.0, "hi_ns": 200.0, "count": 99},
                         {"point_key": "a", "thread": 0, "lo_ns": 1000.0, "hi_ns": 2000.0, "count": 1},
                         {"point_key": "a", "thread": 1, "lo_ns": 5000.0, "hi_ns": 6000.0, "count": 1000}])
    (p,) = cmd.points_of(rows, hist)
    assert p.mix == 50 and p.repeats == 2 and p.bw_gbps == pytest.approx(2.0) and p.bw_std == pytest.approx(2 ** 0.5)
    assert p.read_share == pytest.approx(50.0)  # the load threads' counts (the all rows), not the probe's
    assert 100.0 < p.p50_ns < 200.0 and p.p999_ns == 900.0  # thread 1's buckets are not the probe's; clamped to max


def bad(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(["curves", *argv])
    err = capsys.readouterr().err.strip()
    return code, err


@pytest.mark.parametrize("argv, says", [
    (["--points", "2"], "--points 2: a curve needs at least 3"),
    (["--mixes", "100,101"], "each read share 0..100"),
    (["--mixes", "a"], "whole percentages"),
    (["--threads", "1"], "--threads 1: the probe and at least one load thread"),
    (["--ci-target", "2"], "--ci-target 2.0"),
    (["--max-delay", "8"], "--max-delay 8"),
    (["--write-op", "load"], "invalid choice"),
    (["-o", "x.txt"], "ends in .csv"),
])
def test_bad_input_is_one_line_and_exit_code_2(capsys, tmp_path, argv, says) -> None:
    code, err = bad(capsys, "--backend", "user", *argv)
    assert code == exitcodes.BAD_INPUT
    assert len(err.splitlines()) == 1 and says in err, err


def test_an_output_directory_is_refused(capsys, tmp_path) -> None:
    d = tmp_path / "d.csv"
    d.mkdir()
    code, err = bad(capsys, "--backend", "user", "-o", str(d))
    assert code == exitcodes.BAD_INPUT and "a directory" in err and len(err.splitlines()) == 1


def test_summaries_of_the_recorded_points_agree_with_the_module() -> None:
    """The JSON's summaries are analysis.curves' of the same points (no second implementation)."""
    pts = [C.CurvePoint(100, d, bw, 0.0, 100.0, lat, lat, lat, lat * 2, lat * 3)
           for d, bw, lat in ((4096, 0.1, 100.0), (64, 5.0, 150.0), (0, 8.0, 300.0))]
    s = C.summarize_curve(pts)
    assert s.knee_gbps == pytest.approx(5.0 + 3.0 * 50 / 150)


def test_compare_reads_two_families_and_matches_their_mixes(family, tmp_path, capsys) -> None:
    _, _, out = family
    assert cmd.is_curves_csv(out) and not cmd.is_curves_csv(tmp_path / "none.csv")
    pts = cmd.read_curves_csv(out)
    assert len(pts) == 10 and {p.mix for p in pts} == {0, 100}
    # B: A's 100 % curve only, every latency doubled
    b = tmp_path / "b.csv"
    with out.open() as f, b.open("w") as g:
        rows = [r for r in csv.DictReader(f) if r["mix_pct"] == "100"]
        w = csv.DictWriter(g, fieldnames=list(cmd.CSV_COLUMNS), lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({**r, **{k: (str(2 * float(r[k])) if r[k] else "") for k in
                                ("lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns", "lat_max_ns")}})
    assert cli.main(["compare", str(out), str(b), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["kind"] == "curves" and [s["mix"] for s in doc["mixes"]] == [100]
    assert doc["mixes"][0]["unloaded_ns_b_over_a"] == pytest.approx(2.0)
    assert doc["mixes"][0]["peak_gbps_b_over_a"] == pytest.approx(1.0)
    # B's median at A's bandwidth: twice A's curve there (A's own point where A's bandwidth grows
    # with load; on a noisy curve the first place along the load where it reaches it)
    a100 = [p for p in pts if p.mix == 100]
    timed = [p for p in doc["points"] if p["p50_ns_b"] is not None]
    assert timed and all(p["p50_ns_b"] == pytest.approx(2 * C.latency_at(a100, p["bw_gbps"])) for p in timed)
    assert cli.main(["compare", str(out), str(b)]) == 0
    assert "100 % reads: unloaded" in capsys.readouterr().out
    only0 = tmp_path / "c.csv"
    with out.open() as f, only0.open("w") as g:
        g.write(f.readline())
        g.writelines(line for line in f if line.startswith("0,"))
    assert cli.main(["compare", str(b), str(only0)]) == exitcodes.BAD_INPUT
    err = capsys.readouterr().err.strip()
    assert "no read share in both families" in err and len(err.splitlines()) == 1


def results_with_a_sweep(tmp_path: Path) -> Path:
    """A results directory holding one recorded sweep (bw-size), for the report to find beside a family."""
    results = tmp_path / "results"
    results.mkdir()
    recorded = HOST_FIXTURES / "recorded"
    for name in ("bw-size.csv", "bw-size.json"):
        shutil.copy(recorded / name, results / name)
    return results


def test_report_has_a_section_of_each_family(family, tmp_path, capsys) -> None:
    """`pmemlab report` of a results directory holding a sweep and a curves CSV: the section of the
    family, its summary per mix (as analysis.curves gives it), its figure, in HTML and Markdown."""
    _, doc, out = family
    results = results_with_a_sweep(tmp_path)
    for p in (out, *[Path(f) for f in doc["figures"]]):
        shutil.copy(p, results / p.name)
    assert cli.main(["report", str(results), "-o", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "report.html").read_text()
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "<section id=curves><h2>Bandwidth-latency curves</h2>" in page and "alt='c family'" in page
    assert page.index("id=curves") > page.index("exp-bw-size") and page.rstrip().endswith("</body></html>")
    best = doc["best_mix"]
    assert f"Highest peak: {best} % reads" in page and f"Highest peak: {best} % reads" in md
    assert "## Bandwidth-latency curves" in md and "![c family](../results/c.family.png)" in md
    table = md.split("## Bandwidth-latency curves", 1)[1]
    lines = [ln for ln in table.splitlines() if ln.startswith("| 100 |") or ln.startswith("| 0 |")]
    assert len(lines) == 2 and all("| 5 |" in ln for ln in lines)  # the two mixes, 5 points each


def test_report_without_a_family_has_no_curves_section(tmp_path) -> None:
    results = results_with_a_sweep(tmp_path)
    assert cli.main(["report", str(results), "-o", str(tmp_path / "rep")]) == 0
    assert "Bandwidth-latency" not in (tmp_path / "rep" / "report.html").read_text()
    assert "Bandwidth-latency" not in (tmp_path / "rep" / "report.md").read_text()


def test_a_file_that_only_ends_in_csv_is_no_family_and_a_cut_row_is_one_line(family, tmp_path, capsys) -> None:
    """A figure saved as x.csv beside the sweeps is not a family (the fuzzer's `report ''` over a
    directory holding one raised UnicodeDecodeError); a family with a row cut short is exit 2, one line."""
    _, _, out = family
    results = results_with_a_sweep(tmp_path)
    (results / "figure.csv").write_bytes(b"\x89PNG\r\n\x1a\n\x00\xff")
    assert not cmd.is_curves_csv(results / "figure.csv")
    assert cli.main(["report", str(results), "-o", str(tmp_path / "rep")]) == 0
    cut = results / "cut.csv"
    lines = out.read_text().splitlines()
    cut.write_text("\n".join([*lines[:2], ",".join(lines[2].split(",")[:8])]) + "\n")
    assert cmd.is_curves_csv(cut)
    capsys.readouterr()
    assert cli.main(["report", str(results), "-o", str(tmp_path / "rep2")]) == exitcodes.BAD_INPUT
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "cut.csv: line 3 is not a curves row" in err and "; fix: " in err, err
    assert cli.main(["compare", str(cut), str(out)]) == exitcodes.BAD_INPUT
    assert "line 3" in capsys.readouterr().err


def test_the_unloaded_latency_runs_over_the_probes_own_region(monkeypatch) -> None:
    """Alone, the probe runs over thread 0's region of the loaded runs (the window's first
    1/threads under per-thread placement), not the whole window: twice the lines for two threads
    read as a slower 'unloaded' latency than the probe's at the lightest load."""
    from pmemlab.cli import curves

    seen: list[dict] = []

    class Captured(Exception):
        pass

    def capture(cfg, bed, args):
        seen.append(dict(cfg.base))
        raise Captured

    class Bench:
        facts = None

    class Bed:
        benches = [Bench()]

    monkeypatch.setattr(curves, "run_config", capture)
    monkeypatch.setattr(curves.P, "check_point", lambda point, facts: ["refused"])  # no chase alone
    setup = curves.Setup(threads=3, working_set=48 << 20, probe_op="load", write_op="store", base={})
    with pytest.raises(Captured):
        curves.unloaded(setup, Bed(), type("A", (), {"timeout": 60, "duration_ms": 200})())
    assert seen[0]["working_set"] == 16 << 20 and seen[0]["threads"] == 1
    # as long as a point of the curves, not a fixed count: 20000 hops were 3 ms, after the runner
    # sat idle, held against 200 ms points
    assert seen[0]["count"] == 0 and seen[0]["duration_ms"] == 200


def test_a_dram_target_grows_so_the_probe_region_exceeds_the_largest_cache(monkeypatch) -> None:
    """The window's default on the user backend's DRAM: with a largest cache of 48 MiB and 2
    threads the probe's slice must be 192 MiB, so the window is 384 MiB and the DRAM target (256
    MiB by default) is opened again at that size; a given --working-set is kept, and a target that
    cannot grow (a file) caps the window and the JSON's note says the probe may measure cache."""
    import argparse

    from pmemlab.cli import backend as backends
    from pmemlab.cli.oneliners import open_bed

    args = argparse.Namespace(backend="user", target=None, working_set=None, sysfs=None)
    bed = open_bed(args, None, backends.online_cpus())
    assert bed.sizing().target_size == 256 << 20
    bed, ws = cmd.size_window(args, bed, 2, 48 << 20)
    assert ws == 384 << 20 and bed.sizing().target_size == 384 << 20
    assert C.probe_region(ws, 2) >= C.PROBE_CACHE_MULTIPLE * (48 << 20)
    args.working_set = 7 << 20  # a given window: the target shrinks to it, in whole 2 MiB pages
    bed, ws = cmd.size_window(args, bed, 2, 48 << 20)
    assert ws == 7 << 20 and bed.sizing().target_size == 8 << 20
    args.working_set = 8 << 20
    note = C.cache_note(C.probe_region(8 << 20, 2), 48 << 20)
    assert "under 4 x the largest cache" in note


def test_the_json_says_the_probe_region_and_the_cache_it_is_sized_against(family) -> None:
    _, doc, _ = family
    assert doc["probe_region"] == C.probe_region(8 << 20, 2) and doc["largest_cache"] == cmd.largest_cache()
    assert any("largest cache" in n for n in doc["notes"]) == (doc["probe_region"] < 4 * doc["largest_cache"])


def test_one_served_runner_serves_every_sweep_of_the_command(monkeypatch, capsys) -> None:
    """The user backend keeps one served runner per target across the sweeps of one command:
    the unloaded runs and both rounds (8 points: a first round of 6 delays, then 2 more) go to
    the process the first run started (its target mapped once, the probe's chain kept), and the
    command ends it. Before, each sweep's end closed it: three processes for these three sweeps
    (issue 37)."""
    from pmemlab.backends.served import ServedRunner

    started: list[ServedRunner] = []
    start = ServedRunner.start

    def counted(self: ServedRunner, timeout_s: float):
        started.append(self)
        return start(self, timeout_s)

    monkeypatch.setattr(ServedRunner, "start", counted)
    code = cli.main(["curves", "--backend", "user", "--mixes", "100", "--points", "8", "--threads", "2",
                     "--duration-ms", "10", "--working-set", "8M", "--repeats", "1", "--max-repeats", "2",
                     "--max-delay", str(MAX_DELAY), "--json"])
    doc = json.loads(capsys.readouterr().out)
    # (more than the first round's 6 points: a second round ran)
    assert code == exitcodes.OK and len(doc["points"]) > cmd.FIRST_ROUND, doc["points"]
    assert len(started) == 1, f"{len(started)} served runners started for one command"
    assert not started[0].alive(), "the command left its served runner running"


def test_the_figures_caption_names_the_probes_target() -> None:
    """A curves sweep has one unnamed target: the caption said 'target:  (dram, user-dram)'."""
    import pandas as pd

    from pmemlab.analysis.resultset import Results, caption

    rows = pd.DataFrame({"target": ["dram"], "target_kind": ["user-dram"], "thread": ["all"], "status": ["ok"],
                         "source_csv": ["c.csv"], "point_key": ["p0"], "repeat": [0]})
    for given in (rows, rows.assign(target_label=[""])):
        fields = dict(part.split(": ", 1) for part in caption(Results("curves", cmd.probe_labelled(given))).split(" · ")
                      if ": " in part)
        assert fields["target"] == "probe (dram, user-dram)"
    assert list(cmd.probe_labelled(rows.assign(target_label=["fast"]))["target_label"]) == ["fast"]
