"""scripts/run-tests (make test) driven end to end with stand-ins for the guests: the first
kernel's guest runs alone, the kernel-matrix guests and the SMT lane (a second guest of the first
kernel, with SMT siblings, for the tests marked smt) then run VM_JOBS at a time, each one's output
comes whole when it ends, and a guest that fails makes the suite fail."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

from testlib import TOP

# Stands in for scripts/vm: notes when it started and ended (the kernel, KERNEL-smt with --smt),
# says what it was asked, and fails for the kernel named by STUB_FAIL. The tests' orders of
# events are held by the stand-ins, not by their 1.5 s of sleeps against the suite's speed (it runs
# at nice 19 beside two TCG guests, where starting the next stand-in can take longer than that):
# with STUB_MEET=J a matrix guest (not STUB_ALONE's) goes on only once J matrix guests run at once,
# or all STUB_TOTAL have started; with STUB_ACK=DIR it goes on after its first line only once the
# test has read it (DIR/KERNEL exists). Each wait's bound is a hang's: a pool that runs fewer at
# once, or output held back, then shows in the spans and the times the test reads.
STUB_VM = """#!/usr/bin/env python3
import os, sys, time
a = sys.argv
if "--list-kernels" in a:
    sys.exit(0)
k = a[a.index("--kernel") + 1] + ("-smt" if "--smt" in a else "")
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(f"start {k} {time.monotonic()}\\n")


def running() -> tuple[int, int]:
    words = [ln.split()[:2] for ln in open(os.environ["STUB_LOG"]).read().splitlines()]
    started = [w[1] for w in words if w[0] == "start" and w[1] != os.environ.get("STUB_ALONE")]
    ended = [w[1] for w in words if w[0] == "end" and w[1] != os.environ.get("STUB_ALONE")]
    return len(started) - len(ended), len(started)


