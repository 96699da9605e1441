"""The parts of a sweep, each on its own: plan and repeat policies, resume, the executor of one
run, recording, the sidecar, the summary, progress, exit codes, and the Sweep loop driven by an
in-process backend (no sysfs, no runner)."""

from __future__ import annotations

import io
import json
import math
import time
from pathlib import Path
from typing import Any, Callable, Mapping

import pandas as pd
import pytest

from pmemlab import exitcodes
from pmemlab import params as P
from pmemlab.backends.protocol import Backend, RunOutcome, load_identity
from pmemlab.backends.spec import BackendSpec
from pmemlab.backends.user import UserBackend
from pmemlab.config import Point, SweepConfig, expand, one_point, parse_config
from pmemlab.errors import ConfigError, Interrupted, ModuleBusy, ParamRefused, PmemlabError, ResumeMismatch
from pmemlab.errors import user_message
from pmemlab.sweep import (
    AdaptiveRepeats, Bench, CsvRecorder, Executor, Files, FixedRepeats, Lane, MemoryRecorder, Observations, Plan,
    Progress, ResumeState, Sidecar, Sweep, SweepFiles, SweepOptions, SweepReport, build, classify, fingerprint,
    load_done, media_notes, metric_values, one_point_sweep, policy_for, read_previous, resume, resume_identity,
    summarize_csv,
)
from pmemlab.sweep.resume import identity_diff
from pmemlab.backends.module import Module
from pmemlab.table import BASE_COLUMNS, HIST_COLUMNS

from testlib import TOP

COND = {"target": "/dev/pmem0", "target_kind": "fsdax", "target_size": 1 << 30, "target_node": 0,
        "target_page_size": 4096, "module_version": "0.1.0", "tsc_khz": 2_000_000}


def point(index: int = 0, key: str | None = None, skip: str = "", **params: Any) -> Point:
    values, problems = P.normalize({k: str(v) for k, v in params.items()})
    assert not problems
    return Point(index=index, params=values, varied=dict(params), key=f"k{index}" if key is None else key, skip_reason=skip)


def agg_row(key: str, status: str = "ok", bw: Any = 1.0, repeat: int = 0) -> dict[str, Any]:
    return {"point_key": key, "thread": "all", "status": status, "bw_gbps": bw, "repeat": repeat}


def result_text(gbps: float) -> str:
    ns = 1_000_000
    nbytes = int(gbps * ns)
    return (f"thread=0 cpu=0 node=0 op=load ops=10 bytes={nbytes} ticks={2 * ns} ns={ns} bw_mbps={gbps * 1000:.3f}\n"
            f"thread=all cpu=-1 node=-1 op=load ops=10 bytes={nbytes} ticks={2 * ns} ns={ns} "
            f"bw_mbps={gbps * 1000:.3f}\n")


class ScriptedBackend:
    """A Backend in-process: `script(values)` gives each run's outcome (or raises)."""

    kind = "kernel"

    def __init__(self, script: Callable[[Mapping[str, Any]], RunOutcome] | None = None) -> None:
        self.root = Path("scripted")
        self.script = script or (lambda v: RunOutcome("done", result=result_text(2.0), started=time.time(),
                                                      histogram="0 600 608 3\nall 600 608 3\n", run_id="1"))
        self.runs: list[dict[str, Any]] = []
        self.aborted = 0

    def loaded(self) -> bool:
        return True

    def require_loaded(self) -> None:
        return None

    def facts(self) -> dict[str, Any]:
        return {"target": "/dev/pmem0", "tsc_khz": 2_000_000}

    def target_facts(self, online_cpus: int | None = None) -> P.TargetFacts:
        return P.TargetFacts(online_cpus=online_cpus, extra=self.facts())

    def module_parameters(self) -> dict[str, str]:
        return {"target": "/dev/pmem0", "allow_overwrite": "1"}

    def current_params(self) -> dict[str, str]:
        return {}

    def state(self) -> str:
        return "idle"

    def last_error(self) -> str:
        return ""

    def identity(self) -> dict[str, Any]:
        return load_identity(self.kind, self.module_parameters())

    def check_target(self, want: str | None) -> None:
        return None

    def run(self, values: Mapping[str, Any], timeout_s: float = 600.0, poll_s: float = 0.002,
            on_poll: Callable[[], None] | None = None) -> RunOutcome:
        self.runs.append(dict(values))
        return self.script(values)

    def abort(self) -> None:
        self.aborted += 1

    def failure_fix(self, status: str) -> str:
        return f"fix {status}"


def executor(backend: Backend, **kw: Any) -> Executor:
    return Executor(backend, COND, kw.pop("facts", None), kw.pop("timeout_s", 5.0), **kw)


