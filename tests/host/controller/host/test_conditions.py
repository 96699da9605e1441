"""The conditions of each run (pmemlab.host.runcond, pmemlab.host.taskstats): machine state from fixture
/sys and /proc trees, steal and sibling time from /proc/stat deltas, per-thread context switches
from taskstats records (parsed, mapped to threads, and received live from the kernel), and the
columns in the rows of a real user-backend sweep."""

from __future__ import annotations

import os
import shutil
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pmemlab.host import runcond, taskstats
from pmemlab.host.probe import HostPaths
from pmemlab.host.runcond import CpuTime, RunWatch
from pmemlab.table import NOISE_COLUMNS, RUN_STATE_COLUMNS, read_rows
from pmemlab.host.taskstats import TaskExit

from testlib import TOP


def put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def host_tree(tmp: Path, cpus: int = 4) -> HostPaths:
    """A 2-core, 4-thread machine: cpu0/cpu2 and cpu1/cpu3 are SMT siblings."""
    sys_ = tmp / "sys"
    cpu = sys_ / "devices/system/cpu"
    put(cpu / "online", f"0-{cpus - 1}\n")
    for c in range(cpus):
        put(cpu / f"cpu{c}/topology/thread_siblings_list", f"{c % 2},{c % 2 + 2}\n")
    put(cpu / "smt/active", "1\n")
    put(sys_ / "kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
    put(sys_ / "kernel/mm/transparent_hugepage/defrag", "[always] defer defer+madvise madvise never\n")
    put(tmp / "proc/cmdline", "BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro quiet\n")
    return HostPaths(proc=tmp / "proc", sys=sys_, dev=tmp / "dev")


def stat(times: dict[int, tuple[int, ...]]) -> str:
    """/proc/stat with per-CPU (user nice system idle iowait irq softirq steal guest guest_nice)."""
    lines = ["cpu  1 2 3 4 5 6 7 8 0 0"]
    lines += [f"cpu{c} " + " ".join(str(v) for v in vals) for c, vals in times.items()]
    return "\n".join(lines + ["intr 12345", "ctxt 999"]) + "\n"


# ---- machine state ------------------------------------------------------------------------------
def test_machine_state_from_sysfs(tmp_path: Path) -> None:
    host = host_tree(tmp_path)
    cpu = host.sys / "devices/system/cpu"
    # no cpufreq at all (a VM): governor, driver and turbo are empty, never guessed
    assert runcond.machine_state(host, [0, 1]) == {"governor": None, "cpufreq_driver": None, "turbo": None,
                                                   "smt_active": 1, "thp_enabled": "madvise",
                                                   "thp_defrag": "always"}
    for c, gov in ((0, "performance"), (1, "powersave"), (2, "performance"), (3, "performance")):
        put(cpu / f"cpu{c}/cpufreq/scaling_governor", gov + "\n")
        put(cpu / f"cpu{c}/cpufreq/scaling_driver", "acpi-cpufreq\n")
    assert runcond.governor(host, [0, 2]) == "performance"
    assert runcond.governor(host, [0, 1]) == "performance/powersave"  # the run's CPUs disagree: both
    assert runcond.governor(host, []) is None
    assert runcond.machine_state(host, [])["governor"] == "performance/powersave"  # all online CPUs
    assert runcond.cpufreq_driver(host, [0, 1]) == "acpi-cpufreq"
    # per-policy boost (amd-pstate), then the global switch (acpi-cpufreq), then intel_pstate's no_turbo
    put(cpu / "cpu0/cpufreq/boost", "1\n")
    put(cpu / "cpu1/cpufreq/boost", "0\n")
    assert runcond.turbo(host, [0]) == "on" and runcond.turbo(host, [0, 1]) == "on/off"
    put(cpu / "cpufreq/boost", "0\n")
    assert runcond.turbo(host, [0]) == "off"
    put(cpu / "intel_pstate/no_turbo", "0\n")
    assert runcond.turbo(host, [0]) == "on"
    put(cpu / "intel_pstate/no_turbo", "1\n")
    assert runcond.turbo(host, [0]) == "off"
    put(cpu / "smt/active", "0\n")
    assert runcond.smt_active(host) == 0
    assert runcond.siblings(host, 1) == [3] and runcond.siblings(host, 2) == [0]


def test_mitigations(tmp_path: Path) -> None:
    host = host_tree(tmp_path)
    assert runcond.mitigations_summary(runcond.vulnerabilities(host)) is None  # no such directory: unknown
    vul = host.sys / "devices/system/cpu/vulnerabilities"
    put(vul / "meltdown", "Not affected\n")
    put(vul / "spectre_v1", "Mitigation: usercopy/swapgs barriers and __user pointer sanitization\n")
    put(vul / "spectre_v2", "Mitigation: Retpolines; IBPB: conditional\n")
    put(vul / "retbleed", "Vulnerable\n")
    put(vul / "mds", "Vulnerable: Clear CPU buffers attempted, no microcode; SMT vulnerable\n")
    put(vul / "srbds", "Unknown: Dependent on hypervisor status\n")
    summary = runcond.mitigations_summary(runcond.vulnerabilities(host))
    assert summary == "2 mitigated, 1 not affected, 1 unknown; vulnerable: mds, retbleed"
    assert runcond.mitigations_summary({"meltdown": "Not affected"}) == "0 mitigated, 1 not affected; none vulnerable"
    assert runcond.mitigations_cmdline(host) == "unset"
    put(host.proc / "cmdline", "root=/dev/sda1 mitigations=off quiet\n")
    assert runcond.mitigations_cmdline(host) == "off"
    put(host.proc / "cmdline", "mitigations=auto mitigations=auto,nosmt\n")
    assert runcond.mitigations_cmdline(host) == "auto,nosmt"  # the kernel takes the last one
    (host.proc / "cmdline").unlink()
    assert runcond.mitigations_cmdline(host) is None


# ---- /proc/stat deltas --------------------------------------------------------------------------
def test_steal_and_sibling_busy_from_proc_stat(tmp_path: Path) -> None:
    host = host_tree(tmp_path)
    put(host.proc / "stat", stat({0: (100, 0, 50, 1000, 10, 0, 0, 5, 30, 0), 1: (0, 0, 0, 2000, 0, 0, 0, 0, 0, 0),
                                  2: (10, 0, 10, 3000, 0, 0, 0, 0, 0, 0), 3: (0, 0, 0, 4000, 0, 0, 0, 0, 0, 0)}))
    before = runcond.cpu_times(host)
    # guest time is inside user already: total = user..steal, not guest again
    assert before[0] == CpuTime(total=100 + 50 + 1000 + 10 + 5, idle=1010, steal=5)
    # over the run: cpu0 ran 90 ticks of its own and lost 10 to steal; its sibling cpu2 was busy 40 of 100
    put(host.proc / "stat", stat({0: (190, 0, 50, 1000, 10, 0, 0, 15, 30, 0), 1: (0, 0, 0, 2100, 0, 0, 0, 0, 0, 0),
                                  2: (50, 0, 10, 3060, 0, 0, 0, 0, 0, 0), 3: (0, 0, 0, 4100, 0, 0, 0, 0, 0, 0)}))
    after = runcond.cpu_times(host)
    assert runcond.steal_pct(before, after, [0]) == 10.0
    assert runcond.steal_pct(before, after, [0, 1]) == 5.0  # 10 of 200 ticks of the run's CPUs
    assert runcond.steal_pct(before, before, [0]) is None  # no tick passed: unknown, not 0
    assert runcond.sibling_busy_pct(host, before, after, [0]) == 40.0
    assert runcond.sibling_busy_pct(host, before, after, [1]) == 0.0
    # a run on both threads of a core: each is the other's busy sibling
    assert runcond.sibling_busy_pct(host, before, after, [0, 2]) == 100.0
    (host.sys / "devices/system/cpu/cpu1/topology/thread_siblings_list").write_text("1\n")
    assert runcond.sibling_busy_pct(host, before, after, [1]) is None  # no sibling: nothing to say


# ---- taskstats ----------------------------------------------------------------------------------
def test_taskstats_offsets_match_the_kernel_header(tmp_path: Path) -> None:
    if not Path("/usr/include/linux/taskstats.h").exists() or not shutil.which("cc"):
        pytest.skip("no linux/taskstats.h or C compiler")
    src = tmp_path / "off.c"
    src.write_text("#include <stdio.h>\n#include <stddef.h>\n#include <linux/taskstats.h>\n"
                   "int main(void){printf(\"%zu %zu %zu %zu %zu %zu %zu\\n\", offsetof(struct taskstats, version),"
                   "offsetof(struct taskstats, ac_comm), sizeof(((struct taskstats *)0)->ac_comm),"
                   "offsetof(struct taskstats, ac_pid), offsetof(struct taskstats, ac_ppid),"
                   "offsetof(struct taskstats, nvcsw), offsetof(struct taskstats, nivcsw)); return 0;}\n")
    subprocess.run(["cc", "-o", str(tmp_path / "off"), str(src)], check=True)
    got = [int(v) for v in subprocess.run([str(tmp_path / "off")], capture_output=True, text=True,
                                          check=True).stdout.split()]
    assert got == [taskstats.OFF_VERSION, taskstats.OFF_COMM, taskstats.COMM_LEN, taskstats.OFF_PID,
                   taskstats.OFF_PPID, taskstats.OFF_NVCSW, taskstats.OFF_NIVCSW]


def record(pid: int, ppid: int, comm: str, nv: int, niv: int, size: int = 400) -> bytes:
    buf = bytearray(size)
    struct.pack_into("=H", buf, taskstats.OFF_VERSION, 13)
    buf[taskstats.OFF_COMM: taskstats.OFF_COMM + len(comm)] = comm.encode()
    struct.pack_into("=II", buf, taskstats.OFF_PID, pid, ppid)
    struct.pack_into("=QQ", buf, taskstats.OFF_NVCSW, nv, niv)
    return bytes(buf)


def exit_message(pid: int, stats: bytes, family: int = 31) -> bytes:
    """A taskstats exit message as the kernel sends it: the thread's record in an AGGR_PID."""
    inner = taskstats._attr(taskstats.TASKSTATS_TYPE_PID, struct.pack("=I", pid)) + \
        taskstats._attr(taskstats.TASKSTATS_TYPE_STATS, stats)
    payload = taskstats.GENLMSGHDR.pack(2, 1, 0) + taskstats._attr(taskstats.TASKSTATS_TYPE_AGGR_PID, inner)
    return taskstats.NLMSGHDR.pack(taskstats.NLMSGHDR.size + len(payload), family, 0, 0, 0) + payload


def test_taskstats_messages_are_parsed() -> None:
    family = 31
    msg = exit_message
    data = msg(7, record(7, 1, "pmemlab/3", 4, 9)) + msg(8, record(8, 2, "kworker/0:1", 1, 1, size=500))
    got = taskstats.parse_exits(data, family)
    assert got == [TaskExit(7, 1, "pmemlab/3", 4, 9), TaskExit(8, 2, "kworker/0:1", 1, 1)]
    assert taskstats.parse_exits(data, family + 1) == []  # another family's messages
    assert taskstats.parse_record(b"\0" * 100) is None  # too short to hold the counters


def test_listener_receives_into_one_buffer_and_drains_unparsed(monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 37: drain() and collect() run around every point; a recv() of 1 MiB allocated a
    # megabyte each time, and drain() parsed the records it drops
    class IntoOnly(socket.socket):
        def recv(self, *a, **k):  # type: ignore[no-untyped-def]
            raise AssertionError("recv() allocates its buffer at every call: recv_into the listener's")

    ours, kernel = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    listener = taskstats.ExitListener(IntoOnly(fileno=ours.detach()), 31)
    parsed: list[int] = []
    parse = taskstats.parse_exits
    monkeypatch.setattr(taskstats, "parse_exits", lambda data, family: parsed.append(1) or parse(data, family))
    try:
        for n in range(3):
            kernel.send(exit_message(90, record(90, 1, "other", 1, 1)))
            listener.drain()
            assert parsed == []
            kernel.send(exit_message(7 + n, record(7 + n, 1, "pmemlab/3", 4, n)))
            kernel.send(exit_message(20, record(20, 1, "kworker/0:1", 1, 1, size=500)))
            assert listener.collect() == [TaskExit(7 + n, 1, "pmemlab/3", 4, n), TaskExit(20, 1, "kworker/0:1", 1, 1)]
            assert listener.collect() == []
            parsed.clear()
    finally:
        listener.close()
        kernel.close()


def test_records_are_matched_to_threads() -> None:
    me = os.getpid()
    rows = [{"thread": 0, "cpu": 2}, {"thread": 1, "cpu": 3}, {"thread": "all", "cpu": -1}]
    # the module: kthreads pmemlab/CPU by the CPU of their row; other tasks ignored
    exits = [TaskExit(50, 2, "pmemlab/3", 1, 7), TaskExit(51, 2, "pmemlab/2", 2, 0), TaskExit(52, 2, "pmemlab-ctl", 9, 9)]
    got = runcond.thread_switches(exits, rows, None)
    assert {k: (e.voluntary, e.involuntary) for k, e in got.items()} == {"0": (2, 0), "1": (1, 7)}
    # two records for one CPU: ambiguous, that thread gets none
    assert set(runcond.thread_switches([*exits, TaskExit(53, 2, "pmemlab/2", 5, 5)], rows, None)) == {"1"}
    # the runner: its worker threads in creation (thread id) order, not its main thread, not other children
    runner = [TaskExit(1001, me, "pmemlab-run", 3, 1), TaskExit(1000, me, "pmemlab-run", 40, 2),
              TaskExit(1002, me, "pmemlab-run", 5, 6), TaskExit(1003, me, "ipmctl", 1, 1),
              TaskExit(1004, 1, "pmemlab-run", 1, 1)]
    got = runcond.thread_switches(runner, rows, 1000)
    assert {k: (e.pid, e.voluntary) for k, e in got.items()} == {"0": (1001, 3), "1": (1002, 5)}
    # thread ids that wrapped past pid_max after the main thread still come after it
    wrapped = [TaskExit(4194300, me, "pmemlab-run", 1, 1), TaskExit(4194301, me, "pmemlab-run", 2, 2),
               TaskExit(300, me, "pmemlab-run", 3, 3)]
    got = runcond.thread_switches(wrapped, rows, 4194300)
    assert [got[k].pid for k in ("0", "1")] == [4194301, 300]
    # a worker missing (or the main thread's record): no counts rather than counts on the wrong thread
    assert runcond.thread_switches(runner[:2], rows, 1000) == {}
    assert runcond.thread_switches(runner[:1] + runner[2:3], rows, 1000) == {}


class FakeListener:
    def __init__(self, records: list[TaskExit]) -> None:
        self.records = records
        self.overflowed = False
        self.drained = 0

    def drain(self) -> None:
        self.drained += 1

    def collect(self, timeout_s: float = 0.0) -> list[TaskExit]:
        out, self.records = self.records, []
        return out

    def close(self) -> None:
        pass


def test_run_watch_annotates_the_rows(tmp_path: Path) -> None:
    host = host_tree(tmp_path)
    put(host.proc / "stat", stat({c: (0, 0, 0, 1000, 0, 0, 0, 0, 0, 0) for c in range(4)}))
    listener = FakeListener([TaskExit(60, 2, "pmemlab/1", 3, 4), TaskExit(61, 2, "pmemlab/0", 1, 2)])
    watch = RunWatch(host=host, listener=listener)  # type: ignore[arg-type]
    watch.before()
    put(host.proc / "stat", stat({0: (90, 0, 0, 1000, 0, 0, 0, 10, 0, 0), 1: (100, 0, 0, 1000, 0, 0, 0, 0, 0, 0),
                                  2: (50, 0, 0, 1050, 0, 0, 0, 0, 0, 0), 3: (0, 0, 0, 1100, 0, 0, 0, 0, 0, 0)}))
    rows = [{"thread": 0, "cpu": 0}, {"thread": 1, "cpu": 1}, {"thread": "all", "cpu": -1}]
    watch.annotate(rows)
    assert listener.drained == 1
    for r in rows:
        assert set(RUN_STATE_COLUMNS + NOISE_COLUMNS) <= set(r), r
        assert r["steal_pct"] == 5.0 and r["smt_sibling_busy_pct"] == 50.0 and r["thp_enabled"] == "madvise"
        assert r["governor"] is None and r["smt_active"] == 1
    assert [(r["ctx_voluntary"], r["ctx_involuntary"]) for r in rows] == [(1, 2), (3, 4), (4, 6)]
    # a thread without its record: its cells and the aggregate's stay empty
    watch.listener = FakeListener([TaskExit(61, 2, "pmemlab/0", 1, 2)])  # type: ignore[assignment]
    watch.before()
    rows = [{"thread": 0, "cpu": 0}, {"thread": 1, "cpu": 1}, {"thread": "all", "cpu": -1}]
    watch.annotate(rows)
    assert rows[0]["ctx_voluntary"] == 1 and "ctx_voluntary" not in rows[1] and "ctx_voluntary" not in rows[2]
    # a failed run (one aggregate row, no CPUs): the machine state, no steal
    watch.before()
    failed = [{"thread": "all", "status": "error"}]
    watch.annotate(failed)
    assert failed[0]["steal_pct"] is None and failed[0]["thp_defrag"] == "always"


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="taskstats needs CAP_NET_ADMIN (root)")


@needs_root
def test_taskstats_listener_sees_real_threads_exit() -> None:
    listener = taskstats.ExitListener.open()
    if listener is None:
        pytest.skip("taskstats not available here (kernel without CONFIG_TASKSTATS, or a network namespace)")
    try:
        listener.drain()
        code = ("import threading, time\n"
                "ts = [threading.Thread(target=time.sleep, args=(0.05,)) for _ in range(3)]\n"
                "[t.start() for t in ts]\n[t.join() for t in ts]\n")
        proc = subprocess.run([sys.executable, "-c", code], check=True)
        assert proc.returncode == 0
        mine = [e for e in listener.collect(1.0) if e.ppid == os.getpid()]
        # three threads that slept (a voluntary switch each at least) and their main thread
        assert len(mine) >= 4
        threads = sorted(mine, key=lambda e: e.pid)[1:]
        assert all(e.voluntary >= 1 for e in threads)
    finally:
        listener.close()


def test_taskstats_is_refused_without_privilege() -> None:
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        pytest.skip("needs root to drop to nobody")
    code = f"import sys; sys.path.insert(0, {str(TOP / 'userspace')!r}); from pmemlab.host.taskstats import ExitListener; " \
           "print(ExitListener.open())"
    out = subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "/usr/bin/python3", "-c",
                          code], capture_output=True, text=True, cwd="/")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "None"  # the context-switch columns stay empty, the run goes on


