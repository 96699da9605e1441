"""Single runs against the fake module: state transitions, result parsing, errors."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from fake_pmemlab import _put as put_atomically, make_fake

import pmemlab.cli as cli
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab import params as P
from pmemlab.errors import (
    Interrupted, ModuleAccessError, ModuleBusy, ModuleNotLoaded, ParamRefused, WrongTarget,
)
from pmemlab.results import parse_result, ticks_to_ns
from pmemlab.backends.module import Module

from testlib import HOST_FIXTURES, TOP


@pytest.fixture
def online_cpus() -> int:
    """conftest's fake module with 4 CPUs online."""
    return 4


def values(**kw):
    v, probs = P.normalize(kw)
    assert not probs
    return v


def test_run_writes_params_and_reads_result(fake):
    out = fake.module().run(values(op="ntstore", access_size="256", threads=2, duration_ms=3))
    assert out.ok and out.state == "done"
    assert fake.runs[-1]["op"] == "ntstore" and fake.runs[-1]["access_size"] == "256"
    assert fake.runs[-1]["threads"] == "2" and fake.runs[-1]["cpus"] == ""  # every parameter written
    rows = parse_result(out.result, fake.tsc_khz)
    assert [r["thread"] for r in rows] == [0, 1, "all"]


def test_result_parsing_units_and_unknown_fields():
    text = ("thread=0 cpu=2 node=1 op=load ops=10 bytes=640 ticks=3000 ns=1500 bw_mbps=426 segments=1 "
            "gap_ticks=20 irqoff_pct=100 lat_p99=500 lat_overhead_ticks=30 new_counter=7 wait_ticks=40\n"
            "thread=all cpu=-1 node=1 op=load ops=10 bytes=640 ticks=3000 ns=1500 bw_mbps=426\n")
    rows = parse_result(text, 2_000_000, frozenset({"mode"}))
    r = rows[0]
    assert r["thread_node"] == 1 and r["thread_op"] == "load" and r["elapsed_ticks"] == 3000
    assert r["lat_ticks_p99"] == 500 and r["lat_ns_p99"] == pytest.approx(250.0)
    assert r["lat_overhead_ns"] == pytest.approx(15.0)
    assert r["gap_ns"] == pytest.approx(10.0)
    assert r["new_counter"] == 7 and r["wait_ticks"] == 40 and r["wait_ns"] == pytest.approx(20.0)
    assert r["bw_gbps"] == pytest.approx(0.426)
    assert parse_result("thread=0 bytes=640 ns=1500\n", 1000)[0]["bw_gbps"] == pytest.approx(640 / 1500)
    real = parse_result("thread=all cpu=-1 node=-1 role=all op=mixed width=32 mode=latency ops=5 reads=3 writes=2 "
                        "bytes=320 ticks=100 ns=50 bw_mbps=6400.000 lat_n=5 lat_mean=12.500\n", 2_000_000,
                        frozenset({"mode", "width", "op"}))[0]
    assert real["thread_role"] == "all" and real["thread_op"] == "mixed" and real["width_used"] == 32
    assert real["thread_mode"] == "latency" and real["reads"] == 3 and real["lat_n"] == 5
    assert real["lat_ns_mean"] == pytest.approx(6.25) and real["bw_gbps"] == pytest.approx(6.4)
    assert not any("cycles" in k for k in r)
    assert ticks_to_ns(2_000, 2_000_000) == pytest.approx(1000.0)
    assert parse_result("thread=0 seed=7\n", 1000, frozenset({"seed"}))[0]["result_seed"] == 7


def test_histogram_parsing():
    from pmemlab.results import parse_histogram

    cols = parse_histogram("thread lo_ticks hi_ticks count\n0 600 608 12\n1 1200 1216 3\n", 2_000_000)
    assert cols == [
        {"thread": 0, "lo_ticks": 600, "hi_ticks": 608, "count": 12, "lo_ns": 300.0, "hi_ns": 304.0},
        {"thread": 1, "lo_ticks": 1200, "hi_ticks": 1216, "count": 3, "lo_ns": 600.0, "hi_ns": 608.0},
    ]
    kv = parse_histogram("thread=0 lo_ticks=10 hi_ticks=12 count=1\ngarbage\n", 1_000_000)
    assert kv == [{"thread": 0, "lo_ticks": 10, "hi_ticks": 12, "count": 1, "lo_ns": 10.0, "hi_ns": 12.0}]
    assert parse_histogram("", 1000) == []