# ---- the Backend protocol ---------------------------------------------------------------------
def test_both_backends_and_the_spec(tmp_path: Path) -> None:
    backends: list[Backend] = [Module(tmp_path / "sys"), UserBackend("dram", {"dram_size": "8M"}),
                               ScriptedBackend()]
    assert [b.kind for b in backends] == ["kernel", "user", "kernel"]
    module = BackendSpec("kernel", sysfs=tmp_path / "sys").open()
    assert isinstance(module, Module) and module.root == tmp_path / "sys"
    user = BackendSpec("user", target="dram", options={"dram_size": "8M"}).open()
    assert isinstance(user, UserBackend) and user.root == Path("user:dram")
    # the resume identity: kind and the load parameters that change what a run measures
    assert user.identity() == {"backend": "user", "load": {"dram_size": "8M", "target": "dram"}}
    assert load_identity("kernel", {"target": "/dev/pmem0", "allow_overwrite": "1", "runner": "x"}) == \
        {"backend": "kernel", "load": {"target": "/dev/pmem0"}}
    assert "last_error" in module.failure_fix("error") and "pmemlab params" in module.failure_fix("refused")
    assert "runner" in user.failure_fix("refused")


# ---- plan and repeat policies -----------------------------------------------------------------
def test_fixed_repeats_plan_skips_done_and_counts_the_rest() -> None:
    pts = [point(0, op="load"), point(1, op="store")]
    plan = Plan(pts, FixedRepeats(3), done={("k0", 1), ("k1", 0)})
    slots = [(s.point.key, s.repeat) for s in plan.slots(Observations())]
    assert slots == [("k0", 0), ("k0", 2), ("k1", 1), ("k1", 2)]  # a point's repeats together
    assert plan.planned_runs() == 4
    assert not any(plan.beyond_plan(s) for s in plan.slots(Observations()))


def test_closing_a_point_returns_its_planned_repeats_not_done() -> None:
    plan = Plan([point(0), point(1)], FixedRepeats(4), done={("k0", 2)})
    got = []
    for slot in plan.slots(Observations()):
        got.append(slot.ids)
        if slot.point.key == "k0":
            rest = plan.close(slot)
            assert [s.repeat for s in rest] == [1, 3]  # 2 is done
    assert got == [("k0", 0), ("k1", 0), ("k1", 1), ("k1", 2), ("k1", 3)]


def test_adaptive_policy() -> None:
    pol = AdaptiveRepeats(metric="bw_gbps", ci_target=0.05, min_repeats=2, max_repeats=5)
    assert pol.planned == 2
    assert pol.wants(0, "k", []) and pol.wants(1, "k", [])  # below min: always
    assert not pol.wants(2, "k", [])  # no ok run gave the metric: stop
    assert not pol.wants(2, "k", [agg_row("k", "error", None), agg_row("k", "skipped", None)])
    tight = [agg_row("k", bw=10.0), agg_row("k", bw=10.01)]
    loose = [agg_row("k", bw=1.0), agg_row("k", bw=10.0)]
    assert not pol.wants(2, "k", tight) and pol.wants(2, "k", loose)
    assert not pol.wants(5, "k", loose)  # the cap
    assert pol.wants(2, "k", [agg_row("k", bw=3.0), agg_row("k", "error", None)])  # one value: no CI yet


def test_adaptive_plan_follows_the_observations() -> None:
    """The policy sees each run as soon as it is recorded: noisy values run to the cap, a
    steady point stops at min_repeats; extra runs are beyond the plan."""
    pol = AdaptiveRepeats(metric="bw_gbps", ci_target=0.01, min_repeats=2, max_repeats=4)
    plan = Plan([point(0), point(1)], pol)
    obs = Observations()
    values = {"k0": iter([1.0, 5.0, 2.0, 9.0]), "k1": iter([7.0, 7.0])}
    seen = []
    for slot in plan.slots(obs):
        seen.append((slot.ids, plan.beyond_plan(slot)))
        obs.add([agg_row(slot.point.key, bw=next(values[slot.point.key]), repeat=slot.repeat)])
    assert seen == [(("k0", 0), False), (("k0", 1), False), (("k0", 2), True), (("k0", 3), True),
                    (("k1", 0), False), (("k1", 1), False)]
    assert plan.planned_runs() == 4


def test_policy_for_a_config() -> None:
    assert policy_for(parse_config("[sweep]\nrepeats = 3\n")) == FixedRepeats(3)
    cfg = parse_config("[sweep.adaptive]\nmetric = 'lat_ns_p50'\nci_target = 0.1\nmax_repeats = 7\n")
    assert policy_for(cfg) == AdaptiveRepeats("lat_ns_p50", 0.1, 2, 7)


def test_observations_and_metric_values() -> None:
    obs = Observations([agg_row("a", bw=1.0), {"point_key": "a", "thread": "0", "bw_gbps": 9.0},
                        agg_row("b", bw="2.5"), agg_row("a", bw="nan"), agg_row("a", "error", bw=4.0),
                        agg_row("a", bw="x")])
    assert len(obs.rows("a")) == 4 and obs.rows("zz") == []
    assert metric_values(obs.rows("a"), "a", "bw_gbps") == [1.0]
    assert metric_values(obs.rows("b"), "b", "bw_gbps") == [2.5]


