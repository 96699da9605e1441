"""The controller's own cost per point (issue 37, point 3), held as counts against the stand-in
module (fixtures/fake_pmemlab.py), never as a time: within a run (backends/module.py Module.run),
what cannot change within a load is read at the load's first run only (the target's placement, a
parameter file's existence), the state once before the run and once after each poll's sleep (not
right after the `run` write: the module sets `running` before the write returns); and the rows
carry what reading everything at every run gives."""
from __future__ import annotations

import csv
import io
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweep_toml import bandwidth_toml

import pmemlab.backends.module as module_mod
import pmemlab.cli as cli
from pmemlab import results, table
from pmemlab.backends.facts import PLACEMENT_FACTS
from pmemlab.backends.module import Module
from pmemlab.table import read_rows

CONFIG = bandwidth_toml("seed = [1, 2, 3, 4, 5]", repeats=2)
DRAM = {"target": "dram", "dram_size": "64M", "dram_nodes": "0,1", "dram_weights": "3,1"}
POINT = {"mode": "bandwidth", "op": "load", "access_size": 256, "duration_ms": 2, "working_set": "1M"}


@pytest.fixture
def config_text() -> str:
    return CONFIG


class RunCounts:
    """What Module.run does with the stand-in's files, per run: reads by file name, existence
    checks of its files, and the poll's sleeps."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Counter]] = []

    def __getitem__(self, what: str) -> Counter:
        return sum((r[what] for r in self.runs), Counter())

    def per_run(self, what: str, name: str) -> list[int]:
        return [r[what][name] for r in self.runs]


@pytest.fixture
def counts(fake, monkeypatch: pytest.MonkeyPatch) -> RunCounts:
    out = RunCounts()
    current: list[dict[str, Counter] | None] = [None]
    run, read, exists = Module.run, fake.read, Path.exists

    def counted_run(self, *a, **k):  # type: ignore[no-untyped-def]
        current[0] = {"read": Counter(), "exists": Counter(), "sleep": Counter()}
        out.runs.append(current[0])
        try:
            return run(self, *a, **k)
        finally:
            current[0] = None

    def counted_read(path: Path) -> str:
        if current[0] is not None:
            current[0]["read"][Path(path).name] += 1
        return read(path)

    def counted_exists(self: Path, *a, **k) -> bool:  # type: ignore[no-untyped-def]
        # the controller's (backends/module.py), not the stand-in's own
        if current[0] is not None and sys._getframe(1).f_code.co_filename == module_mod.__file__:
            current[0]["exists"][self.name] += 1
        return exists(self, *a, **k)

    def counted_sleep(seconds: float) -> None:
        if current[0] is not None:
            current[0]["sleep"]["poll"] += 1
        time.sleep(seconds)

    monkeypatch.setattr(Module, "run", counted_run)
    monkeypatch.setattr(fake, "read", counted_read)
    monkeypatch.setattr(Path, "exists", counted_exists)
    monkeypatch.setattr(module_mod, "time", SimpleNamespace(sleep=counted_sleep, time=time.time,
                                                            monotonic=time.monotonic))
    return out


def test_a_sweep_reads_at_each_point_only_what_can_change(env, counts: RunCounts) -> None:
    fake, cfg, out = env
    fake.reload(DRAM)  # a target with a placement: its pages on two nodes
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    assert len(counts.runs) == len(fake.runs) == 10
    # the placement is a fact of the load: read at its first run, then not again (params_gen unchanged)
    for name in PLACEMENT_FACTS:
        assert counts.per_run("read", name) == [1] + [0] * 9, name
    # the state: once before the run, then once after each of the poll's sleeps
    for r in counts.runs:
        assert r["read"]["state"] == 1 + r["sleep"]["poll"], r
    # a parameter's file is looked for only while it is not held (the first run)
    assert sum(counts.runs[0]["exists"].values()) > 0
    assert [sum(r["exists"].values()) for r in counts.runs[1:]] == [0] * 9
    for name in ("result", "params_gen", "run_id", "histogram"):
        assert counts.per_run("read", name) == [1] * 10, name
    # and every row carries the placement the module shows
    rows = read_rows(out)
    shown = fake.module().placement()
    assert shown["target_placement"] == "module" and set(shown) == set(PLACEMENT_FACTS)
    for name in PLACEMENT_FACTS:
        assert set(rows[name].astype(str)) == {shown[name]}, name


def test_a_reload_or_a_write_from_elsewhere_reads_the_placement_again(fake, counts: RunCounts) -> None:
    mod = fake.module()
    fake.reload(DRAM)
    first = [mod.run(POINT) for _ in range(2)]
    # insmod again with the pages elsewhere: the next run's rows carry the new load's placement
    fake.reload({**DRAM, "dram_weights": "1,1"})
    second = [mod.run(POINT) for _ in range(2)]
    fake.module().write("op", "ntstore")  # another controller between two points: read again too
    third = mod.run(POINT)
    assert [o.state for o in [*first, *second, third]] == ["done"] * 5
    assert counts.per_run("read", "target_weights") == [1, 0, 1, 0, 1]
    assert {o.conditions["target_weights"] for o in first} == {"3,1"}
    assert {o.conditions["target_weights"] for o in [*second, third]} == {"1,1"}
    assert all(o.conditions == fake.module().placement() for o in [*second, third])


def test_a_module_without_params_gen_reads_the_placement_at_every_run(fake, counts: RunCounts) -> None:
    fake.reload(DRAM)
    (fake.root / "params_gen").unlink()
    mod = fake.module()
    outs = [mod.run(POINT) for _ in range(3)]
    assert counts.per_run("read", "target_nodes") == [1, 1, 1]
    assert all(o.conditions == mod.placement() for o in outs)


# ---- a row's text: the same bytes, without a call or an exception per cell ----
def _cell_before(value: object) -> str:
    """table._cell as every cell went through it before issue 37 (the reference)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def _parse_value_before(text: str) -> object:
    """results.parse_value before issue 37 (the reference): int, hex, float, else the text."""
    try:
        return int(text, 10)
    except ValueError:
        pass
    if text.lower().startswith("0x"):
        try:
            return int(text, 16)
        except ValueError:
            pass
    try:
        return float(text)
    except ValueError:
        return text


