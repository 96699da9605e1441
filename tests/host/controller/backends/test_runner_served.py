"""The user backend's runner that stays up for a sweep (pmemlab-run --serve, backends/served.py):
the same results as one-shot runs, a runner killed mid-sweep or a hung point recorded on that
point's row with the reason while the rest of the sweep completes, the CSV valid."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from pmemlab.backends.user import UserBackend, split_output
from pmemlab.errors import ParamRefused
from pmemlab.results import parse_result_text as parse_result

from testlib import TOP

RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


# A bound that tells a hang from a wait, not a speed: the suite runs at nice 19 beside two TCG
# guests on two cores, where a step of a few milliseconds can wait seconds for a CPU.
HANG_S = 300
# a point that only a kill, an abort or its timeout ends (ten minutes)
LONG_MS = 600_000


def in_a_run(pid: int) -> bool:
    """The served runner is running a point: its worker threads exist only between a point's start
    and its answer (runner/run.c creates and joins them per run), so more than its main task."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except FileNotFoundError:
        return False


def wait_in_a_run(pid: int) -> bool:
    """Until the served runner `pid` runs a point (True), or HANG_S passed (False)."""
    deadline = time.monotonic() + HANG_S
    while not in_a_run(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


POINTS = [
    {"mode": "bandwidth", "op": "load", "access_size": 256, "pattern": "rand", "count": 5000},
    {"mode": "bandwidth", "op": "ntstore", "access_size": 1024, "threads": 2, "count": 2000},
    {"mode": "latency", "op": "load", "access_size": 8, "count": 2000, "samples": 100},
]


def _shape(outcome) -> tuple:
    rows = parse_result(outcome.result)
    return (outcome.state, [sorted(r) for r in rows], [(r["thread"], r["op"], r["ops"]) for r in rows],
            bool(outcome.histogram), sorted(outcome.conditions), len(outcome.raw_samples))


def test_served_results_equal_one_shot_in_structure() -> None:
    served = UserBackend("dram", {"dram_size": "16M"}, persistent=True)
    oneshot = UserBackend("dram", {"dram_size": "16M"}, persistent=False)
    try:
        pids = set()
        for values in POINTS:
            a, b = served.run(values, timeout_s=60), oneshot.run(values, timeout_s=60)
            assert a.ok and b.ok, (a.error, b.error)
            assert _shape(a) == _shape(b)
            assert a.conditions == b.conditions  # the same mapping's facts
            pids.add(a.pid)
        assert len(pids) == 1 and served.restarts == 0, "one process for the whole sweep"
        # a refusal by the validator: the same reason as one-shot's, and the process stays
        bad = {"op": "load", "fence": "sfence", "fence_interval": 192, "access_size": 256, "count": 10}
        with pytest.raises(ParamRefused) as served_no:
            served.run(bad)
        with pytest.raises(ParamRefused) as oneshot_no:
            oneshot.run(bad)
        assert served_no.value.reason == oneshot_no.value.reason != ""
        assert served.run(POINTS[0]).pid in pids and served.restarts == 0
    finally:
        served.close()


def test_served_process_survives_ctrl_c_of_a_point() -> None:
    be = UserBackend("dram", {"dram_size": "16M"}, persistent=True)
    try:
        out = be.run({"op": "load", "duration_ms": LONG_MS}, timeout_s=0.5)  # ended by the timeout alone
        assert out.state == "timeout" and "no result after 0.5 s" in out.error
        # the run was aborted by SIGINT and the process answered: it serves the next point
        nxt = be.run(POINTS[0], timeout_s=60)
        assert nxt.ok and nxt.pid == out.pid and be.restarts == 0
    finally:
        be.close()


def test_served_runner_killed_mid_point_is_that_points_error() -> None:
    be = UserBackend("dram", {"dram_size": "16M"}, persistent=True)
    try:
        first = be.run(POINTS[0], timeout_s=60)
        # killed once its point runs (its worker threads exist), not after a fixed 0.5 s: on a
        # starved host the timer could fire before the point was sent (the backend then starts
        # another runner) or after a 5 s point had ended; the point lasts until the kill
        seen: list[bool] = []

        def kill_in_the_run() -> None:
            seen.append(wait_in_a_run(first.pid))
            os.kill(first.pid, signal.SIGKILL)

        killer = threading.Thread(target=kill_in_the_run, daemon=True)
        killer.start()
        killed = be.run({"op": "load", "duration_ms": LONG_MS}, timeout_s=2 * HANG_S)
        killer.join(HANG_S)
        assert seen == [True], "the served runner never ran the point"
        assert killed.state.startswith("error:") and "SIGKILL" in killed.state
        after = be.run(POINTS[0], timeout_s=60)
        assert after.ok and after.pid != first.pid and be.restarts == 1
    finally:
        be.close()


def test_served_restarts_for_another_mapping(tmp_path: Path) -> None:
    # a file mapped for a read run: a write run needs it mapped for writing (a new process)
    pool = tmp_path / "pool"
    pool.write_bytes(b"\0" * (4 << 20))
    be = UserBackend(str(pool), {"allow_file": "1", "allow_overwrite": "1"}, persistent=True)
    try:
        read = be.run({"op": "load", "count": 1000}, timeout_s=60)
        write = be.run({"op": "ntstore", "count": 1000}, timeout_s=60)
        assert read.ok and write.ok, (read.error, write.error)
        assert write.pid != read.pid and be.restarts == 1
        assert parse_result(write.result)[-1]["writes"] == 1000
    finally:
        be.close()
    # a chase maps the file writable for its chain but keeps its bytes (no pre-fault fill): a
    # store run after it is mapped again, so its pages are filled outside its timing
    be = UserBackend(str(pool), {"allow_file": "1", "allow_overwrite": "1"}, persistent=True)
    try:
        chase = be.run({"op": "chase", "mode": "latency", "count": 1024}, timeout_s=60)
        again = be.run({"op": "chase", "mode": "latency", "count": 1024}, timeout_s=60)
        store = be.run({"op": "store", "count": 1000}, timeout_s=60)
        assert chase.ok and again.ok and store.ok, (chase.error, again.error, store.error)
        assert again.pid == chase.pid and store.pid != chase.pid and be.restarts == 1
    finally:
        be.close()


def _sweep(tmp_path: Path, durations: list[int], timeout_s: float) -> subprocess.Popen:
    cfg = tmp_path / "s.toml"
    cfg.write_text(f"""[sweep]
name = "served"
repeats = 1
timeout_s = {timeout_s}

[base]
mode = "bandwidth"
op = "load"
threads = 1

[axes]
duration_ms = {durations}
""")
    env = {**os.environ, "PYTHONPATH": str(TOP / "userspace")}
    return subprocess.Popen([sys.executable, "-m", "pmemlab", "sweep", str(cfg), "--backend", "user",
                             "--set", "target=dram", "--set", "dram_size=16M", "-o", str(tmp_path / "s.csv"),
                             "--fresh", "--no-progress"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid), "-x", "pmemlab-run"], capture_output=True, text=True)
    return [int(x) for x in out.stdout.split()]


