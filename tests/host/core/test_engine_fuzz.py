"""The engine under a property-based fuzz of *valid* runs (issue 20, "the class"): parameter sets
drawn from the module's own table (tests/param_sets.runnable_sets: every parameter's range,
multiple and names from libplcore.so, around the engine's limits: access sizes about its
ceiling's caps, fence pieces that do not divide them, passes and offsets, placements, delays,
warm-ups and segments that do not divide each other), judged by the runner's validator, then run
for real through pmemlab-run, whose every engine buffer lies between guard pages
(test_engine_bounds.py). A share runs the runner built with UndefinedBehaviorSanitizer
(`make -C userspace/runner pmemlab-run-ubsan`, which aborts at its first report) and a share runs
under valgrind's memcheck (AVX-512 hidden: valgrind 3.19 cannot run it). Each run must:

- end by itself within its bound (a count run too: a count that never came back hung it);
- exit 0 with `#state done`, nothing on stderr (no sanitizer or valgrind report, no fault);
- account for itself: bytes = ops x access_size and reads + writes = ops on every line, a count
  run does exactly count accesses per thread, a latency thread has one histogram entry per timed
  access and min(samples, ops) raw samples, read_pct mixes its share of loads, and with
  delay_ticks every timed access fits in the timed ticks (ops x delay <= ticks: a warm-up access
  counted in breaks it);
- agree with the `all` line (the loaders' sums).

PMEMLAB_FUZZ_EXAMPLES (default 1000) sets the number of runs for a longer hunt;
PMEMLAB_FUZZ_SHRINK=1 shrinks a failure to a smallest set;
PMEMLAB_FUZZ_RUNNER points the fuzz at another build of pmemlab-run (an older engine, say; its
UBSan share runs the pmemlab-run-ubsan beside it).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, Phase, assume, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from param_sets import Machine, RunnerJudge, check_accounting, runnable_sets  # noqa: E402
from testlib import TOP  # noqa: E402

RUNNER_DIR = TOP / "userspace" / "runner"
RUNNER = Path(os.environ.get("PMEMLAB_FUZZ_RUNNER", RUNNER_DIR / "pmemlab-run"))
UBSAN_RUNNER = RUNNER.with_name(RUNNER.name + "-ubsan")
EXAMPLES = int(os.environ.get("PMEMLAB_FUZZ_EXAMPLES", "1000"))
MiB = 1 << 20
# how each run executes, by its number: every VALGRIND_EVERY-th under valgrind memcheck, of the
# others two in five with the UBSan build, the rest the guarded runner (a drawn choice would not
# keep these shares: hypothesis leans towards the first choices)
VALGRIND_EVERY = 50
_examples = [0]
VALGRIND = ["valgrind", "-q", "--error-exitcode=99"]
VALGRIND_ENV = {"PMEMLAB_RUN_HIDE_FEATURES": "avx512f"}
# a run's bound tells a hang from a wait, not a speed: the sets cost at most 10 ms of warm-up,
# 10 ms of run or 10 ms of a count's work, so runs take 20-100 ms (valgrind: about 50x slower,
# 1-5 s); the suite runs at nice 19 beside two TCG guests on two cores, where such a process gets
# a few % of a CPU (70x slower), so 15 s and 300 s were within reach of a starved run; a count
# run whose count never came back runs until this (no shrinking unless asked: see below)
BOUND_S = {"plain": 120.0, "ubsan": 120.0, "valgrind": 1800.0}
ONLINE = len(os.sched_getaffinity(0))


def facts() -> dict[str, str]:
    out = subprocess.run([str(RUNNER), "--facts", "target=dram", "dram_size=4M"], capture_output=True, text=True,
                         check=True).stdout
    return {ln.split()[1]: ln.split(" ", 2)[2] for ln in out.splitlines() if ln.startswith("#fact ")}


@pytest.fixture(scope="module")
def built() -> None:
    for target in ("all", "pmemlab-run-ubsan"):
        res = subprocess.run(["make", "-s", "-C", str(RUNNER_DIR), target], capture_output=True, text=True)
        assert res.returncode == 0, res.stdout + res.stderr


FACTS = facts() if RUNNER.exists() else {}
TSC_KHZ = int(FACTS.get("tsc_khz", "2000000"))
WIDTHS = tuple(int(w) for w in FACTS.get("widths", "8 16 32").split())
TARGETS = [("4M", "4k"), ("8M", "2m"), ("16M", "4k")]
_judges: dict[tuple[str, ...], RunnerJudge] = {}


def judge(how: str, target: tuple[str, ...]) -> RunnerJudge:
    """The runner's own verdict, as the run will meet it (under valgrind: valgrind's CPU)."""
    key = (how == "valgrind", *target)
    if key not in _judges:
        valgrind = how == "valgrind"
        _judges[key] = RunnerJudge(*target, runner=RUNNER, prefix=tuple(VALGRIND) if valgrind else (),
                                   env={**os.environ, **VALGRIND_ENV} if valgrind else None)
    return _judges[key]


def next_how() -> str:
    _examples[0] += 1
    k = _examples[0]
    return "valgrind" if k % VALGRIND_EVERY == 0 else "ubsan" if k % 5 in (1, 3) else "plain"


@st.composite
def runs(draw: st.DrawFn) -> tuple[tuple[str, str], dict[str, str]]:
    size, pages = draw(st.sampled_from(TARGETS))
    m = Machine(target_size=int(size[:-1]) * MiB, online=ONLINE, tsc_khz=TSC_KHZ)
    return (size, pages), draw(runnable_sets(m, widths=WIDTHS))


def run_one(how: str, target: tuple[str, str], values: dict[str, str]) -> None:
    env = VALGRIND_ENV if how == "valgrind" else {}
    target_args = ("target=dram", f"dram_size={target[0]}", f"dram_pages={target[1]}", f"tsc_khz={TSC_KHZ}")
    verdict = judge(how, target_args)(values)
    assume(verdict == ("ok", "-"))
    runner = UBSAN_RUNNER if how == "ubsan" else RUNNER
    with tempfile.TemporaryDirectory() as tmp:
        samples = Path(tmp) / "samples"
        argv = [str(runner), *target_args, f"raw_samples={samples}", *(f"{k}={v}" for k, v in values.items())]
        if how == "valgrind":
            argv = VALGRIND + argv
        start = time.monotonic()
        try:
            res = subprocess.run(argv, capture_output=True, text=True, timeout=BOUND_S[how],
                                 env={**os.environ, **env})
        except subprocess.TimeoutExpired:
            pytest.fail(f"{how}: the run did not end within {BOUND_S[how]} s: {' '.join(argv)}")
        took = time.monotonic() - start
        what = f"{how} run ({took:.1f} s): {' '.join(argv)}"
        assert res.returncode == 0, f"{what}\nexit {res.returncode}\n{res.stderr[-4000:]}"
        assert res.stderr == "", f"{what}\n{res.stderr[-4000:]}"
        assert "#state done" in res.stdout, what
        try:
            check_accounting(values, res.stdout, samples.read_bytes() if samples.exists() else b"")
        except AssertionError as exc:
            raise AssertionError(f"{what}\n{exc}\n{res.stdout}") from None


# without shrinking unless asked (PMEMLAB_FUZZ_SHRINK=1): every failure names its whole command line,
# and shrinking a run that hangs costs its bound per step
PHASES = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if os.environ.get("PMEMLAB_FUZZ_SHRINK")
                                                           else [])


@pytest.mark.skipif(not shutil.which("valgrind"), reason="valgrind is not installed (scripts/install-deps)")
@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow, HealthCheck.data_too_large])
@given(case=runs())
def test_valid_runs_are_clean_end_and_account_for_themselves(built: None, case: tuple) -> None:
    how = next_how()
    target, values = case
    if how == "valgrind" and values["width"] == "64":
        values = {**values, "width": "0"}  # valgrind 3.19 cannot run AVX-512 (hidden from the runner there)
    run_one(how, target, values)