meet = int(os.environ.get("STUB_MEET", "0"))
if os.environ.get("STUB_MEET_FILE") and k != os.environ.get("STUB_ALONE"):  # J as the test read it
    deadline = time.monotonic() + 120
    while not os.path.exists(os.environ["STUB_MEET_FILE"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    meet = int(open(os.environ["STUB_MEET_FILE"]).read() or 0)
if meet and k != os.environ.get("STUB_ALONE"):
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        now, started = running()
        if now >= meet or started >= int(os.environ["STUB_TOTAL"]):
            break
        time.sleep(0.05)
print(f"vm: module for {k} in 0.1 s", file=sys.stderr)
print(f"vm: booting {k}", file=sys.stderr, flush=True)
print("args:", " ".join(a[1:]), flush=True)
for i in range(3):
    print(f"{k} line {i}", flush=True)
    time.sleep(0.5)
    ack = os.environ.get("STUB_ACK")
    if i == 0 and ack:
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(ack, k)) and time.monotonic() < deadline:
            time.sleep(0.05)
open(a[a.index("--verdict") + 1], "w").close()
print(f"vm: times: stand-in {k}", file=sys.stderr)
with open(os.environ["STUB_LOG"], "a") as log:
    log.write(f"end {k} {time.monotonic()}\\n")
sys.exit(1 if k == os.environ.get("STUB_FAIL") else 0)
"""


# Each run of run-tests below is given 600 s: its stand-in host tests (pytest with xdist) took 216 s
# on this 2-core machine with two TCG guests beside it, past the 240 s it had before.


def stand_in_tree(root: Path) -> None:
    (root / "scripts").mkdir(parents=True)
    for name in ("run-tests", "test-summary"):
        shutil.copy2(TOP / "scripts" / name, root / "scripts" / name)
    stubs = {"install-deps": "#!/bin/sh\nexit 0\n", "kernels": "#!/bin/sh\nexit 0\n", "vm": STUB_VM,
             "guest-test-files": "#!/bin/sh\necho tests/guest/test_stand_in.py\n"}
    for name, text in stubs.items():
        (root / "scripts" / name).write_text(text)
        (root / "scripts" / name).chmod(0o755)
    (root / "Makefile").write_text("userspace:\n\t@true\n")
    for d in ("host", "bed"):
        (root / "tests" / d).mkdir(parents=True)
        (root / "tests" / d / f"test_{d}_stand_in.py").write_text("def test_it() -> None:\n    assert 1 + 1 == 2\n")
    (root / ".venv").symlink_to(Path(sys.prefix))


def spans_of(log: Path) -> dict[str, list[float]]:
    """Each stand-in guest's start and end (time.monotonic(), the clock of every process)."""
    spans: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        what, kernel, t = line.split()
        spans.setdefault(kernel, []).append(float(t))
    return spans


def most_at_once(spans: dict[str, list[float]]) -> int:
    events = sorted([(s, 1) for s, _ in spans.values()] + [(e, -1) for _, e in spans.values()],
                    key=lambda ev: (ev[0], ev[1]))
    running, most = 0, 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


def test_matrix_guests_run_vm_jobs_at_a_time_and_a_failure_counts(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    stand_in_tree(root)
    log = tmp_path / "guests.log"
    kernels = ["k-first", "k-a", "k-b", "k-c", "k-last"]
    env = dict(os.environ, VM_KERNELS=" ".join(kernels), VM_JOBS="2", VM_CXL="0", STUB_LOG=str(log),
               STUB_FAIL="k-b", PMEMLAB_VM_LOCK="", STUB_MEET="2", STUB_ALONE="k-first",
               STUB_TOTAL=str(len(kernels)))  # the matrix guests and the SMT lane
    res = subprocess.run([str(root / "scripts" / "run-tests")], cwd=root, env=env, capture_output=True, text=True,
                         timeout=600)
    assert res.returncode == 1, res.stdout + res.stderr  # k-b failed
    spans = spans_of(log)
    assert sorted(spans) == sorted(kernels + ["k-first-smt"])
    first = spans.pop("k-first")
    assert all(start >= first[1] for start, _ in spans.values())  # the first guest ran alone
    assert most_at_once(spans) == 2, spans  # two at a time, never more
    out = res.stdout
    for k in kernels:  # each guest's output whole, from its heading to its last line
        head = out.index(f"== guest tests on {k}")
        block = out[head:out.index(f"{k} line 2", head)]
        assert all(f"{k} line {i}" in block for i in range(2)) and "== " not in block[3:], block
    assert "two NUMA nodes" in out[out.index("== guest tests on k-last"):].splitlines()[0]
    # the SMT lane: the first kernel again, with siblings and an Intel model, the tests marked smt only
    smt = out[out.index("== guest tests on k-first, SMT siblings"):]
    args = smt[smt.index("args:"):].splitlines()[0]
    assert args.startswith("args: --kernel k-first ") and " --smt --cpus 4 --cpu-model Cascadelake-Server-v1 " in args, args
    assert " -m smt " in args, args
    assert "--cxl" not in args and "--numa-nodes" not in args, args
    first_args = out[out.index("== guest tests on k-first (every"):]
    first_args = first_args[first_args.index("args:"):].splitlines()[0]
    assert "--smt" not in first_args and "-m smt" not in first_args, first_args
    times = out[out.index("== times"):]
    assert all(f"guest {k} " in times for k in kernels + ["k-first-smt"])
    assert "the kernel-matrix guests, 2 at a time:" in times


def test_one_guest_at_a_time_shows_its_output_as_it_comes(tmp_path: Path) -> None:
    """VM_JOBS=1: no pool, each matrix guest's lines reach the terminal while it runs (read here
    before the stand-in has ended), and a failure still fails the suite; VM_SMT_LANE=0: no SMT
    lane."""
    root = tmp_path / "tree"
    stand_in_tree(root)
    log = tmp_path / "guests.log"
    kernels = ["k-first", "k-a", "k-b"]
    acks = tmp_path / "acks"  # each stand-in waits after its first line until it is read here
    acks.mkdir()
    env = dict(os.environ, VM_KERNELS=" ".join(kernels), VM_JOBS="1", VM_CXL="0", STUB_LOG=str(log),
               STUB_FAIL="k-a", PMEMLAB_VM_LOCK="", VM_SMT_LANE="0", STUB_ACK=str(acks))
    seen: dict[str, float] = {}
    with subprocess.Popen([str(root / "scripts" / "run-tests")], cwd=root, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.setdefault(line.strip(), time.monotonic())
            if line.strip().endswith(" line 0"):
                (acks / line.split()[0]).touch()
        assert proc.wait(timeout=600) == 1  # k-a failed
    spans = spans_of(log)
    assert sorted(spans) == sorted(kernels), spans
    assert most_at_once(spans) == 1, spans
    for k in kernels:
        assert seen[f"{k} line 0"] < spans[k][1], (k, seen.get(f"{k} line 0"), spans[k])
    assert any("the kernel-matrix guests, 1 at a time:" in line for line in seen)


def test_by_default_one_guest_per_cpu_and_per_4_gib_free(tmp_path: Path) -> None:
    root = tmp_path / "tree"
    stand_in_tree(root)
    log = tmp_path / "guests.log"
    kernels = ["k-first", "k-a", "k-b", "k-c", "k-d", "k-last"]
    env = {k: v for k, v in os.environ.items() if k != "VM_JOBS"}

    def want() -> int:  # the rule, at this moment: MemAvailable moves with the guests beside the suite
        free_kib = int(next(ln.split()[1] for ln in Path("/proc/meminfo").read_text().splitlines()
                            if ln.startswith("MemAvailable:")))
        return max(1, min(len(os.sched_getaffinity(0)), free_kib // (4 << 20)))

    before = want()
    # the pool's stand-ins meet as many at once as run-tests says it runs (read from its output:
    # it judged MemAvailable at its own moment, between the two readings here)
    jobs = tmp_path / "jobs"
    env.update(VM_KERNELS=" ".join(kernels), VM_CXL="0", STUB_LOG=str(log), PMEMLAB_VM_LOCK="",
               STUB_ALONE="k-first", STUB_TOTAL=str(len(kernels)), STUB_MEET_FILE=str(jobs))
    lines = []
    with subprocess.Popen([str(root / "scripts" / "run-tests")], cwd=root, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True) as proc:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if "the kernel-matrix guests, " in line and " at a time:" in line:
                tmp = jobs.with_suffix(".tmp")
                tmp.write_text(line.split("the kernel-matrix guests, ", 1)[1].split(" at a time:", 1)[0])
                tmp.replace(jobs)
        assert proc.wait(timeout=600) == 0, "".join(lines)
    after = want()
    out = "".join(lines)
    said = int(out.split("the kernel-matrix guests, ", 1)[1].split(" at a time:", 1)[0])
    assert min(before, after) <= said <= max(before, after), (said, before, after)
    spans = spans_of(log)
    spans.pop("k-first")
    assert most_at_once(spans) == min(said, 6), spans  # five matrix guests and the SMT lane