def test_raw_samples_are_read_when_asked_for(fake):
    out = fake.module().run(values(mode="latency", count=100, threads=2, samples=3))
    assert out.ok and len(out.raw_samples) == 2 * 3 * 8
    assert out.sample_ticks() == [600, 608, 616, 601, 609, 617]  # thread 0's, then thread 1's
    out = fake.module().run(values(mode="latency", count=100))
    assert out.ok and out.raw_samples == b"" and out.sample_ticks() == []  # samples = 0: not read
    # fewer samples taken than kept: the slots not filled are left out, a thread's block stays its own
    out = fake.module().run(values(mode="latency", count=2, threads=2, samples=5))
    assert len(out.raw_samples) == 2 * 5 * 8 and out.samples_by_thread() == [[600, 608], [601, 609]]
    assert out.sample_ticks() == [600, 608, 601, 609]


def test_run_error_state_reports_reason(fake):
    fake.fail = lambda p: "window beyond target"
    out = fake.module().run(values())
    assert not out.ok and out.state == "error:window beyond target"
    assert "window beyond target" in out.error


def test_refused_value_reads_last_error(fake):
    fake.refuse = {"access_size=4096": "access_size exceeds the per-thread region"}
    with pytest.raises(ParamRefused) as ei:
        fake.module().run(values(access_size=4096))
    assert "access_size=4096" in ei.value.one_line() and "per-thread region" in ei.value.one_line()


def test_state_back_to_idle_ends_the_poll(fake):
    # the run outlasts every wait here (ten minutes, stopped below), and the poll's timeout is a
    # hang's: a 5 s run and a 3 s timeout raced the helper thread on a loaded host (the suite runs
    # at nice 19 beside two TCG guests), which could end the run or time it out first
    fake.run_s = 600.0
    m = fake.module()
    import threading

    def back_to_idle():  # once the run is under way (a fixed delay raced a slow start)
        deadline = time.monotonic() + 300
        while (fake.root / "state").read_text().strip() != "running" and time.monotonic() < deadline:
            time.sleep(0.005)
        time.sleep(0.02)
        put_atomically(fake.root / "state", "idle\n")  # a plain write_text: the poll read it empty

    threading.Thread(target=back_to_idle, daemon=True).start()
    try:
        out = m.run(values(), timeout_s=300)
    finally:
        fake._abort.set()  # the stand-in's worker ends (aborted) instead of running on
    assert out.state.startswith("error:") and "without a result" in out.error


def test_busy_module(fake):
    (fake.root / "state").write_text("running\n")
    with pytest.raises(ModuleBusy) as ei:
        fake.module().run(values())
    assert "fix:" in ei.value.one_line() and "pmemlab abort" in ei.value.one_line()


def test_timeout_aborts(fake):
    fake.run_s = 600.0  # ended by the timeout's abort: a 5 s run could end first on a starved host
    out = fake.module().run(values(), timeout_s=0.05)
    assert out.state == "timeout" and fake.aborts == 1
    assert (fake.root / "state").read_text().strip() != "running"


def test_ctrl_c_aborts_the_module_run(fake):
    fake.interrupt_at_run = 1
    with pytest.raises(Interrupted):
        fake.module().run(values())
    assert fake.aborts == 1
    assert (fake.root / "state").read_text().strip() == "error:aborted"


def test_module_not_loaded(tmp_path, capsys):
    with pytest.raises(ModuleNotLoaded) as ei:
        Module(tmp_path / "nothing").run(values())
    line = ei.value.one_line()
    assert "\n" not in line and "module not loaded" in line and "insmod" in line
    rc = cli.main(["--sysfs", str(tmp_path / "nothing"), "run", "op=load"])
    err = capsys.readouterr().err.strip()
    assert rc == 1 and err.count("\n") == 0 and err.startswith("pmemlab: module not loaded") and "fix:" in err