# ---- resume -----------------------------------------------------------------------------------
def write_csv(path: Path, rows: list[dict[str, Any]], extra: str = "") -> None:
    df = pd.DataFrame(rows)
    path.write_text(df.to_csv(index=False) + extra)


def test_load_done_keeps_whole_completed_runs(tmp_path: Path) -> None:
    csv = tmp_path / "r.csv"
    rows = [
        {"point_key": "a", "repeat": 0, "thread": "0", "status": "ok"},
        {"point_key": "a", "repeat": 0, "thread": "all", "status": "ok"},
        {"point_key": "a", "repeat": 1, "thread": "0", "status": "ok"},  # partial: no aggregate row
        {"point_key": "b", "repeat": 0, "thread": "all", "status": "error"},
        {"point_key": "c", "repeat": 0, "thread": "all", "status": "skipped"},
        {"point_key": "d", "repeat": 0, "thread": "all", "status": "skipped"},
    ]
    write_csv(csv, rows, extra="a,0,all,o")  # a torn last line
    header, kept, done = load_done(csv, skipped_now={"c"})
    assert header == ["point_key", "repeat", "thread", "status"]
    assert done == {("a", 0), ("c", 0)}  # d can run now: run it again
    assert [(r["point_key"], r["thread"]) for r in kept] == [("a", "0"), ("a", "all"), ("c", "all")]
    assert load_done(csv)[2] == {("a", 0), ("c", 0), ("d", 0)}


CFG = """
[sweep]
name = "t"
repeats = 2
[base]
duration_ms = 2
[axes]
op = ["load", "store"]
"""


def test_resume_identity_and_fingerprint() -> None:
    cfg = parse_config(CFG)
    ident = resume_identity(cfg, COND, load_identity("kernel", {"target": "/dev/pmem0"}))
    assert ident["config"] == {"name": "t", "scale": "full", "base.duration_ms": 2, "axes.op": ["load", "store"],
                               "filters": []}
    assert ident["target"]["backend"] == "kernel" and ident["target"]["load"] == {"target": "/dev/pmem0"}
    assert ident["target"]["target_kind"] == "fsdax" and "tsc_khz" not in ident["target"]
    more = resume_identity(parse_config(CFG.replace("repeats = 2", "repeats = 5")), COND,
                           load_identity("kernel", {"target": "/dev/pmem0"}))
    assert fingerprint(more) == fingerprint(ident)  # repeats decide how many runs, not what they measure
    other = resume_identity(parse_config(CFG.replace("duration_ms = 2", "duration_ms = 3")), COND,
                            load_identity("user", {"target": "dram"}))
    assert fingerprint(other) != fingerprint(ident)
    assert identity_diff(ident, other) == ["base.duration_ms: 2 -> 3", "backend: kernel -> user",
                                           'module load parameters: {"target": "/dev/pmem0"} -> {"target": "dram"}']


def test_resume_refuses_or_returns_the_state(tmp_path: Path) -> None:
    cfg = parse_config(CFG)
    points = expand(cfg)
    ident = resume_identity(cfg, COND, load_identity("kernel", {}))
    csv = tmp_path / "r.csv"
    assert resume(csv, {}, ident, points, COND) is None  # nothing to resume
    csv.write_text("")
    assert resume(csv, {}, ident, points, COND) is None
    rows = [{"point_key": p.key, "repeat": 0, "thread": "all", "status": "ok", **{k: COND[k] for k in
            ("target", "target_kind", "module_version")}} for p in points]
    write_csv(csv, rows)
    state = resume(csv, {"resume": {"fingerprint": fingerprint(ident), "identity": ident}}, ident, points, COND)
    assert isinstance(state, ResumeState) and state.done == {(p.key, 0) for p in points} and len(state.kept) == 2
    # a sidecar of another configuration
    with pytest.raises(ResumeMismatch) as ei:
        resume(csv, {"resume": {"fingerprint": "0" * 16, "identity": {}}}, ident, points, COND)
    assert "another configuration or target" in ei.value.cause and "base.duration_ms" in ei.value.cause
    # rows without their sidecar (or one without a fingerprint): nothing tells what measured them
    for previous, says in (({}, "r.json is missing"), ({"sweep": "t"}, "r.json has no resume fingerprint")):
        with pytest.raises(ResumeMismatch) as ei:
            resume(csv, previous, ident, points, COND)
        assert f"holds 2 rows but {csv.with_suffix('.json')}" in ei.value.cause and says in ei.value.cause
        assert "--fresh" in ei.value.fix
    matching = {"resume": {"fingerprint": fingerprint(ident), "identity": ident}}
    # rows of points this expansion does not have, under a matching sidecar
    with pytest.raises(ResumeMismatch) as ei:
        resume(csv, matching, ident, points[:1], COND)
    assert "1 rows belong to 1 points" in ei.value.cause
    # rows whose own condition columns differ, under a matching sidecar
    with pytest.raises(ResumeMismatch) as ei:
        resume(csv, matching, ident, points, {**COND, "target_kind": "dram"})
    assert "with target_kind=fsdax, this run has target_kind=dram" in ei.value.cause
    assert ei.value.exit_code == exitcodes.BAD_INPUT