CELLS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=8))


@given(st.lists(st.dictionaries(st.sampled_from("abcdefgh"), CELLS), min_size=1, max_size=3))
def test_csv_text_is_the_cells_of_before(rows: list[dict[str, object]]) -> None:
    columns = list("abcdefghz")  # z: in no row
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([_cell_before(row.get(c)) for c in columns])
    assert table.csv_text(columns, rows) == buf.getvalue()


TOKENS = st.one_of(st.sampled_from(["load", "all", "bandwidth", "-1", "0x1a4", "0xfg", "99.500", "1e3", "inf", "NaN",
                                    "Infinity", "1_000", "1.2.3", "sse2", "", "٣", "ｉｎｆ", "0X1F", "+7", ".5"]),
                   st.text(alphabet="0123456789abcdefxXinINF.+-_e ", max_size=6), st.text(max_size=5))


@given(TOKENS)
def test_a_result_value_is_what_it_was(text: str) -> None:
    got, want = results.parse_value(text), _parse_value_before(text)
    assert type(got) is type(want) and (got == want or got != got and want != want), (text, got, want)


def test_a_row_is_written_without_a_call_per_cell_and_read_without_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    cell = table._cell
    monkeypatch.setattr(table, "_cell", lambda v: calls.append("cell") or cell(v))
    row = {"sweep": "t", "point": 3, "thread": "all", "error": "", "run_id": None, "bw_gbps": 3.1, "loop_bound": True}
    assert table.csv_text(list(row), [row]) == "t,3,all,,,3.1,1\n"
    assert calls == ["cell", "cell"]  # the float and the bool only
    monkeypatch.setattr(results, "int", lambda *a: calls.append("int") or int(*a), raising=False)
    calls.clear()
    fields = results.parse_result_text("thread=0 op=load mode=bandwidth bw_mbps=3137.246 irqoff_pct=99.500 ops=7\n")
    assert fields == [{"thread": 0, "op": "load", "mode": "bandwidth", "bw_mbps": 3137.246, "irqoff_pct": 99.5, "ops": 7}]
    assert calls == ["int", "int"]  # thread and ops; the words and fractions go straight to what takes them