def test_user_backend_sweep_records_the_conditions(tmp_path: Path) -> None:
    """A real sweep on the host's DRAM through pmemlab-run: every row carries the run state and
    mitigations, the runs their steal time, and (as root) every thread its context switches."""
    runner = TOP / "userspace/runner/pmemlab-run"
    if not runner.exists():
        pytest.skip("make userspace first")
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sweep]\nname = "c"\nrepeats = 2\n[base]\nmode = "bandwidth"\nduration_ms = 50\n'
                   'working_set = "1M"\n[axes]\nthreads = [1, 2]\n')
    out = tmp_path / "c.csv"
    cp = subprocess.run([sys.executable, "-m", "pmemlab", "sweep", str(cfg), "--backend", "user", "--target", "dram",
                         "-o", str(out)], capture_output=True, text=True, cwd=tmp_path,
                        env={**os.environ, "PYTHONPATH": str(TOP / "userspace")})
    assert cp.returncode == 0, cp.stderr
    df = read_rows(out)
    vulns = runcond.vulnerabilities(HostPaths())
    assert (df["mitigations"] == (runcond.mitigations_summary(vulns) or float("nan"))).all() or not vulns
    assert (df["mitigations_cmdline"] == runcond.mitigations_cmdline(HostPaths())).all()
    assert (df["thp_enabled"] == runcond.thp(HostPaths())["thp_enabled"]).all()
    smt = runcond.smt_active(HostPaths())
    assert smt is None or (df["smt_active"] == smt).all()
    assert df["steal_pct"].dropna().between(0, 100).all()
    if os.geteuid() == 0 and taskstats.ExitListener.open() is not None:
        threads = df[df["thread"] != "all"]
        assert threads["ctx_voluntary"].notna().all() and threads["ctx_involuntary"].notna().all()
        for (point, repeat), grp in df.groupby(["point", "repeat"]):
            agg = grp[grp["thread"] == "all"].iloc[0]
            per = grp[grp["thread"] != "all"]
            assert agg["ctx_voluntary"] == per["ctx_voluntary"].sum()
            assert agg["ctx_involuntary"] == per["ctx_involuntary"].sum()
    summary = pd.read_csv(out.with_name("c.summary.csv"))
    assert {"governor", "thp_enabled", "mitigations", "steal_pct_max", "cv_pct", "noisy", "noise"} <= set(summary)


