"""The conditions of each run, recorded in its rows (table.RUN_STATE_COLUMNS, NOISE_COLUMNS) and the
boot-time ones every row of a sweep carries (mitigations):

- the machine's state when the run ended, for the run's CPUs: cpufreq governor and driver,
  turbo/boost, SMT, transparent huge pages;
- what happened on the run's CPUs while it ran (/proc/stat before and after): steal time in % of
  their CPU time, and how busy their SMT siblings were;
- each thread's voluntary and involuntary context switches (taskstats records at thread exit,
  pmemlab.host.taskstats): the module's `pmemlab/CPU` kthreads by CPU, the runner's worker threads in
  the order they were created.

A value this machine does not expose is an empty cell, never a guess. docs/method.md says how
each is read and what it is good for.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Container, Iterable, Mapping, Sequence

from pmemlab.host.probe import HostPaths as Host
from pmemlab.params import parse_cpulist
from pmemlab.results import row_number
from pmemlab.host.readall import read_all
from pmemlab.host.taskstats import ExitListener, TaskExit

CPU = "devices/system/cpu"
PID_MAX_LIMIT = 1 << 22  # the kernel's upper bound of pid_max: thread ids wrap below it
STATE_EVERY_S = 1.0  # the machine state (governor, turbo, SMT, THP) read at most this often in a sweep
WAIT_S = 0.2  # how long a run's thread records are waited for after it ended
MISSES_BEFORE_NO_WAIT = 3  # runs in a row without any record: the next ones are not waited for

def _read(path: Path) -> str | None:
    """The file's text, stripped (None: unreadable). /proc/stat is read twice at every point of a
    sweep (issue 37): read_all, no file object."""
    try:
        return read_all(path).strip()
    except OSError:
        return None


def _cpus(text: str | None) -> list[int]:
    try:
        return sorted(parse_cpulist(text)) if text else []
    except ValueError:
        return []


def online_cpus(host: Host) -> list[int]:
    return _cpus(_read(host.sys / CPU / "online"))


def _joined(values: Iterable[str | None]) -> str | None:
    found = list(dict.fromkeys(v for v in values if v))
    return "/".join(found) if found else None


# --------------------------------------------------------------------------
# the machine's state
# --------------------------------------------------------------------------
def governor(host: Host, cpus: Sequence[int]) -> str | None:
    """cpufreq scaling_governor of `cpus` (several: joined with '/'); None without cpufreq."""
    return _joined(_read(host.sys / CPU / f"cpu{c}/cpufreq/scaling_governor") for c in cpus)


def cpufreq_driver(host: Host, cpus: Sequence[int]) -> str | None:
    return _joined(_read(host.sys / CPU / f"cpu{c}/cpufreq/scaling_driver") for c in cpus)


def turbo(host: Host, cpus: Sequence[int]) -> str | None:
    """'on' or 'off': intel_pstate's no_turbo, else the global cpufreq/boost (acpi-cpufreq), else the
    boost of the cpufreq policies of `cpus` (amd-pstate); None when none of them exists."""
    no_turbo = _read(host.sys / CPU / "intel_pstate/no_turbo")
    if no_turbo in ("0", "1"):
        return "off" if no_turbo == "1" else "on"
    boost = _read(host.sys / CPU / "cpufreq/boost")
    if boost in ("0", "1"):
        return "on" if boost == "1" else "off"
    per_cpu = [_read(host.sys / CPU / f"cpu{c}/cpufreq/boost") for c in cpus]
    return _joined({"1": "on", "0": "off"}.get(v or "") for v in per_cpu)


def smt_active(host: Host) -> int | None:
    value = _read(host.sys / CPU / "smt/active")
    return int(value) if value in ("0", "1") else None


def siblings(host: Host, cpu: int) -> list[int]:
    """The other hardware threads of `cpu`'s core."""
    return [c for c in _cpus(_read(host.sys / CPU / f"cpu{cpu}/topology/thread_siblings_list")) if c != cpu]