def test_permission_denied_is_one_line(tmp_path):
    f = make_fake(tmp_path)

    def deny(path, text):
        raise PermissionError(13, "Permission denied")

    f.write = deny  # type: ignore[method-assign]
    with pytest.raises(ModuleAccessError) as ei:
        f.module().run(values())
    assert "permission denied" in ei.value.one_line() and "run as root" in ei.value.one_line()


def test_wrong_target(fake):
    with pytest.raises(WrongTarget) as ei:
        fake.module().check_target("/dev/pmem1")
    assert "target=/dev/pmem0, not /dev/pmem1" in ei.value.one_line() and "insmod" in ei.value.one_line()
    fake.module().check_target("/dev/pmem0")


def test_cli_run_table(fake, capsys):
    rc = cli.main(["run", "op=ntstore", "access_size=256", "threads=2", "mode=latency", "duration_ms=2"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "pmemlab run on /dev/pmem0 (fsdax)" in out
    assert "bw_gbps" in out and "lat_ns_p99" in out and "all" in out


def test_cli_run_csv_and_json(fake, capsys):
    assert cli.main(["run", "op=load", "duration_ms=2", "--csv"]) == 0
    from io import StringIO

    df = pd.read_csv(StringIO(capsys.readouterr().out))
    assert list(df["thread"].astype(str)) == ["0", "all"]
    assert {"bw_gbps", "elapsed_ns", "elapsed_ticks", "op", "access_size", "target", "tsc_khz"} <= set(df.columns)
    assert cli.main(["run", "op=load", "duration_ms=2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[-1]["thread"] == "all" and rows[-1]["status"] == "ok"


def test_cli_run_rejects_bad_values_before_the_module(fake, capsys):
    before = len(fake.runs)
    rc = cli.main(["run", "op=stor", "access_size=3"])
    err = capsys.readouterr().err
    assert rc == 2 and "op = 'stor'" in err and "access_size = '3'" in err
    rc = cli.main(["run", "access_size=16", "width=32"])
    assert rc == 2 and "not a multiple of width 32" in capsys.readouterr().err
    rc = cli.main(["run", "threads=8"])
    assert rc == 2 and "cannot run" in capsys.readouterr().err
    rc = cli.main(["run", "nonsense"])
    assert rc == 2 and "not KEY=VALUE" in capsys.readouterr().err
    assert len(fake.runs) == before
    assert (fake.root / "access_size").read_text().strip() == "64"  # nothing was written


def test_cli_run_error_exit_code(fake, capsys):
    fake.fail = lambda p: "boom"
    rc = cli.main(["run", "duration_ms=2"])
    cap = capsys.readouterr()
    assert rc == 1 and "status: error" in cap.out and "pmemlab: run error: boom; fix: " in cap.err
    err = cap.err.strip()
    assert err.count("\n") == 0
    assert "`pmemlab info` shows the module's state and last_error" in err and f"{fake.root}/last_error" in err
    assert "dmesg | grep pmemlab" in err


def test_cli_run_timeout_and_refusal_say_what_to_do(fake, capsys):
    fake.run_s = 5.0
    assert cli.main(["run", "duration_ms=2", "--timeout", "0.05"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("pmemlab: run timeout: ") and "fix: raise --timeout (now 0.05 s)" in err
    assert err.count("\n") == 0
    fake.run_s = 0.002
    fake.refuse = {"access_size=4096": "access_size exceeds the per-thread region"}
    assert cli.main(["run", "access_size=4096"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("pmemlab: run refused: access_size=4096: access_size exceeds the per-thread region; fix: ")
    assert "`pmemlab params`" in err and err.count("\n") == 0


def test_cli_run_applies_the_interleave_ndctl_found(fake, capsys, monkeypatch):
    ndctl = (HOST_FIXTURES / "ndctl-list-RNDi.json").read_text()
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(0, ndctl) if argv[0] == "ndctl"
                        else probe.ToolResult(127, "", ""))
    assert cli.main(["run", "duration_ms=2", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[-1]["interleave_ways"] == 6 and fake.runs[-1]["interleave_ways"] == "6"
    assert rows[-1]["target_interleave_ways"] == 6 and rows[-1]["target_region"] == "region0"
    # the discovered geometry is what per-dimm placement is checked against (1 would refuse 4)
    assert cli.main(["run", "duration_ms=2", "placement=per-dimm", "dimms_per_thread=4", "--json"]) == 0
    assert fake.runs[-1]["dimms_per_thread"] == "4" and fake.runs[-1]["interleave_ways"] == "6"
    capsys.readouterr()
    # given on the command line, it wins
    assert cli.main(["run", "duration_ms=2", "interleave_ways=2", "--json"]) == 0
    assert fake.runs[-1]["interleave_ways"] == "2"
    assert cli.main(["run", "placement=per-dimm", "dimms_per_thread=4", "interleave_ways=2"]) == 2


def test_cli_abort(fake, capsys):
    assert cli.main(["abort"]) == 0
    assert "no active run" in capsys.readouterr().out


def test_cli_params_lists_every_parameter(capsys):
    assert cli.main(["params", "--json"]) == 0
    names = [p["name"] for p in json.loads(capsys.readouterr().out)]
    assert names == list(P.PARAM_NAMES)


def test_parameters_an_older_module_lacks(fake):
    (fake.root / "segment_ms").unlink()
    assert fake.module().run(values(duration_ms=2)).ok  # default value: skipped
    with pytest.raises(ModuleAccessError) as ei:
        fake.module().run(values(segment_ms=10))
    assert "has no `segment_ms`" in ei.value.one_line()


def test_load_hints_name_the_built_module(tmp_path, fake):
    """Fix hints point at build/<kernel release>/pmemlab.ko, where the top Makefile's `module` puts it."""
    import platform

    from pmemlab.host import machine
    from pmemlab.backends.module import load_hint, module_path
    makefile = (TOP / "Makefile").read_text()
    assert "module:" in makefile and "$(TOP)/build/$(KVER)/pmemlab.ko" in makefile
    rel = platform.release()
    assert module_path() == str(TOP / "build" / rel / "pmemlab.ko")
    assert load_hint("dram") == (f"make -C {TOP} module KDIR=/lib/modules/{rel}/build && "
                                 f"sudo insmod {TOP}/build/{rel}/pmemlab.ko target=dram")
    with pytest.raises(ModuleNotLoaded) as ei:
        Module(tmp_path / "nothing").require_loaded()
    line = ei.value.one_line()
    assert f"fix: build and load it: make -C {TOP} module" in line and f"build/{rel}/pmemlab.ko target=/dev/pmem0" in line
    with pytest.raises(WrongTarget) as ei:
        fake.module().check_target("/dev/pmem1")
    assert ei.value.fix == f"sudo rmmod pmemlab && sudo insmod {TOP}/build/{rel}/pmemlab.ko target=/dev/pmem1"
    (fake.root / "version").unlink()
    with pytest.raises(ModuleAccessError) as ei:
        fake.module().read("version")
    assert f"build/{rel}/pmemlab.ko target=/dev/pmem0" in ei.value.fix  # the target it was loaded with
    note = machine.gather_info(Module(tmp_path / "nothing"), with_tools=False)["module"]["note"]
    assert f"build/{rel}/pmemlab.ko" in note
    for text in (line, note):
        assert "kmod/pmemlab.ko" not in text


# --------------------------------------------------------------------------
# long values: a sysfs write is at most a page (core/pl_params.h PL_TEXT_MAX)
# --------------------------------------------------------------------------
def op_list_of(nbytes: int) -> str:
    """An op list of exactly nbytes (at most 256 entries) of store+clflushopt and store+clflush."""
    for n in range(256, 0, -1):
        for a in range(n + 1):
            if a * 16 + (n - a) * 13 + n - 1 == nbytes:
                return ",".join(["store+clflushopt"] * a + ["store+clflush"] * (n - a))
    raise ValueError(nbytes)


def test_the_longest_value_is_judged_and_written_whole(fake):
    """4093 bytes (with its newline 4094: it fits a page with a byte to spare) is kept whole by the
    controller's judgement and the module; one more byte is refused by both, before anything runs."""
    longest = op_list_of(P.TEXT_MAX)
    assert len(longest) == 4093 == P.TEXT_MAX and P.canonical("op", longest) == longest
    out = fake.module().run(values(op=longest, threads=4))
    assert out.ok and fake.runs[-1]["op"] == longest
    with pytest.raises(P.ConfigValueError) as ei:
        P.canonical("op", op_list_of(4094))
    assert "4094 bytes" in str(ei.value) and "one sysfs write" in str(ei.value)
    page = ",".join(["store+clflushopt"] * 256)  # 4351 bytes: the example
    rc = cli.main(["run", f"op={page}", "threads=2"])
    assert rc == 2 and len(fake.runs) == 1


def test_a_write_cut_short_is_an_error_not_a_shorter_value(tmp_path):
    """The module takes a write only in part (sysfs hands a store one page): the controller checks
    the length of every write and runs nothing with the value the module then holds."""
    f = make_fake(tmp_path, page=64)  # a store that takes only 64 bytes
    ops = ",".join(["load"] * 20)  # 99 bytes with its newline; its first 64 are a valid list of 13
    with pytest.raises(ParamRefused) as ei:
        f.module().run(values(op=ops, threads=20))
    assert "took 64 of 100 bytes" in ei.value.one_line() and "cut" in ei.value.one_line()
    assert f.runs == [], "nothing ran with the 13-entry prefix"


def test_sysfs_io_returns_what_write_took(tmp_path, monkeypatch):
    """SysfsIO.write is one write() whose count the caller checks (a short write raises)."""
    import os as _os

    from fake_pmemlab import FakeModule
    from pmemlab.backends.module import SysfsIO

    target = tmp_path / "op"
    target.write_text("load\n")
    assert SysfsIO().write(target, "ntstore\n") == 8 and target.read_text() == "ntstore\n"
    real_write = _os.write
    monkeypatch.setattr(_os, "write", lambda fd, data: real_write(fd, data[:3]))
    f = FakeModule(tmp_path / "root")
    m = Module(f.root, io=SysfsIO())
    with pytest.raises(ParamRefused) as ei:
        m.write("op", "ntstore")
    assert "took 3 of 8 bytes" in ei.value.one_line()


NO_TABLES_CHILD = r"""
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from fake_pmemlab import make_fake

import pmemlab.cli as cli
import pmemlab.cli.backend as cli_backend
import pmemlab.host.probe as probe

fake = make_fake(Path(sys.argv[2]))
cli_backend.module = lambda args: fake.module()
cli_backend.online_cpus = lambda: 2
probe.run_tool = lambda argv: probe.ToolResult(127, "", "not installed")
argv = sys.argv[3:]
try:
    code = cli.main(argv)
except SystemExit as exc:  # --help
    code = exc.code
heavy = sorted(m for m in ("pandas", "numpy", "matplotlib", "tqdm") if m in sys.modules)
print(f"CODE {code} HEAVY {','.join(heavy) or '-'}", file=sys.stderr)
"""


@pytest.mark.parametrize("argv", [
    ["run", "--help"], ["info", "--help"], ["--help"], ["params"], ["params", "--json"],
    ["info"], ["info", "--json"],
    ["run", "op=load", "duration_ms=2"], ["run", "op=ntstore", "mode=latency", "threads=2", "--csv"],
    ["run", "op=load", "duration_ms=2", "--json"],
], ids=" ".join)
def test_commands_without_tables_do_not_import_pandas(tmp_path, argv):
    """run, info and params (and every --help) never read or write a table: they must not pay for
    importing pandas, numpy, matplotlib or tqdm (about 0.3 s natively, several seconds under TCG on
    each start of the controller). Each runs for real in a fresh interpreter against the fake module."""
    import subprocess

    child = subprocess.run([sys.executable, "-c", NO_TABLES_CHILD, str(HOST_FIXTURES),
                            str(tmp_path), *argv], capture_output=True, text=True, timeout=120)
    verdict = child.stderr.strip().splitlines()[-1]
    assert verdict == "CODE 0 HEAVY -", child.stderr
    if argv[0] == "run" and "--help" not in argv:
        assert "all" in child.stdout  # the aggregate row came out