def test_run_watch_samples_the_machine_state_once_a_second(tmp_path: Path) -> None:
    # issue 37: the state a sweep cannot change between two points is not read at every point;
    # a change shows in the rows of the runs that end a second after it at most
    host = host_tree(tmp_path)
    put(host.proc / "stat", stat({c: (0, 0, 0, 1000, 0, 0, 0, 0, 0, 0) for c in range(4)}))
    now = [100.0]
    watch = RunWatch(host=host, listener=None, clock=lambda: now[0])
    thp = host.sys / "kernel/mm/transparent_hugepage/enabled"
    rows = [{"thread": 0, "cpu": 0}, {"thread": "all", "cpu": -1}]
    watch.before()
    watch.annotate(rows)
    assert rows[0]["thp_enabled"] == "madvise"
    put(thp, "always madvise [never]\n")
    now[0] += 0.5
    rows = [{"thread": 0, "cpu": 0}, {"thread": "all", "cpu": -1}]
    watch.before()
    watch.annotate(rows)
    assert rows[0]["thp_enabled"] == "madvise", "read again within the second"
    now[0] += 0.6
    rows = [{"thread": 0, "cpu": 0}, {"thread": "all", "cpu": -1}]
    watch.before()
    watch.annotate(rows)
    assert rows[0]["thp_enabled"] == rows[1]["thp_enabled"] == "never"