# ---- one run ----------------------------------------------------------------------------------
def test_classify() -> None:
    assert classify(RunOutcome("done")) == ("ok", "")
    assert classify(RunOutcome("timeout", error="no result after 1 s; run aborted")) == \
        ("timeout", "no result after 1 s; run aborted")
    assert classify(RunOutcome("error:boom", error="boom")) == ("error", "boom")
    assert classify(RunOutcome("error:results (-12)", error="no memory")) == ("error", "results (-12): no memory")
    assert classify(RunOutcome("error:aborted")) == ("error", "aborted")


def test_executor_statuses() -> None:
    ids = {"sweep": "s", "point": 0, "point_key": "k0", "repeat": 0}
    ok = ScriptedBackend()
    res = executor(ok).run(point(0, op="load"), ids)
    assert res.status == "ok" and not res.failed and [r["thread"] for r in res.rows] == [0, "all"]
    assert res.aggregate["bw_gbps"] == pytest.approx(2.0) and res.aggregate["target_kind"] == "fsdax"
    assert res.hist == [{**ids, "thread": 0, "lo_ticks": 600, "hi_ticks": 608, "count": 3, "lo_ns": 300.0,
                         "hi_ns": 304.0},
                        {**ids, "thread": "all", "lo_ticks": 600, "hi_ticks": 608, "count": 3, "lo_ns": 300.0,
                         "hi_ns": 304.0}]
    # skipped: the backend is not asked
    res = executor(ok).run(point(0, skip="op: needs clwb", op="store+clwb"), ids)
    assert (res.status, res.error, len(ok.runs)) == ("skipped", "op: needs clwb", 1) and not res.failed

    def refuse_key(v: Mapping[str, Any]) -> RunOutcome:
        raise ParamRefused("access_size", "4096", "too large")

    def refuse_start(v: Mapping[str, Any]) -> RunOutcome:
        raise ParamRefused("run", "1", "window past the end")

    for script, text in ((refuse_key, "access_size=4096: too large"), (refuse_start, "refused at start: window past the end")):
        res = executor(ScriptedBackend(script)).run(point(0), ids)
        assert (res.status, res.error, res.hist) == ("refused", text, []) and res.failed
        assert res.aggregate["run_s"] == 0.0 and len(res.rows) == 1
    res = executor(ScriptedBackend(lambda v: RunOutcome("error:boom", error="boom", result="x"))).run(point(0), ids)
    assert (res.status, res.error, res.aggregate.get("bw_gbps")) == ("error", "boom", None)
    # an ok state with an empty result is an error row
    res = executor(ScriptedBackend(lambda v: RunOutcome("done"))).run(point(0), ids)
    assert res.status == "error" and "result file is empty" in res.error
    # a backend error that is not a run's outcome ends the sweep: it propagates
    with pytest.raises(ModuleBusy):
        def busy(v: Mapping[str, Any]) -> RunOutcome:
            raise ModuleBusy("a run is active", "wait")
        executor(ScriptedBackend(busy)).run(point(0), ids)


def test_executor_resolves_remote_cpus_or_skips() -> None:
    ids = {"sweep": "s", "point": 0, "point_key": "k0", "repeat": 0}
    b = ScriptedBackend()
    facts = P.TargetFacts(online_cpus=4, target_node=0, node_cpus={0: (0, 1), 1: (2, 3)},
                          node_distance={0: {0: 10, 1: 20}, 1: {0: 20, 1: 10}})
    res = executor(b, facts=facts).run(point(0, cpus="remote", threads=2), ids)
    assert res.status == "ok" and b.runs[-1]["cpus"] == "2-3" and res.aggregate["cpus"] == "remote"
    res = executor(b, facts=P.TargetFacts(online_cpus=2)).run(point(0, cpus="remote"), ids)
    assert res.status == "skipped" and res.error.startswith("cpus = remote:") and len(b.runs) == 1


def test_executor_media_counters_around_ok_runs_only() -> None:
    snaps = iter([{"0x1": {"MediaWrites": 10, "WriteRequests": 5}}, {"0x1": {"MediaWrites": 20, "WriteRequests": 10}}])

    class Media:
        available = True

        def snapshot(self) -> dict[str, dict[str, int]]:
            return next(snaps)

    ids = {"sweep": "s", "point": 0, "point_key": "k0", "repeat": 0}
    res = executor(ScriptedBackend(), media=Media()).run(point(0), ids)  # type: ignore[arg-type]
    assert res.aggregate["media_write_64b"] == 10 and res.aggregate["ewr"] == 0.5
    assert "ewr" not in res.rows[0]  # per-thread rows carry no media counters