def _bracketed(text: str | None) -> str | None:
    """'always [madvise] never' -> 'madvise'."""
    if not text:
        return None
    m = re.search(r"\[([^\]]+)\]", text)
    return m.group(1) if m else text.split()[0]


def thp(host: Host) -> dict[str, str | None]:
    base = host.sys / "kernel/mm/transparent_hugepage"
    return {"thp_enabled": _bracketed(_read(base / "enabled")), "thp_defrag": _bracketed(_read(base / "defrag"))}


def machine_state(host: Host, cpus: Sequence[int]) -> dict[str, Any]:
    """The run-state columns for `cpus` (all online CPUs when empty)."""
    cpus = list(cpus) or online_cpus(host)
    return {"governor": governor(host, cpus), "cpufreq_driver": cpufreq_driver(host, cpus),
            "turbo": turbo(host, cpus), "smt_active": smt_active(host), **thp(host)}


# --------------------------------------------------------------------------
# boot-time: mitigations
# --------------------------------------------------------------------------
def vulnerabilities(host: Host) -> dict[str, str]:
    """/sys/devices/system/cpu/vulnerabilities: name -> the kernel's line."""
    base = host.sys / CPU / "vulnerabilities"
    try:
        entries = sorted(p for p in base.iterdir() if p.is_file())
    except OSError:
        return {}
    out = {}
    for path in entries:
        text = _read(path)
        if text is not None:
            out[path.name] = text
    return out


def mitigations_summary(vulns: Mapping[str, str]) -> str | None:
    """'12 mitigated, 5 not affected; vulnerable: gather_data_sampling, retbleed' (None: unknown)."""
    if not vulns:
        return None
    vulnerable = sorted(n for n, t in vulns.items() if t.lower().startswith("vulnerable"))
    mitigated = sum(1 for t in vulns.values() if t.lower().startswith("mitigation"))
    unaffected = sum(1 for t in vulns.values() if t.lower().startswith("not affected"))
    other = len(vulns) - len(vulnerable) - mitigated - unaffected
    text = f"{mitigated} mitigated, {unaffected} not affected"
    if other:
        text += f", {other} unknown"
    return text + (f"; vulnerable: {', '.join(vulnerable)}" if vulnerable else "; none vulnerable")


def mitigations_cmdline(host: Host) -> str | None:
    """The value of mitigations= on the kernel command line; 'unset' when it has none."""
    text = _read(host.proc / "cmdline")
    if text is None:
        return None
    found = [arg.split("=", 1)[1] for arg in text.replace("\0", " ").split() if arg.startswith("mitigations=")]
    return found[-1] if found else "unset"


# --------------------------------------------------------------------------
# what happened during the run
# --------------------------------------------------------------------------
@dataclass(frozen=True)
class CpuTime:
    """Of one CPU, in USER_HZ ticks since boot: all time, idle (idle + iowait), steal."""

    total: int
    idle: int
    steal: int


def proc_stat(host: Host) -> str | None:
    """/proc/stat as it is now (parsed later by parse_cpu_times, for the CPUs a run turned out to use)."""
    return _read(host.proc / "stat")


def cpu_times(host: Host) -> dict[int, CpuTime]:
    """Per CPU from /proc/stat (guest time is already inside user and nice: not added twice)."""
    return parse_cpu_times(proc_stat(host))


def parse_cpu_times(text: str | None, cpus: Container[int] | None = None) -> dict[int, CpuTime]:
    """cpu_times of a /proc/stat text: its per-CPU lines (those of `cpus` when given), which come
    before every other line (the long `intr` one is not split)."""
    out: dict[int, CpuTime] = {}
    in_cpus = False
    for line in (text or "").splitlines():
        if not line.startswith("cpu"):
            if in_cpus:
                break  # past the CPU lines
            continue
        in_cpus = True
        name, _, rest = line.partition(" ")
        try:
            cpu = int(name[3:])
        except ValueError:
            continue  # the all-CPU line "cpu"
        if cpus is not None and cpu not in cpus:
            continue
        fields = rest.split()[:8]
        try:
            values = [int(v) for v in fields] + [0] * (8 - len(fields))
        except ValueError:
            continue
        user, nice, system, idle, iowait, irq, softirq, steal = values
        out[cpu] = CpuTime(total=user + nice + system + idle + iowait + irq + softirq + steal,
                           idle=idle + iowait, steal=steal)
    return out


