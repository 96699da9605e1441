"""What a chase writes (chase_write, issue 35 point 1): a plain chase writes nothing a run leaves
behind; a read-after-write chase (raw: write passes of movnti over the chain's lines, then the
chase) and a store-chase (each hop also stores to its line) write exactly their chain's lines, 8
bytes of non-zero, varying data at offset 8 beside the pointer, and nothing else inside or
outside the window; the pointers are written back as for every chase. The byte oracle is the
user backend's, on a file of random bytes (the module's: tests/guest/test_chase.py). A kept chain
in the served runner (userspace/runner/chains.c) stays right under them: chase_write is no part
of its key, the pointers it holds are the laid ones, a store-chase over a kept chain leaves the
bytes a laid one leaves."""
from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest

from pmemlab.backends.served import ServedRunner

from testlib import TOP

RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
KiB, MiB = 1 << 10, 1 << 20
SIZE = 4 * MiB              # the file
OFF, WS = 1 * MiB, 1 * MiB  # the window inside it: bytes outside must not change


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr


def run(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([str(RUNNER), *args], capture_output=True, text=True, timeout=120)
    if check:
        assert res.returncode == 0, res.stderr
    return res


def threads(out: str) -> list[dict[str, str]]:
    return [dict(f.split("=", 1) for f in ln.split()) for ln in out.splitlines()
            if ln.startswith("thread=") and not ln.startswith("thread=all")]


def pool(tmp_path: Path) -> Path:
    f = tmp_path / "pool"
    f.write_bytes(np.random.default_rng(11).integers(0, 256, SIZE, dtype=np.uint8).tobytes())
    return f


def changed_words(before: bytes, after: bytes) -> dict[int, int]:
    """file offset -> the new value of every 8-byte word that changed."""
    a = np.frombuffer(before, dtype=np.uint64)
    b = np.frombuffer(after, dtype=np.uint64)
    idx = np.nonzero(a != b)[0]
    return {int(i) * 8: int(b[i]) for i in idx}


# (extra parameters, lines of the chain per thread's region, threads)
CASES = {
    "seq-64": (["access_size=64", "pattern=seq"], WS // 64, 1),
    "rand-256": (["access_size=256", "pattern=rand"], WS // 256, 1),
    "page-2threads": (["access_size=4096", "chase_page=1", "threads=2", "placement=per-thread"],
                      WS // 2 // 4096, 2),
}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("cw", ["none", "store", "raw"])
def test_a_chase_writes_exactly_its_chains_lines_and_only_when_asked(tmp_path: Path, cw: str, case: str) -> None:
    extra, lines, nthreads = CASES[case]
    f = pool(tmp_path)
    before = f.read_bytes()
    batch = 64 if lines >= 64 else 16
    count = 2 * lines  # two cycles: a store-chase visits every line
    res = run(f"target={f}", "allow_file=1", "op=chase", "mode=latency", f"window_offset={OFF}",
              f"working_set={WS}", f"count={count}", f"chase_batch={batch}", f"chase_write={cw}", *extra)
    after = f.read_bytes()
    rows = threads(res.stdout)
    assert len(rows) == nthreads
    loop = {"none": "pl_chase_loop", "store": "pl_chase_store_loop", "raw": "pl_chase_raw_loop"}[cw]
    insn = {"none": "mov", "store": "mov+mov", "raw": "movnti+mov"}[cw]
    for r in rows:
        ops = int(r["ops"])
        assert r["loop"] == loop and r["insn"] == insn, r
        assert ops == -(-count // batch) * batch and int(r["lat_n"]) == ops // batch, r
        # a store-chase's hop reads and writes: a write, as a copy's access; raw's passes are uncounted
        assert (int(r["reads"]), int(r["writes"])) == ((0, ops) if cw == "store" else (ops, 0)), r
    words = changed_words(before, after)
    if cw == "none":
        assert not words, f"a plain chase left {len(words)} words changed"
        return
    # only inside the window, only the word at offset 8 of a line, one line per slot of the chain
    assert all(OFF <= o < OFF + WS for o in words), "bytes outside the window changed"
    assert all(o % 64 == 8 for o in words), sorted(o % 64 for o in words if o % 64 != 8)[:5]
    assert len(words) == lines * nthreads, (len(words), lines * nthreads)
    slot = {"seq-64": 64, "rand-256": 256, "page-2threads": 4096}[case]
    assert len({(o - OFF) // slot for o in words}) == lines * nthreads, "two written lines in one slot"
    if case != "page-2threads":
        assert all((o - OFF) % slot == 8 for o in words), "a written line not at its slot's start"
    else:
        assert len({o % 4096 for o in words}) > 8, "chase_page: the written lines sit at few offsets"
    # the store data: odd (so never zero), every word its own value
    vals = list(words.values())
    assert all(v & 1 for v in vals), "store data is odd, never zero"
    assert len(set(vals)) == len(vals), "the same data in two lines"


def test_a_raw_chase_needs_a_chain_of_a_batch_at_least(tmp_path: Path) -> None:
    """raw reads each line at most once after a write pass: a chain of fewer lines than a batch is
    refused, naming chase_batch (the validator, before anything maps)."""
    bad = run("target=dram", "dram_size=8M", "op=chase", "mode=latency", "working_set=4K", "chase_batch=256",
              "chase_write=raw", "count=1024", check=False)
    assert bad.returncode != 0 and "chase_batch" in bad.stderr and "64 lines" in bad.stderr, bad.stderr
    ok = run("target=dram", "dram_size=8M", "op=chase", "mode=latency", "working_set=4K", "chase_batch=64",
             "chase_write=raw", "count=1024")
    assert threads(ok.stdout)[0]["loop"] == "pl_chase_raw_loop"
    # a plain or store chase wraps its cycle within a batch as before
    for cw in ("none", "store"):
        run("target=dram", "dram_size=8M", "op=chase", "mode=latency", "working_set=4K", "chase_batch=256",
            f"chase_write={cw}", "count=1024")
    bad = run("target=dram", "dram_size=8M", "op=chase", "mode=latency", "chase_write=load", check=False)
    assert bad.returncode != 0 and "chase_write" in bad.stderr, bad.stderr


# two cycles of the 16384 lines: a store-chase writes every line
CHASE = f"op=chase mode=latency access_size=64 pattern=rand window_offset={OFF} working_set={WS} count=32768 " \
        "chase_batch=64"


def ask(s: ServedRunner, line: str) -> dict[str, str]:
    ans = s.ask(line, 120)
    assert ans.how == "end" and ans.lines and ans.lines[-1] == "#state done", (line, ans.lines[-3:], ans.stderr)
    return next(dict(f.split("=", 1) for f in ln.split()) for ln in ans.lines if ln.startswith("thread=0 "))


def test_a_kept_chain_under_store_and_raw_chases(tmp_path: Path) -> None:
    """One served runner: a store-chase lays the chain, a plain chase, a raw chase and a store-chase
    keep it (chase_write is no part of the key: they write offset 8, never the pointers); the
    store-chase over the kept chain leaves the file as the laid one left it, byte for byte (the
    same hops from the same line with the same data); at the end the pointers are written back and
    the data stays, at offset 8 of every line of the chain and nowhere else. The runner maps the
    file once, as for a plain chase: a chase's pre-fault never fills the target (check.c,
    pl_run_stores), so no byte outside the lines' data changes."""
    f = pool(tmp_path)
    before = f.read_bytes()
    store = f"{CHASE} chase_write=store"
    s = ServedRunner([str(RUNNER), f"target={f}", "allow_file=1", *CHASE.split(), "--serve"])
    assert s.start(120).how == "end"
    try:
        first = ask(s, store)
        laid = f.read_bytes()
        got = [ask(s, line)["chain"] for line in (CHASE, f"{CHASE} chase_write=raw", store)]
        kept = f.read_bytes()
    finally:
        s.close()
    assert first["chain"] == "laid" and got == ["kept", "kept", "kept"], (first["chain"], got)
    assert kept == laid, "a store-chase over the kept chain left other bytes than over the laid one"
    words = changed_words(before, f.read_bytes())
    assert set(words) == {OFF + k * 64 + 8 for k in range(WS // 64)}, "the data is not at offset 8 of each line"
    assert all(v & 1 for v in words.values())