# ---- recording, sidecar, summary ------------------------------------------------------------
def test_csv_recorder_new_resumed_and_new_columns(tmp_path: Path) -> None:
    files = SweepFiles(tmp_path / "r.csv")
    rec = CsvRecorder(files)
    rec.start(None)
    assert files.csv.read_text() == ",".join(BASE_COLUMNS) + "\n" and not files.histogram.exists()
    rec.record([{"point_key": "a", "repeat": 0, "thread": "all", "status": "ok"}],
               [{"point_key": "a", "repeat": 0, "thread": 0, "lo_ticks": 1, "hi_ticks": 2, "count": 3}])
    rec.record([{"point_key": "b", "repeat": 0, "thread": "all", "status": "ok", "new_counter": 7}])
    df = pd.read_csv(files.csv)
    assert list(df["point_key"]) == ["a", "b"] and list(df.columns)[-1] == "new_counter"
    assert list(pd.read_csv(files.histogram).columns) == list(HIST_COLUMNS)
    # a resumed session: the kept rows, and the histogram of kept runs only
    header, kept, done = load_done(files.csv)
    rec2 = CsvRecorder(files)
    rec2.start(ResumeState(header=header, kept=[r for r in kept if r["point_key"] == "b"], done={("b", 0)}))
    assert list(pd.read_csv(files.csv)["point_key"]) == ["b"] and "new_counter" in rec2.rows.columns
    assert len(pd.read_csv(files.histogram)) == 0
    mem = MemoryRecorder()
    mem.record([{"a": 1}], [{"h": 2}])
    assert mem.rows == [{"a": 1}] and mem.hist == [{"h": 2}]


def test_sidecar_sessions(tmp_path: Path) -> None:
    cfg = parse_config(CFG, path=tmp_path / "t.toml")
    points = expand(cfg)
    files = SweepFiles(tmp_path / "t.csv")
    ident = resume_identity(cfg, COND, load_identity("kernel", {}))
    info = {"toolkit": {"version": "0.1.0"}}
    side = Sidecar.begin(files, cfg, points, info, COND, ident, ["a note"], {}, ["pmemlab", "sweep"], 0)
    doc = json.loads(files.sidecar.read_text())
    assert list(doc) == ["pmemlab_sidecar", "sweep", "description", "csv", "summary_csv", "histogram_csv",
                         "started_at", "ended_at", "status", "toolkit", "config", "points", "axes", "conditions",
                         "resume", "machine", "notes", "sessions", "columns"]
    assert doc["status"] == "running" and doc["points"] == 2 and doc["axes"] == {"op": ["load", "store"]}
    assert doc["resume"]["fingerprint"] == fingerprint(ident) and doc["csv"] == "t.csv"
    side.note("summary not written: x")
    side.end("interrupted", {"runs": 3, "ok": 2, "failed": 1, "skipped": 0}, "between runs")
    side.write()
    doc = json.loads(files.sidecar.read_text())
    assert doc["status"] == "interrupted" and doc["ended_at"] and doc["notes"][-1] == "summary not written: x"
    assert list(doc["sessions"][0]) == ["started_at", "ended_at", "argv", "status", "resumed_runs", "interrupted",
                                        "runs", "ok", "failed", "skipped"]
    # the next session carries the first one and the start time over
    prev = read_previous(files.sidecar)
    side2 = Sidecar.begin(files, cfg, points, info, COND, ident, [], prev, [], 3)
    assert len(side2.doc["sessions"]) == 2 and side2.doc["started_at"] == doc["started_at"]
    assert side2.doc["sessions"][1]["resumed_runs"] == 3
    files.sidecar.write_text("{not json")
    assert read_previous(files.sidecar) == {} and read_previous(tmp_path / "none.json") == {}
    files.sidecar.write_text("[1]")
    assert read_previous(files.sidecar) == {}


def test_media_notes() -> None:
    class Media:
        def __init__(self, available: bool) -> None:
            self.available = available

    info = {"ipmctl": {"note": "ipmctl not installed"}, "target": {"region": "region0"}}
    assert media_notes(info, None, None) == ["ipmctl not installed"]
    assert media_notes({}, Media(False), None) == ["ipmctl unavailable: media counter columns are empty"]  # type: ignore[arg-type]
    assert media_notes(info, Media(True), [1, 0x1001]) == [  # type: ignore[arg-type]
        "media counters: summed over the DIMMs of region0 (ipmctl DimmIDs 0x0001, 0x1001)"]
    assert "every DIMM" in media_notes(info, Media(True), None)[0]  # type: ignore[arg-type]