def test_run_watch_stops_waiting_for_records_that_never_come(tmp_path: Path) -> None:
    # a backend whose threads send no exit records (the host tests' stand-in module) must not
    # cost every point the 0.2 s wait: three runs in a row without any, then no more waiting
    host = host_tree(tmp_path)
    put(host.proc / "stat", stat({c: (0, 0, 0, 1000, 0, 0, 0, 0, 0, 0) for c in range(4)}))

    class Counting(FakeListener):
        waits: list[float] = []

        def collect(self, timeout_s: float = 0.0) -> list[TaskExit]:
            self.waits.append(timeout_s)
            return super().collect(timeout_s)

    listener = Counting([])
    watch = RunWatch(host=host, listener=listener)  # type: ignore[arg-type]
    for _ in range(6):
        watch.before()
        watch.annotate([{"thread": 0, "cpu": 0}, {"thread": "all", "cpu": -1}])
    assert sum(1 for w in listener.waits if w > 0) == 3
    # a record again: the wait comes back
    listener.records = [TaskExit(61, 2, "pmemlab/0", 1, 2)]
    watch.annotate([{"thread": 0, "cpu": 0}, {"thread": "all", "cpu": -1}])
    listener.waits.clear()
    watch.annotate([{"thread": 0, "cpu": 0}, {"thread": "all", "cpu": -1}])
    assert any(w > 0 for w in listener.waits)


