"""A chase's chain in the served runner (pmemlab-run --serve, userspace/runner/chains.c): a run
that would lay the chain the run before laid keeps it (chain=kept in its result, through the
controller to the CSV) instead of laying it again, the kept chain is the one a fresh lay gives
(one cycle through every line of the region), a run whose bytes meet it has it written back first
(the next chase lays again), and the target holds its bytes again when the runner ends. The
one-shot runner lays and writes back every chain as before."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pmemlab.backends.served import ServedRunner

from testlib import TOP

RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
MiB = 1 << 20
WS = 2 * MiB  # the chain's region: 32768 lines of 64 B
CHASE = f"op=chase mode=latency access_size=64 pattern=rand working_set={WS} count=8192 chase_batch=64"


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def rows(lines: list[str]) -> dict[str, dict[str, str]]:
    """The result lines by thread."""
    out = {}
    for ln in lines:
        if ln.startswith("thread="):
            f = dict(x.split("=", 1) for x in ln.split())
            out[f["thread"]] = f
    return out


class Served:
    """One pmemlab-run --serve on target (the controller's own ServedRunner)."""

    def __init__(self, *args: str) -> None:
        self.r = ServedRunner([str(RUNNER), *args, "--serve"])
        assert self.r.start(120).how == "end"

    def ask(self, line: str) -> dict[str, dict[str, str]]:
        ans = self.r.ask(line, 120)
        assert ans.how == "end" and ans.lines and ans.lines[-1] == "#state done", (line, ans.lines[-3:], ans.stderr)
        return rows(ans.lines)

    def close(self) -> None:
        self.r.close()


def pool(tmp_path: Path, size: int = 8 * MiB) -> tuple[Path, str]:
    f = tmp_path / "pool"
    f.write_bytes(np.random.default_rng(7).integers(0, 256, size, dtype=np.uint8).tobytes())
    return f, digest(f)


def digest(f: Path) -> str:
    return hashlib.sha256(f.read_bytes()).hexdigest()


def chain(f: Path, ws: int = WS, offset: int = 0) -> list[int]:
    """The chain in the file's lines [offset, offset + ws) as the runner left them mapped: each
    line's first word the address of the next; the lowest address is the region's first line (one
    line points at it). Returns the lines in the order the chase visits them from line 0, asserting
    it is one cycle through every line."""
    words = np.frombuffer(f.read_bytes()[offset:offset + ws], dtype=np.uint64)[::8].astype(object)
    base = min(words)
    offs = [int(w - base) for w in words]
    assert all(o % 64 == 0 and 0 <= o < ws for o in offs), "a line's word is no pointer into the region"
    nxt = [o // 64 for o in offs]
    order, k = [], 0
    for _ in range(len(nxt)):
        order.append(k)
        k = nxt[k]
    assert k == 0, "the chain does not close after visiting every line once"
    assert len(set(order)) == len(nxt), f"{len(nxt) - len(set(order))} lines visited twice in one cycle"
    return order


def test_a_served_runner_lays_an_identical_chase_once_and_keeps_it(tmp_path: Path) -> None:
    """Two identical chase points in one served runner: the first lays the chain (chain=laid), the
    second keeps it (chain=kept) and runs as many hops over the same lines: the file holds the same
    chain between them, byte for byte, one cycle through all 32768 lines, and it is the chain a
    fresh runner lays. Before, every run laid its chain and wrote it back (no chain field)."""
    f, before = pool(tmp_path)
    s = Served(f"target={f}", "allow_file=1", *CHASE.split())
    try:
        first = s.ask(CHASE)
        laid = f.read_bytes()
        order = chain(f)
        second = s.ask(CHASE)
        kept = f.read_bytes()
    finally:
        s.close()
    assert [first[t]["chain"] for t in ("0", "all")] == ["laid", "laid"], first["0"]
    assert [second[t]["chain"] for t in ("0", "all")] == ["kept", "kept"], second["0"]
    assert len(order) == WS // 64
    assert kept == laid, "the kept chain is not the one laid (or the second run changed bytes)"
    for key in ("ops", "reads", "writes", "lat_n", "loop", "insn"):
        assert first["0"][key] == second["0"][key], (key, first["0"][key], second["0"][key])
    assert int(first["0"]["lat_n"]) == 8192 // 64
    assert digest(f) == before, "the kept chain was not written back when the runner ended"
    # a fresh runner lays the same cycle (its addresses in its own mapping)
    s = Served(f"target={f}", "allow_file=1", *CHASE.split())
    try:
        assert s.ask(CHASE)["0"]["chain"] == "laid"
        assert chain(f) == order, "a freshly laid chain differs from the kept one"
    finally:
        s.close()
    assert digest(f) == before


def test_a_run_that_meets_a_kept_chain_has_it_written_back_and_the_next_chase_lays_again() -> None:
    """The chain is kept across runs that stay off its lines (a store elsewhere in the target, the
    curves' probe beside a store thread in a region of its own at any mix and throttle), and laid
    again after a run that meets them (a store or a load over them, another chase on them)."""
    s = Served("target=dram", "dram_size=16M", *CHASE.split())
    seq = [
        (CHASE, "laid"),
        (CHASE, "kept"),
        ("op=store count=20000 window_offset=8M working_set=1M", None),  # off the chain's 2 MiB
        (CHASE, "kept"),
        ("op=store count=20000 window_offset=1M working_set=64K", None),  # on its lines
        (CHASE, "laid"),
        ("op=load count=20000 working_set=64K", None),  # a read run over them too
        (CHASE, "laid"),
        (CHASE.replace("count=8192", "count=8192 seed=2"), "laid"),  # another permutation, same lines
        (CHASE, "laid"),
        (CHASE.replace(f"working_set={WS}", "working_set=1M"), "laid"),  # another region
        (CHASE.replace(f"working_set={WS}", "working_set=1M"), "kept"),
    ]
    try:
        got = [(line, s.ask(line)["all"].get("chain")) for line, _ in seq]
    finally:
        s.close()
    assert [g for _, g in got] == [w for _, w in seq], got


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the probe and a load thread need two CPUs")
def test_the_curves_probe_keeps_its_chain_across_mixes_and_throttles() -> None:
    """pmemlab curves' points: the probe's chase (thread 0) beside a store thread in its own
    per-thread region, the mix and the delay varying point by point: one chain for all."""
    probe = "threads=2 probe=1 op=chase,store placement=per-thread pattern=rand access_size=64 working_set=4M " \
            "duration_ms=300 chase_batch=64"  # 20 ms: on a loaded host the probe thread may get no CPU in it
    s = Served("target=dram", "dram_size=16M", *probe.split())
    try:
        got = [s.ask(f"{probe} read_pct={mix} delay_ticks={d}") for mix, d in
               ((100, 0), (100, 1000), (50, 0), (0, 16), (0, 262144))]
    finally:
        s.close()
    assert [g["0"]["chain"] for g in got] == ["laid"] + ["kept"] * 4
    assert all("chain" not in g["1"] for g in got), "a store thread has no chain"
    # every point's probe either sampled its chain or, starved of its CPU for the window (the host
    # tests run at nice 19 beside two TCG guests: a fresh run's 300 ms point had no sample), did
    # fewer hops than one batch (chase_batch=64, a sample's hops): its counts agree either way
    assert all(int(g["0"]["lat_n"]) > 0 or int(g["0"]["ops"]) < 64 for g in got), \
        [(g["0"]["lat_n"], g["0"]["ops"]) for g in got]
    assert any(int(g["0"]["lat_n"]) > 0 for g in got), "the probe never ran its chain"


def test_every_kept_chain_is_written_back_when_the_runner_ends(tmp_path: Path) -> None:
    """Chains of several regions and keys, kept, replaced and written back in between (a load
    over one of them): the file holds other bytes while the runner keeps chains in it, and its
    own bytes again once the runner has ended (EOF: a sweep's end, a restart for another mapping)."""
    f, before = pool(tmp_path)
    s = Served(f"target={f}", "allow_file=1", *CHASE.split())
    other = CHASE.replace(f"working_set={WS}", f"window_offset={4 * MiB} working_set={MiB}")
    two = CHASE.replace("op=chase", "op=chase threads=2 placement=per-thread")
    try:
        assert s.ask(CHASE)["all"]["chain"] == "laid"
        assert s.ask(other)["all"]["chain"] == "laid"
        assert s.ask(CHASE)["all"]["chain"] == "kept"  # the other region's chain left it alone
        s.ask("op=load count=20000 working_set=1M")  # over the first chain: written back
        assert s.ask(other)["all"]["chain"] == "kept"
        assert s.ask(two)["all"]["chain"] == "laid"
        assert s.ask(two)["all"]["chain"] == "kept"
        assert digest(f) != before, "no chain kept in the file while the runner runs"
        for ws, offset in ((WS // 2, 0), (WS // 2, WS // 2), (MiB, 4 * MiB)):  # the three chains kept
            assert len(chain(f, ws, offset)) == ws // 64
    finally:
        s.close()
    assert digest(f) == before, "a kept chain was left in the file"


def test_a_runner_killed_leaves_its_kept_chain_in_a_file(tmp_path: Path) -> None:
    """What docs/userspace.md says of a killed runner: SIGKILL writes nothing back, so a file (a
    DAX file's medium) keeps the chain's pointers in its lines; DRAM goes with the process."""
    f, before = pool(tmp_path)
    s = Served(f"target={f}", "allow_file=1", *CHASE.split())
    try:
        s.ask(CHASE)
        assert s.r.proc is not None
        os.kill(s.r.proc.pid, signal.SIGKILL)
        s.r.proc.wait()
    finally:
        s.close()
    assert len(chain(f)) == WS // 64 and digest(f) != before


def test_the_one_shot_runner_lays_and_writes_back_every_chain(tmp_path: Path) -> None:
    """Without --serve nothing is kept: each run lays its chain (chain=laid) and leaves the file
    as it was."""
    f, before = pool(tmp_path)
    for _ in range(2):
        res = subprocess.run([str(RUNNER), f"target={f}", "allow_file=1", *CHASE.split()], capture_output=True,
                             text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        r = rows(res.stdout.splitlines())
        assert r["0"]["chain"] == r["all"]["chain"] == "laid"
        assert digest(f) == before


def test_the_chain_field_reaches_the_sweep_csv(tmp_path: Path) -> None:
    """The result's chain field flows as any result field: a column of the sweep's CSV, laid on
    the first repeat and kept on the next (one served runner), on the thread's row and `all`."""
    cfg = tmp_path / "s.toml"
    cfg.write_text("""[sweep]
name = "chains"
repeats = 3

[base]
mode = "latency"
op = "chase"
threads = 1
access_size = 64
working_set = "2M"
count = 4096
chase_batch = 64
""")
    env = {**os.environ, "PYTHONPATH": str(TOP / "userspace")}
    env.pop("PMEMLAB_RUNNER_ONESHOT", None)
    res = subprocess.run([sys.executable, "-m", "pmemlab", "sweep", str(cfg), "--backend", "user", "--set",
                          "target=dram", "--set", "dram_size=16M", "-o", str(tmp_path / "s.csv"), "--fresh",
                          "--no-progress"], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    df = pd.read_csv(tmp_path / "s.csv")
    for thread in ("0", "all"):
        got = df[df["thread"].astype(str) == thread].sort_values("repeat")["chain"].tolist()
        assert got == ["laid", "kept", "kept"], (thread, got)