def steal_pct(before: Mapping[int, CpuTime], after: Mapping[int, CpuTime], cpus: Iterable[int]) -> float | None:
    """Steal time of `cpus` between the two readings, in % of their CPU time (None: no tick passed)."""
    total = steal = 0
    for c in cpus:
        if c in before and c in after:
            total += after[c].total - before[c].total
            steal += after[c].steal - before[c].steal
    return round(100.0 * steal / total, 3) if total > 0 else None


def busy_pct(before: Mapping[int, CpuTime], after: Mapping[int, CpuTime], cpu: int) -> float | None:
    if cpu not in before or cpu not in after:
        return None
    total = after[cpu].total - before[cpu].total
    idle = after[cpu].idle - before[cpu].idle
    return round(100.0 * (total - idle) / total, 1) if total > 0 else None


def sibling_busy_pct(host: Host, before: Mapping[int, CpuTime], after: Mapping[int, CpuTime],
                     cpus: Iterable[int], sibling_of: Callable[[int], list[int]] | None = None) -> float | None:
    """The busiest SMT sibling of the run's CPUs (None: no siblings, or no tick passed);
    `sibling_of(cpu)` instead of reading the topology again (RunWatch reads it once)."""
    values = [busy_pct(before, after, s) for c in cpus for s in (sibling_of or (lambda c: siblings(host, c)))(c)]
    known = [v for v in values if v is not None]
    return max(known) if known else None


KTHREAD = re.compile(r"pmemlab/(\d+)$")


def thread_switches(exits: Sequence[TaskExit], rows: Sequence[Mapping[str, Any]],
                    runner_pid: int | None) -> dict[str, TaskExit]:
    """thread number (as in the rows) -> its record. The module's kthreads are named pmemlab/CPU
    and found by the CPU of their row; the runner's worker threads (children of this process, not
    its main thread) are numbered in the order they were created, which is the order of their
    thread ids. A thread whose record is missing or ambiguous gets none."""
    threads = [r for r in rows if str(r.get("thread")) != "all"]
    out: dict[str, TaskExit] = {}
    if not threads:
        return out
    if runner_pid is None:
        by_cpu: dict[int, list[TaskExit]] = {}
        for e in exits:
            m = KTHREAD.match(e.comm)
            if m:
                by_cpu.setdefault(int(m.group(1)), []).append(e)
        for r in threads:
            found = by_cpu.get(row_number(r.get("cpu")), [])
            if len(found) == 1:
                out[str(r["thread"])] = found[0]
        return out
    main = [e for e in exits if e.pid == runner_pid]
    # a served runner (the user backend's sweeps) outlives its runs: its name from /proc
    comm = main[0].comm if len(main) == 1 else _read(Path(f"/proc/{runner_pid}/comm")) if not main else None
    if not comm:
        return out
    leader = runner_pid
    # the worker threads: same name as the runner, same parent (this process); created after the
    # main thread, so their ids follow its id (past a wrap of pid_max, they start again low)
    workers = sorted((e for e in exits if e.ppid == os.getpid() and e.pid != leader and e.comm == comm),
                     key=lambda e: e.pid if e.pid > leader else e.pid + PID_MAX_LIMIT)
    if len(workers) != len(threads):
        return out
    for r, e in zip(sorted(threads, key=lambda r: row_number(r.get("thread"))), workers):
        out[str(r["thread"])] = e
    return out