def test_run_watch_parses_the_times_of_the_run_cpus_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # issue 37: /proc/stat is read before and after every run; of a 64-CPU machine's lines only
    # those of the run's CPUs and their siblings are parsed, with the values a full parse gives
    host = host_tree(tmp_path, cpus=64)
    before = {c: (10 * c, 0, 5, 1000 + c, 0, 0, 0, c % 3, 0, 0) for c in range(64)}
    after = {c: (10 * c + 40 + c % 7, 0, 5, 1050 + 2 * c, 0, 0, 0, c % 3 + c % 5, 0, 0) for c in range(64)}
    built: list[int] = []

    class Counted(CpuTime):
        def __init__(self, *a, **k) -> None:  # type: ignore[no-untyped-def]
            built.append(1)
            super().__init__(*a, **k)

    monkeypatch.setattr(runcond, "CpuTime", Counted)
    watch = RunWatch(host=host, listener=None)
    for cpus in ([0], [1, 5], [33]):
        put(host.proc / "stat", stat(before))
        watch.before()
        put(host.proc / "stat", stat(after))
        built.clear()
        rows = [*({"thread": i, "cpu": c} for i, c in enumerate(cpus)), {"thread": "all", "cpu": -1}]
        watch.annotate(rows)
        seen = {*cpus, *(s for c in cpus for s in runcond.siblings(host, c))}
        assert len(built) == 2 * len(seen) < 2 * 64
        put(host.proc / "stat", stat(before))
        full_before = runcond.cpu_times(host)
        put(host.proc / "stat", stat(after))
        full_after = runcond.cpu_times(host)
        assert len(full_before) == 64
        assert rows[0]["steal_pct"] == runcond.steal_pct(full_before, full_after, cpus) is not None
        assert rows[0]["smt_sibling_busy_pct"] == runcond.sibling_busy_pct(host, full_before, full_after, cpus) \
            is not None
    # the all-CPU line and what follows the CPU lines are not CPUs
    assert set(runcond.parse_cpu_times(stat(before) + "cpu99 1 2 3 4 5 6 7 8\n")) == set(range(64))