def _aggregates(tmp_path: Path) -> pd.DataFrame:
    df = pd.read_csv(tmp_path / "s.csv")
    return df[df["thread"].astype(str) == "all"].sort_values("point")


def test_sweep_with_runner_killed_mid_sweep_completes(tmp_path: Path) -> None:
    # point 2 lasts until it is killed, and the kill waits for it to run (the runner's worker
    # threads): a 4 s point and a fixed 0.5 s wait raced the test's own CPU on a loaded host
    proc = _sweep(tmp_path, [20, 21, LONG_MS, 22, 23], 2 * HANG_S)
    killed = None
    deadline = time.monotonic() + 2 * HANG_S
    while time.monotonic() < deadline and killed is None and proc.poll() is None:
        csv = tmp_path / "s.csv"
        done = csv.exists() and sum(1 for ln in csv.read_text().splitlines() if ",all," in ln)
        kids = _children(proc.pid)
        if done == 2 and kids and in_a_run(kids[0]):  # points 0 and 1 recorded: point 2 is running
            os.kill(kids[0], signal.SIGKILL)
            killed = kids[0]
        time.sleep(0.05)
    if killed is None:
        proc.kill()
    out, err = proc.communicate(timeout=2 * HANG_S)
    assert killed is not None, err
    agg = _aggregates(tmp_path)
    assert list(agg["point"]) == [0, 1, 2, 3, 4]
    assert list(agg["status"]) == ["ok", "ok", "error", "ok", "ok"], err
    assert "SIGKILL" in str(agg.iloc[2]["error"])
    assert proc.returncode != 0  # a failed point: the exit code says so


def test_sweep_with_a_hung_point_times_out_and_goes_on(tmp_path: Path) -> None:
    # the hung point lasts ten minutes, so only its timeout ends it; the timeout is 30 s, not 2 s,
    # as the points around it (20 ms) must end within it on a host that starves the suite
    proc = _sweep(tmp_path, [20, LONG_MS, 21], 30)
    out, err = proc.communicate(timeout=2 * HANG_S)
    agg = _aggregates(tmp_path)
    assert list(agg["status"]) == ["ok", "timeout", "ok"], err
    assert "no result after 30 s" in str(agg.iloc[1]["error"])


def test_a_dropped_backend_ends_its_served_runner(tmp_path: Path) -> None:
    """A backend used for one run and dropped (no close()) does not leave its served process
    mapping the target: a file stays unheld (in a guest, a DAX file system stayed busy at umount)."""
    pool = tmp_path / "pool"
    pool.write_bytes(b"\0" * (4 << 20))
    out = UserBackend(str(pool), {"allow_file": "1"}, persistent=True).run({"op": "load", "count": 100})
    assert out.ok, out.error
    deadline = time.monotonic() + HANG_S  # a hang's bound: it goes at once, when it gets a CPU
    while Path(f"/proc/{out.pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not Path(f"/proc/{out.pid}").exists(), "the served runner outlived its backend"
    with UserBackend(str(pool), {"allow_file": "1"}, persistent=True) as be:
        pid = be.run({"op": "load", "count": 100}).pid
    assert not Path(f"/proc/{pid}").exists()