@dataclass
class RunWatch:
    """Around each run: `before()` reads /proc/stat and empties the taskstats listener, `annotate()`
    adds the run's conditions to its rows."""

    host: Host = field(default_factory=Host)
    listener: ExitListener | None = None
    _before: str | None = None  # /proc/stat at before(), parsed for the run's CPUs by annotate()
    # runs in a row whose thread records did not come within WAIT_S: past MISSES_BEFORE_NO_WAIT,
    # no more waiting (a backend whose threads send none must not cost every point WAIT_S)
    _misses: int = 0
    clock: Callable[[], float] = time.monotonic
    # the machine state of a set of CPUs and when it was read (sampled at most every STATE_EVERY_S)
    _state: dict[tuple[int, ...], tuple[float, dict[str, Any]]] = field(default_factory=dict)
    # each CPU's SMT siblings: the topology does not change within a sweep, read once
    _siblings: dict[int, list[int]] = field(default_factory=dict)

    def machine_state(self, cpus: Sequence[int]) -> dict[str, Any]:
        """machine_state(cpus), read again only when the last reading is STATE_EVERY_S old: a
        governor, turbo, SMT or THP switched during a sweep shows in the rows of the runs that
        end a second after it at most, and a point costs no sysfs reads of them."""
        key = tuple(cpus)
        now = self.clock()
        seen = self._state.get(key)
        if seen is None or now - seen[0] >= STATE_EVERY_S:
            seen = (now, machine_state(self.host, cpus))
            self._state[key] = seen
        return dict(seen[1])

    def sibling_of(self, cpu: int) -> list[int]:
        if cpu not in self._siblings:
            self._siblings[cpu] = siblings(self.host, cpu)
        return self._siblings[cpu]

    @classmethod
    def open(cls, host: Host | None = None, taskstats: bool = True) -> RunWatch:
        return cls(host=host or Host(), listener=ExitListener.open() if taskstats else None)

    def before(self) -> None:
        if self.listener is not None:
            self.listener.drain()
        self._before = proc_stat(self.host)

    def annotate(self, rows: list[dict[str, Any]], runner_pid: int | None = None) -> None:
        """Add the run-state and noise columns to the rows of the run just made (every row gets the
        run's; each thread row its own context switches, the aggregate their sum)."""
        after_text = proc_stat(self.host)
        cpus = sorted({c for r in rows if str(r.get("thread")) != "all" for c in [row_number(r.get("cpu"))] if c >= 0})
        seen = {*cpus, *(s for c in cpus for s in self.sibling_of(c))}  # the CPUs whose times matter
        before, after = parse_cpu_times(self._before, seen), parse_cpu_times(after_text, seen)
        run: dict[str, Any] = {**self.machine_state(cpus),
                               "steal_pct": steal_pct(before, after, cpus) if cpus else None,
                               "smt_sibling_busy_pct": sibling_busy_pct(self.host, before, after, cpus,
                                                                        self.sibling_of) if cpus else None}
        per_thread: dict[str, TaskExit] = {}
        threads = [r for r in rows if str(r.get("thread")) != "all"]
        if self.listener is not None and threads:
            exits = self.listener.collect()
            per_thread = thread_switches(exits, rows, runner_pid)
            if len(per_thread) < len(threads) and self._misses < MISSES_BEFORE_NO_WAIT:
                exits += self.listener.collect(WAIT_S)  # records still on their way
                per_thread = thread_switches(exits, rows, runner_pid)
            self._misses = 0 if per_thread else self._misses + 1
            if self.listener.overflowed:
                per_thread = {}  # records were dropped: a count could belong to the wrong thread
        complete = bool(threads) and all(str(r["thread"]) in per_thread for r in threads)
        for r in rows:
            r.update(run)
            e = per_thread.get(str(r.get("thread")))
            if e is not None:
                r.update(ctx_voluntary=e.voluntary, ctx_involuntary=e.involuntary)
            elif str(r.get("thread")) == "all" and complete:
                r.update(ctx_voluntary=sum(per_thread[str(t["thread"])].voluntary for t in threads),
                         ctx_involuntary=sum(per_thread[str(t["thread"])].involuntary for t in threads))

    def close(self) -> None:
        if self.listener is not None:
            self.listener.close()
            self.listener = None