def test_summary_over_ok_aggregate_rows(tmp_path: Path) -> None:
    csv = tmp_path / "s.csv"
    rows = [{"sweep": "s", "point": 0, "point_key": "a", "repeat": r, "thread": "all", "status": "ok",
             "op": "load", "bw_gbps": v} for r, v in enumerate([1.0, 2.0, 3.0])]
    rows += [{"sweep": "s", "point": 0, "point_key": "a", "repeat": 3, "thread": "all", "status": "error",
              "op": "load", "bw_gbps": 100.0},
             {"sweep": "s", "point": 0, "point_key": "a", "repeat": 0, "thread": "0", "status": "ok",
              "op": "load", "bw_gbps": 50.0}]
    write_csv(csv, rows)
    s = summarize_csv(csv).iloc[0]
    assert s["n"] == 3 and s["bw_gbps_mean"] == 2.0 and s["bw_gbps_stddev"] == 1.0
    assert s["bw_gbps_ci95"] == pytest.approx(2.4841377, rel=1e-6)  # t(0.975, 2) * 1 / sqrt(3)
    assert s["op"] == "load"


# ---- progress ---------------------------------------------------------------------------------
def test_progress_knows_a_terminal_and_can_be_off() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    off = Progress(5, "x", enabled=False, stream=io.StringIO())
    off.grow()
    off.advance()
    off.close()
    assert not off.enabled and off.stream.getvalue() == ""  # type: ignore[attr-defined]
    assert Progress(1, "x", enabled=False, stream=Tty()).interactive
    # a terminal gets the bar, redrawn in place
    tty = Tty()
    bar = Progress(2, "demo", stream=tty)
    bar.advance(point(0, op="load"), {"bw_gbps": 2.5, "status": "ok"})
    bar.advance(point(1, op="store"), {"bw_gbps": None, "status": "refused"})
    bar.close()
    assert "\r" in tty.getvalue() and "2/2 runs" in tty.getvalue() and "|" in tty.getvalue()


def test_progress_elsewhere_is_a_line_at_most_every_interval() -> None:
    now = [100.0]
    stream = io.StringIO()
    lines = Progress(40, "demo", stream=stream, interval_s=10.0, clock=lambda: now[0])
    assert lines.enabled and not lines.interactive
    for i in range(40):  # a run every 0.75 s: 30 s in all
        now[0] += 0.75
        if i == 20:
            lines.grow()
        lines.advance(point(i, op="load"), {"bw_gbps": 2.5, "status": "ok" if i != 3 else "refused"})
    lines.close()
    text = stream.getvalue()
    assert "\r" not in text and "|" not in text
    got = text.splitlines()
    # the first run, then one line per 10 s (runs 15 and 29: 11.25 s and 21.75 s in), and the end
    assert [int(ln.split()[1].split("/")[0]) for ln in got] == [1, 15, 29, 40]
    assert got[0] == "demo: 1/40 runs (2 %), 1s, ~29s left; last: op=load 2.50 GB/s"
    assert got[-1] == "demo: 40/41 runs (98 %), 30s, ~1s left; last: op=load 2.50 GB/s"
    # a refused run says so in the line that follows it
    short = io.StringIO()
    p = Progress(2, "demo", stream=short, clock=lambda: 0.0)
    p.advance(point(1, op="store"), {"bw_gbps": None, "status": "refused"})
    p.close()
    assert short.getvalue() == "demo: 1/2 runs (50 %), 0s; last: op=store [refused]\n"


# ---- the Sweep loop ---------------------------------------------------------------------------
def test_one_point_sweep_keeps_the_rows_in_memory() -> None:
    b = ScriptedBackend()
    sweep, rec = one_point_sweep(point(0, key="", op="load"), Bench(b, {"cpu": {"tsc": {"tsc_khz": 2_000_000}}}), 5.0)
    report = sweep.run()
    assert (report.runs, report.ok, report.status, report.csv) == (1, 1, "complete", None)
    assert [r["thread"] for r in rec.rows] == [0, "all"] and rec.rows[-1]["sweep"] == "run"
    assert rec.rows[-1]["point_key"] == "" and rec.rows[-1]["tsc_khz"] == 2_000_000 and len(rec.hist) == 2
    assert exitcodes.for_run(report) == exitcodes.OK


def test_a_sweep_is_built_in_one_place() -> None:
    """An Executor and a Sweep are made in sweep/build.py alone (every command's sweep goes through
    build: `pmemlab sweep` over the backend or an axis, the one-liners, curves, `pmemlab run`)."""
    import re

    package = TOP / "userspace" / "pmemlab"
    made = {str(path.relative_to(package)): n for path in sorted(package.rglob("*.py"))
            if (n := len(re.findall(r"(?<!class )(?<![\w.])(?:\w*Executor|Sweep)\(", path.read_text())))}
    assert made == {"sweep/build.py": 5}, made  # an Executor per lane, opened or not; the AxisExecutor; two Sweeps


