"""One parameter contract: the runner and the controller judge every run alike.

Both run the module's own table and validator (core/params.def, params.c, check.c): the
runner compiled into pmemlab-run, the controller through libplcore.so. Thousands of random sets
(tests/param_sets.py: edges of every range, junk, the machine's limits, the six inputs that once
drifted) get the same verdict from both (accepted, or the same errno) naming the same parameter.
The module joins the comparison in the guest (tests/guest/test_params_three_ways.py).
"""
from __future__ import annotations

import json
import os
import subprocess

import pytest
from hypothesis import HealthCheck, given, settings

from pmemlab.host import machine, probe
from param_sets import DRIFTED, RUNNER, Machine, RunnerJudge, controller_verdict, param_sets
from pmemlab import params as P
from pmemlab import plcore
from pmemlab.backends.user import UserBackend

MiB = 1 << 20
TSC_KHZ = 2_000_000
TARGET = ("target=dram", "dram_size=64M", f"tsc_khz={TSC_KHZ}", "dram_pages=4k")


@pytest.fixture(scope="module")
def user_facts() -> P.TargetFacts:
    """What the controller knows of the user backend's target, found as `pmemlab run` finds it."""
    backend = UserBackend("dram", {"dram_size": "64M", "tsc_khz": str(TSC_KHZ), "dram_pages": "4k"})
    return machine.target_facts(backend, int(machine.cpu_info(probe.HostPaths())["online_cpus"]))


@pytest.fixture(scope="module")
def runner():
    judge = RunnerJudge(*TARGET)
    yield judge
    judge.close()


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUNNER), "--check", *TARGET, *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kw", DRIFTED, ids=lambda kw: " ".join(f"{k}={v}" for k, v in kw.items()))
def test_the_six_inputs_are_accepted_by_runner_and_controller(kw, user_facts):
    """Accepted by both; only a machine with fewer CPUs than threads (3) refuses, both alike."""
    res = check(*(f"{k}={v}" for k, v in kw.items()))
    verdict = controller_verdict(kw, user_facts)
    if int(kw.get("threads", 1)) > len(os.sched_getaffinity(0)):
        assert res.stdout.startswith("ERANGE threads 1 ") and verdict == ("ERANGE", "threads")
    else:
        assert res.returncode == 0 and res.stdout.startswith("ok "), res.stdout + res.stderr
        assert verdict == ("ok", "-")
    assert controller_verdict(kw, None) == ("ok", "-")


def test_access_size_8_runs_8_byte_instructions():
    assert check("access_size=8", "width=0").stdout == "ok 8\n"


def test_ntload_width_8_is_refused_by_both_before_a_run(user_facts):
    res = check("op=ntload", "width=8")
    assert res.returncode == 2
    assert res.stdout == "EOPNOTSUPP width 0 width: op ntload has no 8-byte instruction\n"
    assert res.stderr == "pmemlab-run: EOPNOTSUPP: width: op ntload has no 8-byte instruction\n"
    assert controller_verdict({"op": "ntload", "width": "8"}, user_facts) == ("EOPNOTSUPP", "width")


def test_runner_schema_is_the_table():
    res = subprocess.run([str(RUNNER), "--schema"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0
    schema = json.loads(res.stdout)
    assert schema == plcore.schema()
    assert [p["name"] for p in schema["params"]] == list(P.PARAM_NAMES)
    # every op runs on both backends: the schema names no backend; the copies read and write
    assert all("user_only" not in op for op in schema["ops"])
    assert {op["name"] for op in schema["ops"] if op["reads"] and op["writes"] and not op["own_loop"]} == {
        "copy", "ntcopy"}


def test_core_names_the_copies():
    """The core names the copies as ops.def does, and the runner takes them (so does the module:
    the same table and validator)."""
    listing = subprocess.run([str(RUNNER), "--check", *TARGET, "op=copy,ntcopy", "threads=2"],
                             capture_output=True, text=True, timeout=60)
    assert listing.returncode == 0, listing.stdout + listing.stderr


@settings(max_examples=int(os.environ.get("PMEMLAB_DIFF_EXAMPLES", "3000")), deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(raw=param_sets(Machine(target_size=64 * MiB, online=len(os.sched_getaffinity(0)), tsc_khz=TSC_KHZ)))
def test_runner_and_controller_give_the_same_verdict(raw, runner, user_facts):
    assert runner(raw) == controller_verdict(raw, user_facts), raw