# ---- the poll: a run is seen done soon after its end, with few looks ----
@pytest.mark.parametrize("ends_at", [0.001, 0.02, 0.1, 3.0])
def test_a_run_is_seen_done_within_a_twentieth_of_its_time(fake, monkeypatch: pytest.MonkeyPatch,
                                                            ends_at: float) -> None:
    """On a clock that moves only by the poll's sleeps, a run that ends at `ends_at`: the poll's first
    look is poll_s after the run write, and it sees the end at most max(poll_s, 5 % of the run) after
    it (the 1.5x steps before saw a 100 ms run 47 ms late), in few looks."""
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    monkeypatch.setattr(module_mod, "time", SimpleNamespace(sleep=sleep, monotonic=lambda: now[0], time=time.time))
    state = Module.state
    looks: list[float] = []

    def state_at(self: Module) -> str:  # running until the clock passes the end, then the stand-in's state
        if self.io.read(self.root / "state").strip() != "running" and not sleeps:
            return state(self)  # the look before the run
        looks.append(now[0])
        if now[0] < ends_at:
            return "running"
        deadline = time.monotonic() + 300  # a hang's bound: the worker is a thread of this starved process
        while state(self) == "running" and time.monotonic() < deadline:  # the stand-in's worker, in real time
            time.sleep(0.001)
        return state(self)

    monkeypatch.setattr(Module, "state", state_at)
    out = fake.module().run(POINT, timeout_s=60, poll_s=0.002)
    assert out.state == "done"
    assert sleeps[0] == 0.002 and looks[0] == pytest.approx(0.002)
    assert looks[-1] >= ends_at
    assert looks[-1] - ends_at <= max(0.002, 0.05 * ends_at) + 1e-9, (looks[-1], ends_at)
    assert len(looks) <= {0.001: 1, 0.02: 10, 0.1: 40, 3.0: 130}[ends_at], len(looks)