def test_the_backend_as_it_is_is_an_axis_of_one_and_a_target_not_opened_a_lane_without_backend() -> None:
    """build runs each point on the lane its target labels: the backend as it is ('' ), a target
    of an axis, and one that was not opened, whose runs are errors with the reason (its skipped
    points skipped), with the conditions of its lane; every opened backend is closed at the end."""
    closed: list[str] = []

    class Closing(ScriptedBackend):
        def close(self) -> None:
            closed.append("closed")

    bench = Bench(Closing(), {"cpu": {"tsc": {"tsc_khz": 2_000_000}}})
    cfg = SweepConfig(path=None, text="", data={}, name="axis", repeats=2)
    alone, rec = build(cfg, [point(0, key="", op="load")], [Lane.of(bench)])
    assert rec is not None and alone.run().ok == 2 and closed == ["closed"]
    assert {r["target_label"] for r in rec.rows} == {""} and rec.rows[-1]["tsc_khz"] == 2_000_000
    pts = [Point(index=0, params=point(0).params, varied={}, key="a0", target="a"),
           Point(index=0, params=point(0).params, varied={}, key="b0", target="b"),
           Point(index=1, params=point(1).params, varied={}, key="b1", target="b", skip_reason="op: no")]
    lanes = [Lane("a", bench, bench.conditions), Lane("b", None, {"target": "dram"}, refused="busy")]
    both, rec = build(cfg, pts, lanes)
    report = both.run()
    assert rec is not None and (report.ok, report.failed, report.skipped) == (2, 2, 2) and closed == ["closed"] * 2
    b = [r for r in rec.rows if r["target_label"] == "b"]
    assert {(r["status"], r["error"]) for r in b} == {("error", "target b not opened: busy"), ("skipped", "op: no")}
    assert {r["target"] for r in b} == {"dram"} and not any(r.get("tsc_khz") for r in b)


def make_sweep(tmp_path: Path, backend: Backend, config: str = CFG, **opts: Any) -> tuple[Sweep, SweepConfig]:
    cfg = parse_config(config, path=tmp_path / "t.toml")
    points = expand(cfg)
    bench = Bench(backend, {"cpu": {"tsc": {"tsc_khz": 2_000_000}}, "target": {"device": "/dev/pmem0"}})
    sweep, _ = build(cfg, points, [Lane.of(bench)], files=Files.one_target(
        cfg, points, bench, SweepOptions(output=tmp_path / "out" / "t.csv", progress=False, **opts)))
    return sweep, cfg


def test_sweep_skipped_point_records_every_repeat_with_the_reason(tmp_path: Path) -> None:
    b = ScriptedBackend()
    cfg = CFG.replace('op = ["load", "store"]', 'cpus = ["", "remote"]')
    sweep, _ = make_sweep(tmp_path, b, cfg)
    report = sweep.run()
    assert (report.runs, report.ok, report.skipped, len(b.runs)) == (4, 2, 2, 2)
    df = pd.read_csv(tmp_path / "out" / "t.csv", keep_default_na=False).query("thread == 'all'")
    skipped = df[df["status"] == "skipped"]
    assert list(skipped["repeat"]) == [0, 1] and skipped["error"].str.startswith("cpus = remote:").all()
    assert exitcodes.for_sweep(report) == exitcodes.OK


def test_sweep_fail_fast_and_exit_codes(tmp_path: Path) -> None:
    b = ScriptedBackend(lambda v: RunOutcome("error:boom", error="boom"))
    sweep, _ = make_sweep(tmp_path, b, fail_fast=True)
    with pytest.raises(PmemlabError) as ei:
        sweep.run()
    assert "point 0 (op=load) failed: error: boom" in ei.value.cause and len(b.runs) == 1
    assert sweep.report.status == "failed" and sweep.report.failed == 1
    side = json.loads((tmp_path / "out" / "t.json").read_text())
    assert side["status"] == "failed" and side["sessions"][-1]["failed"] == 1
    assert exitcodes.for_sweep(sweep.report) == exitcodes.FAILED
    # one ok run among failures: partial, a code of its own
    part = SweepReport(csv=None, sidecar=None, summary=None, points=2, runs=2, ok=1, failed=1)
    assert exitcodes.for_sweep(part) == exitcodes.PARTIAL == 3 and exitcodes.for_run(part) == exitcodes.FAILED
    # every run of this session failed, but ok runs were kept from an earlier one: partial too
    resumed = SweepReport(csv=None, sidecar=None, summary=None, points=2, runs=1, ok=0, failed=1, resumed=3,
                          resumed_ok=1)
    assert exitcodes.for_sweep(resumed) == exitcodes.PARTIAL
    # kept runs that were all skipped do not make a failed session partial
    skipped_only = SweepReport(csv=None, sidecar=None, summary=None, points=2, runs=1, ok=0, failed=1, resumed=1)
    assert exitcodes.for_sweep(skipped_only) == exitcodes.FAILED
    # skipped points (this machine cannot run them) count as done
    skips = SweepReport(csv=None, sidecar=None, summary=None, points=2, runs=2, ok=1, skipped=1)
    assert exitcodes.for_sweep(skips) == exitcodes.OK