# ---- the wait on sysfs: woken by the module's notification, not a schedule of looks ----
def _state_reads(fake, monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Reads of `state` by path (Module.state: the schedule's looks), counted."""
    seen: Counter = Counter()
    read = fake.read

    def counted(path: Path) -> str:
        seen[Path(path).name] += 1
        return read(path)

    monkeypatch.setattr(fake, "read", counted)
    return seen


def test_on_sysfs_a_run_is_seen_done_when_the_module_notifies(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`state` on sysfs, notified at every change (the module's sysfs_notify): read once before
    the run (the read that arms the poll), once when `running` wakes it (the module notifies from
    the `run` write), once when `done` does: three reads for a run of 0.3 s, where the schedule
    (regular files, below) looks dozens of times; the same result either way."""
    from fake_pmemlab import make_fake

    fake = make_fake(tmp_path / "sysfs", sysfs="notify", run_s=0.3)
    by_path = _state_reads(fake, monkeypatch)
    out = fake.module().run(POINT, timeout_s=60)
    assert out.state == "done" and out.result == (fake.root / "result").read_text().strip()
    (watch,) = fake.watches
    assert watch.reads == 3 and by_path["state"] == 0
    assert [woke for _, woke in watch.waits] == [True, True], watch.waits
    assert watch.waits[0][0] == 0.002  # the first wait: the schedule's first look (not yet known to notify)
    assert watch.waits[1][0] == module_mod.POLL_NOTIFIED_S  # then the notification, with its net
    assert watch.closed
    # the stand-in on regular files: the schedule's looks, one read each
    plain = make_fake(tmp_path / "plain", run_s=0.3)
    by_path = _state_reads(plain, monkeypatch)
    again = plain.module().run(POINT, timeout_s=60)
    assert again.state == "done" and not plain.watches
    # the look before the run and at least one after it; how many in 0.3 s depends on the host's
    # load (a starved sleep overruns), so the count is held on a clock of the test's own (above, below)
    assert by_path["state"] >= 2, by_path


def test_on_sysfs_a_module_that_never_notifies_is_looked_at_on_the_schedule(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A module older than the notification: every wait times out at the schedule's next look
    (poll_s, then 5 % of the time run, at most POLL_MAX_S), one read each, as the sleeps before.
    On a clock that moves only by the waits (a real 0.1 s run gave 7 looks on a loaded CI host
    and dozens on a quiet one), a run that ends at 0.1 s: the looks are the schedule's, exactly."""
    import fake_pmemlab
    from fake_pmemlab import make_fake

    ends_at = 0.1
    now = [0.0]
    monkeypatch.setattr(module_mod, "time", SimpleNamespace(sleep=time.sleep, monotonic=lambda: now[0], time=time.time))
    real_read = fake_pmemlab.FakeStateWatch.read

    def wait(self: fake_pmemlab.FakeStateWatch, timeout_s: float) -> bool:  # silent: every wait times out
        self.waits.append((timeout_s, False))
        now[0] += timeout_s
        return False

    def read(self: fake_pmemlab.FakeStateWatch) -> str:
        if self.reads and now[0] < ends_at:  # after the look before the run: running until ends_at
            self.reads += 1
            return "running\n"
        deadline = time.monotonic() + 300  # a hang's bound: the worker is a thread of this starved process
        while self.reads and self.path.read_text().strip() == "running" and time.monotonic() < deadline:
            time.sleep(0.001)  # the stand-in's worker (2 ms, real time)
        return real_read(self)

    monkeypatch.setattr(fake_pmemlab.FakeStateWatch, "wait", wait)
    monkeypatch.setattr(fake_pmemlab.FakeStateWatch, "read", read)
    fake = make_fake(tmp_path, sysfs="silent", run_s=0.002)
    by_path = _state_reads(fake, monkeypatch)
    assert fake.module().run(POINT, timeout_s=60, poll_s=0.002).state == "done"
    (watch,) = fake.watches
    assert watch.reads == 1 + len(watch.waits) and by_path["state"] == 0
    expected, t, delay = [], 0.0, 0.002  # the schedule, restated: the spec this test holds
    while True:
        expected.append(delay)
        t += delay
        if t >= ends_at:
            break
        delay = min(max(0.002, module_mod.POLL_LATE * t), module_mod.POLL_MAX_S)
    assert [w for w, _ in watch.waits] == pytest.approx(expected), watch.waits
    assert now[0] - ends_at <= max(0.002, module_mod.POLL_LATE * ends_at) + 1e-9
    assert len(expected) > 10  # 2 ms looks while the run is young: the schedule's many looks


def test_a_notified_wait_still_ends_at_the_timeout(tmp_path: Path) -> None:
    from fake_pmemlab import make_fake

    fake = make_fake(tmp_path, sysfs="notify", run_s=600.0)  # ended by the timeout's abort, however late
    out = fake.module().run(POINT, timeout_s=0.3)
    assert out.state == "timeout" and fake.aborts == 1
    (watch,) = fake.watches
    assert all(t <= 0.3 for t, _ in watch.waits), watch.waits


def test_sysfs_is_told_by_its_statfs_type(tmp_path: Path) -> None:
    """SysfsIO.watch holds a file open only on sysfs (statfs f_type SYSFS_MAGIC): a regular file
    (the stand-in module) and a procfs file give None, their reader keeps to the schedule."""
    from pmemlab.backends.module import SYSFS_MAGIC, StateWatch, SysfsIO, fs_type

    io_ = SysfsIO()
    plain = tmp_path / "state"
    plain.write_text("idle\n")
    assert io_.watch(plain) is None
    assert io_.watch(Path("/proc/self/status")) is None
    assert io_.watch(tmp_path / "missing") is None
    fd = os.open(plain, os.O_RDONLY)
    try:
        assert fs_type(fd) not in (None, SYSFS_MAGIC)
    finally:
        os.close(fd)
    attr = Path("/sys/kernel/address_bits")
    if not attr.exists():
        pytest.skip("no sysfs at /sys")
    watch = io_.watch(attr)
    assert isinstance(watch, StateWatch)
    try:
        first = watch.read()
        assert first.strip().isdigit() and watch.read() == first  # read again from its start
        assert watch.wait(0.01) is False  # nobody notifies it: the poll ends at its timeout
    finally:
        watch.close()