def test_sweep_interrupted_during_a_run(tmp_path: Path) -> None:
    calls = {"n": 0}

    def script(v: Mapping[str, Any]) -> RunOutcome:
        calls["n"] += 1
        if calls["n"] == 3:
            raise Interrupted("interrupted (Ctrl-C); the module run was aborted")
        return RunOutcome("done", result=result_text(1.0), started=time.time())

    sweep, _ = make_sweep(tmp_path, ScriptedBackend(script))
    with pytest.raises(Interrupted) as ei:
        sweep.run()
    assert ei.value.cause.startswith("interrupted after 2 runs; the run in progress was aborted;")
    assert "rerun the same command to resume" in ei.value.fix
    assert sweep.report.interrupted == "during a run (aborted)"
    assert (tmp_path / "out" / "t.summary.csv").exists()
    # the one-point sweep of `pmemlab run` passes the backend's own message on
    one, _ = one_point_sweep(point(0), Bench(ScriptedBackend(lambda v: script(v)), {}), 5.0)
    calls["n"] = 2
    with pytest.raises(Interrupted) as ei:
        one.run()
    assert ei.value.cause == "interrupted (Ctrl-C); the module run was aborted"
    assert exitcodes.for_error(ei.value) == exitcodes.INTERRUPTED


def test_sweep_resumes_from_the_files_it_wrote(tmp_path: Path) -> None:
    b = ScriptedBackend()
    make_sweep(tmp_path, b)[0].run()
    assert len(b.runs) == 4
    again, _ = make_sweep(tmp_path, b, CFG.replace("repeats = 2", "repeats = 3"))
    report = again.run()
    assert (report.resumed, report.runs, len(b.runs)) == (4, 2, 6)
    df = pd.read_csv(tmp_path / "out" / "t.csv").query("thread == 'all'")
    assert sorted(df["repeat"]) == [0, 0, 1, 1, 2, 2]
    side = json.loads((tmp_path / "out" / "t.json").read_text())
    assert [s["runs"] for s in side["sessions"]] == [4, 2]
    with pytest.raises(ResumeMismatch):
        make_sweep(tmp_path, b, CFG.replace("duration_ms = 2", "duration_ms = 9"))


# ---- the command line's point, errors, exit codes ----------------------------------------------
def test_one_point_of_the_command_line() -> None:
    values, _ = P.normalize({"op": "load", "interleave_ways": "2"})
    facts = P.TargetFacts(online_cpus=2)
    pt = one_point(values, ["op", "interleave_ways"], facts, {"interleave_ways": 6})
    assert pt.params["interleave_ways"] == 2 and pt.key == "" and pt.index == 0  # given: it wins
    values, _ = P.normalize({"op": "load"})
    assert one_point(values, ["op"], facts, {"interleave_ways": 6}).params["interleave_ways"] == 6
    values, _ = P.normalize({"threads": "8"})
    with pytest.raises(ConfigError) as ei:
        one_point(values, ["threads"], facts)
    assert ei.value.cause.startswith("this target cannot run: threads = 8") and ei.value.exit_code == 2
    assert "\n" not in ei.value.report()
    values, _ = P.normalize({"cpus": "remote"})
    with pytest.raises(ConfigError) as ei:
        one_point(values, ["cpus"], P.TargetFacts(online_cpus=2))  # node unknown: cannot resolve
    assert "this target cannot run" in ei.value.cause and "cpus = 'remote'" in ei.value.cause


def test_error_lines_and_exit_codes() -> None:
    err = ModuleBusy("a run is active", "wait")
    assert user_message(err) == "pmemlab: a run is active; fix: wait" and exitcodes.for_error(err) == 1
    assert user_message(KeyboardInterrupt()) == "pmemlab: interrupted"
    assert exitcodes.for_error(KeyboardInterrupt()) == 130
    assert user_message(BrokenPipeError()) == "" and exitcodes.for_error(BrokenPipeError()) == 0
    assert exitcodes.for_error(ConfigError("x")) == exitcodes.BAD_INPUT
    assert not math.isnan(exitcodes.FAILED)


def test_observations_keep_only_what_the_policy_reads() -> None:
    # issue 37: memory flat over 10,000 points: a point's aggregate rows kept for the repeat
    # policy hold its columns, not the row's ~150 cells
    from pmemlab.sweep.plan import AdaptiveRepeats, FixedRepeats, Observations, metric_values, policy_columns

    row = {"point_key": "a", "thread": "all", "status": "ok", "bw_gbps": "1.5", "insn": "vmovdqa"}
    policy = AdaptiveRepeats(metric="bw_gbps", ci_target=0.05, min_repeats=2, max_repeats=5)
    obs = Observations([row, {**row, "thread": "0"}], policy_columns(policy))
    assert obs.rows("a") == [{"point_key": "a", "thread": "all", "status": "ok", "bw_gbps": "1.5"}]
    assert metric_values(obs.rows("a"), "a", "bw_gbps") == [1.5]
    assert policy_columns(FixedRepeats(3)) == ()
    assert Observations([row]).rows("a") == [row]  # without keep: whole rows, as before
