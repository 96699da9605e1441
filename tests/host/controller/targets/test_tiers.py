"""A DRAM target over several NUMA nodes in weighted round robin (dram_nodes, dram_weights) and
`pmemlab tier-bw`, on the host:

- the load parameters are judged once, in the shared core (core/tier.c, through libpltest.so):
  every malformed or contradictory value refused with a reason naming the parameter, and the
  runner refuses with the very same reason;
- the round robin: which node each page goes to, and how many pages each node gets, against an
  independent model; every stripe of w0 + w1 + ... pages holds w_i pages of node i, so the pages
  of a node are within one stripe's share of the ratio;
- the check of a placement: exact placements pass whatever the order inside a stripe and wherever
  the round robin starts (the kernel's weighted interleave), one page off or a page elsewhere
  fails, with the count and the bytes per node in the reason;
- the user backend on this host (one node): the weights of one node are the plain target;
- `pmemlab tier-bw` on the fake module (a CPU-less second node; bandwidth that depends on the
  placement): a target per ratio, the table with the best ratio marked and the gain over DRAM
  alone, --json, -o into a sweep CSV whose rows carry the placement and whose figure renders;
  its bad options are one line and exit code 2.

The guest tests (tests/guest/test_tiers.py) place real pages on a CPU-less node.
"""
from __future__ import annotations

import ctypes
import json
import math
import random
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from fake_pmemlab import make_fake, placement
from oneliner_bed import fake_module_bed

import pmemlab.cli as cli
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab.analysis import tiers
from pmemlab.targets import tiers as tier_sweep
from pmemlab.errors import ConfigError
from pmemlab.targets.spec import Substitutes, TargetLoad, derived_label
from testlib import TOP

LIB = TOP / "userspace" / "runner" / "libpltest.so"
RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
MiB = 1 << 20


@pytest.fixture(scope="module")
def lib() -> ctypes.CDLL:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    so = ctypes.CDLL(str(LIB))
    so.pl_test_tier_parse.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p,
                                      ctypes.c_size_t]
    so.pl_test_tier_layout.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64,
                                       ctypes.POINTER(ctypes.c_uint), ctypes.POINTER(ctypes.c_uint64)]
    so.pl_test_tally.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_uint64, ctypes.POINTER(ctypes.c_uint64),
                                 ctypes.POINTER(ctypes.c_int), ctypes.c_uint, ctypes.c_char_p, ctypes.c_size_t,
                                 ctypes.c_char_p, ctypes.c_size_t]
    return so


def parse(lib: ctypes.CDLL, nodes: str | None, weights: str | None, node: int = -1) -> tuple[int, str]:
    out = ctypes.create_string_buffer(256)
    rc = lib.pl_test_tier_parse(nodes.encode() if nodes is not None else None,
                                weights.encode() if weights is not None else None, node, out, 256)
    return rc, out.value.decode()


def layout(lib: ctypes.CDLL, nodes: str, weights: str, units: int) -> tuple[list[int], list[int]]:
    idx = (ctypes.c_uint * max(units, 1))()
    per = (ctypes.c_uint64 * 16)()
    assert lib.pl_test_tier_layout(nodes.encode(), weights.encode(), units, idx, per) == 0
    return list(idx[:units]), list(per[:len(nodes.split(","))])


def tally(lib: ctypes.CDLL, nodes: str, weights: str, unit: int, ranges: list[tuple[int, int]]) -> tuple[int, str, str]:
    n = len(ranges)
    lens = (ctypes.c_uint64 * max(n, 1))(*[r[0] for r in ranges])
    where = (ctypes.c_int * max(n, 1))(*[r[1] for r in ranges])
    why, found = ctypes.create_string_buffer(512), ctypes.create_string_buffer(512)
    rc = lib.pl_test_tally(nodes.encode(), weights.encode(), unit, lens, where, n, why, 512, found, 512)
    return rc, why.value.decode(), found.value.decode()


# ---- the load parameters --------------------------------------------------------------------------
GOOD = [
    ("0,1", "3,1", -1, "0,1 3,1 4"),
    ("0,1", None, -1, "0,1 1,1 2"),
    ("0,1", "", -1, "0,1 1,1 2"),
    ("2,0", "1,0", -1, "2,0 1,0 1"),
    ("1", "7", -1, "1 7 7"),
    (None, None, 3, "3 1 1"),
    ("", "", -1, "-1 1 1"),  # the plain target on the loading CPU's node
    (",".join(map(str, range(16))), ",".join(["255"] * 16), -1, f"{','.join(map(str, range(16)))} "
                                                                 f"{','.join(['255'] * 16)} {255 * 16}"),
    ("1023,0x1", "0,1", -1, "1023,1 0,1 1"),
]
BAD = [
    ("", "3,1", -1, "dram_weights: needs dram_nodes"),
    ("0,1", "3", -1, "dram_weights: 1 weight for 2 nodes"),
    ("0,1", "3,1,1", -1, "dram_weights: 3 weights for 2 nodes"),
    ("0,0", "", -1, "dram_nodes: node 0 is listed twice"),
    ("0,1", "0,0", -1, "dram_weights: every weight is 0"),
    ("0,1", "256,1", -1, "dram_weights: '256' is not a number in 0..255"),
    ("0,1024", "", -1, "dram_nodes: '1024' is not a number in 0..1023"),
    ("0,-1", "", -1, "dram_nodes: '-1' is not a number in 0..1023"),
    ("0,,1", "", -1, "dram_nodes: '0,,1' has an empty item"),
    ("0,", "", -1, "dram_nodes: '0,' has an empty item"),
    (",", "", -1, "dram_nodes: ',' has an empty item"),
    ("x", "", -1, "dram_nodes: 'x' is not a number"),
    ("0 ,1", "", -1, "dram_nodes: '0 ' is not a number"),
    ("0,1", "1,a", -1, "dram_weights: 'a' is not a number"),
    ("0,1", "3,1", 0, "dram_nodes: give dram_nodes or dram_node, not both"),
    (None, None, -2, "dram_node: -2 is not -1"),
    (None, None, 1024, "dram_node: 1024 is not -1"),
    (",".join(map(str, range(17))), None, -1, "dram_nodes: more than 16 nodes"),
]


@pytest.mark.parametrize("nodes,weights,node,want", GOOD)
def test_load_parameters_taken(lib, nodes, weights, node, want) -> None:
    assert parse(lib, nodes, weights, node) == (0, want)


@pytest.mark.parametrize("nodes,weights,node,reason", BAD)
def test_load_parameters_refused_with_a_reason(lib, nodes, weights, node, reason) -> None:
    rc, why = parse(lib, nodes, weights, node)
    assert rc == -22 and why.startswith(reason), why
    assert "\n" not in why


def test_the_runner_refuses_with_the_cores_reason(lib) -> None:
    """One rule in one place: pmemlab-run's reason for every bad value is the core's, word for word."""
    for nodes, weights, node, _ in BAD:
        if node not in (-1, 0):
            continue  # dram_node's own range is the runner's option parsing (dram_node=-2 never parses)
        args = [str(RUNNER), "--facts", "target=dram", "dram_size=4M"]
        args += [f"dram_nodes={nodes}"] if nodes is not None else []
        args += [f"dram_weights={weights}"] if weights is not None else []
        args += ["dram_node=0"] if node == 0 else []
        res = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert res.returncode == 2, (args, res.stdout)
        assert res.stderr.strip() == f"pmemlab-run: EINVAL: {parse(lib, nodes, weights, node)[1]}", args


# ---- the round robin ------------------------------------------------------------------------------
def model(weights: list[int], units: int) -> list[int]:
    """Independent: a stripe is the node indexes repeated by weight, in order, again and again."""
    stripe = [i for i, w in enumerate(weights) for _ in range(w)]
    return [stripe[u % len(stripe)] for u in range(units)]


@pytest.mark.parametrize("weights", ["3,1", "1,3", "1,1", "9,1", "0,1", "1,0", "2,0,5", "255,1", "1,2,3,4"])
def test_round_robin_against_a_model(lib, weights: str) -> None:
    ws = [int(w) for w in weights.split(",")]
    nodes = ",".join(str(i) for i in range(len(ws)))
    for units in (0, 1, 2, 3, 4, 5, 7, 8, 97, 128, 1000):
        idx, per = layout(lib, nodes, weights, units)
        assert idx == model(ws, units), (weights, units)
        assert per == [idx.count(i) for i in range(len(ws))]
        total = sum(ws)
        for i, w in enumerate(ws):
            # within one stripe's share of the ratio: a stripe holds w pages of node i
            assert abs(per[i] - units * w / total) <= w, (weights, units, per)
            for s in range(units // total):
                assert idx[s * total:(s + 1) * total].count(i) == w


def test_round_robin_of_a_3_to_1_target_page_by_page(lib) -> None:
    idx, per = layout(lib, "0,1", "3,1", 10)
    assert idx == [0, 0, 0, 1, 0, 0, 0, 1, 0, 0] and per == [8, 2]
    idx, per = layout(lib, "0,1", "1,3", 10)
    assert idx == [0, 1, 1, 1, 0, 1, 1, 1, 0, 1] and per == [3, 7]


# ---- the check of a placement ---------------------------------------------------------------------
def pages(sequence: list[int], unit: int) -> list[tuple[int, int]]:
    return [(unit, n) for n in sequence]


def test_an_exact_placement_passes(lib) -> None:
    unit = 2 * MiB
    seq = [[0, 1][i] for i in model([3, 1], 64)]
    assert tally(lib, "0,1", "3,1", unit, pages(seq, unit)) == (0, "", f"0:{48 * unit},1:{16 * unit}")
    # whatever the order inside each stripe and wherever the round robin starts (the kernel's
    # weighted interleave goes by node number and by virtual address): each stripe holds 3 + 1
    rotated = [[1, 0, 0, 0][(u + 2) % 4] for u in range(64)]
    assert tally(lib, "1,0", "1,3", unit, pages(rotated, unit))[0] == 0
    # a partial last stripe may hold fewer of each
    assert tally(lib, "0,1", "3,1", 4096, pages([0, 0, 0, 1, 0, 1], 4096)) == (0, "", "0:16384,1:8192")


def test_one_page_off_fails_with_where_and_how_many(lib) -> None:
    unit = 4096
    seq = [[0, 1][i] for i in model([3, 1], 40)]
    seq[21] = 1  # one page of stripe 5 on node 1 instead of node 0
    rc, why, found = tally(lib, "0,1", "3,1", unit, pages(seq, unit))
    assert rc == -12 and found == f"0:{29 * unit},1:{11 * unit}"
    assert why.startswith("1 of 10 stripes of 4 pages do not hold 3,1 pages of nodes 0,1 (the first at byte "
                          f"{20 * unit})"), why
    assert why.endswith(f"bytes per node 0:{29 * unit},1:{11 * unit}")


def test_pages_elsewhere_fail_and_are_named(lib) -> None:
    unit = 2 * MiB
    seq = [[0, 1][i] for i in model([1, 1], 8)]
    ranges = pages(seq, unit)
    ranges[3] = (unit - 4096, 1)  # one 4 KiB page of the unit is on node 2: a 2 MiB unit split
    ranges.insert(4, (4096, 2))
    rc, why, found = tally(lib, "0,1", "1,1", unit, ranges)
    assert rc == -12 and found == f"0:{4 * unit},1:{4 * unit - 4096},other:4096", found
    assert why.startswith("1 of 4 stripes of 2 pages"), why
    # a plain target (one node): the bytes not on it, in KiB
    rc, why, found = tally(lib, "5", "1", 4096, [(4096 * 10, 5), (8192, 3), (4096, -1)])
    assert rc == -12 and why.startswith("12 of 52 KiB are not on node 5; bytes per node 5:40960,other:12288"), why


def test_a_random_placement_is_judged_as_a_model_says(lib) -> None:
    """Random placements against the rule itself: pass exactly when every whole stripe holds the
    weights and the partial one at most that."""
    rng = random.Random(7)
    for _ in range(300):
        ws = [rng.randint(0, 3) for _ in range(rng.randint(1, 3))]
        if not sum(ws):
            ws[0] = 1
        units = rng.randint(1, 30)
        seq = model(ws, units)
        if rng.random() < 0.5:  # shuffle inside each stripe: still right
            total = sum(ws)
            seq = [x for s in range(0, units, total) for x in rng.sample(seq[s:s + total], len(seq[s:s + total]))]
        if rng.random() < 0.5:
            seq[rng.randrange(units)] = rng.randrange(len(ws) + 1)  # maybe a node not in the list
        total = sum(ws)
        ok = all(seq[s:s + total].count(i) == w if s + total <= units else seq[s:s + total].count(i) <= w
                 for s in range(0, units, total) for i, w in enumerate(ws)) and max(seq) < len(ws)
        nodes = ",".join(str(i) for i in range(len(ws)))
        rc, _, _ = tally(lib, nodes, ",".join(map(str, ws)), 4096, pages(seq, 4096))
        assert (rc == 0) == ok, (ws, seq)


# ---- the user backend on this host ----------------------------------------------------------------
def facts(*args: str) -> dict[str, str]:
    res = subprocess.run([str(RUNNER), "--facts", "target=dram", "dram_size=8M", "dram_pages=4k", *args],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return dict(ln.split(" ", 2)[1:] for ln in res.stdout.splitlines() if ln.startswith("#fact "))


def test_the_weights_of_one_node_are_the_plain_target() -> None:
    plain = facts("dram_node=0")
    for extra in (["dram_nodes=0"], ["dram_nodes=0", "dram_weights=5"]):
        one = facts(*extra)
        differ = {k for k in plain if plain[k] != one.get(k)} - {"tsc_khz"}
        assert differ <= {"target_weights"}, (plain, one)
        assert one["target_placement"] == "node" and one["target_node_bytes"] == "0:4194304"
    assert facts("dram_nodes=0", "dram_weights=5")["target_weights"] == "5"
    # a run on it: the same result fields as the plain target's
    res = subprocess.run([str(RUNNER), "target=dram", "dram_size=8M", "dram_nodes=0", "dram_weights=3",
                          "op=load", "count=10000"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "#fact target_node_bytes 0:8388608" in res.stdout, res.stderr
    assert "#state done" in res.stdout


def test_nodes_this_host_lacks_and_files_are_refused(tmp_path) -> None:
    nodes = sorted(int(p.name[4:]) for p in Path("/sys/devices/system/node").glob("node[0-9]*"))
    missing = max(nodes) + 1
    res = subprocess.run([str(RUNNER), "--facts", "target=dram", f"dram_nodes=0,{missing}"], capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip() == f"pmemlab-run: EINVAL: dram_nodes: node {missing}: no such NUMA node with memory"
    res = subprocess.run([str(RUNNER), "--facts", f"target={tmp_path / 'f'}", "size=4096", "dram_nodes=0"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "dram_nodes: only for target=dram" in res.stderr


# ---- the controller's side of a target over nodes -------------------------------------------------
def test_labels_and_nodes_of_a_weighted_load() -> None:
    assert derived_label((("target", "dram"), ("dram_nodes", "0,1"), ("dram_weights", "3,1"))) == \
        "dram-nodes0.1-w3.1"
    subs = Substitutes(memory_nodes=frozenset({0, 1}))
    ok = TargetLoad("t", (("target", "dram"), ("dram_nodes", "0,1")))
    assert subs.resolve(ok).unavailable == ""
    gone = subs.resolve(TargetLoad("t", (("target", "dram"), ("dram_nodes", "0,2"), ("dram_weights", "1,1"))))
    assert gone.unavailable == "no NUMA node 2 with memory on this machine (dram_nodes=0,2)"
    # the CPU-less node as configs/README writes it
    cxl = TargetLoad("t", (("target", "dram"), ("dram_nodes", "0,@CPULESS_NODE@"), ("dram_weights", "3,1")))
    assert Substitutes(cpuless_node="2", memory_nodes=frozenset({0, 2})).resolve(cxl).text() == \
        "target=dram dram_nodes=0,2 dram_weights=3,1"
    assert Substitutes(memory_nodes=frozenset({0})).resolve(cxl).unavailable.startswith("no CPU-less NUMA node")


def test_info_of_a_target_over_two_nodes(tmp_path, monkeypatch) -> None:
    """`pmemlab info` (and so every row's conditions) reads the placement the module reports."""
    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", "not installed"))
    fake = make_fake(tmp_path)
    fake.reload({"target": "dram", "dram_nodes": "0,1", "dram_weights": "3,1", "dram_size": "64M"})
    info = machine.gather_info(fake.module())
    t = info["target"]
    assert (t["nodes"], t["weights"], t["placement"]) == ("0,1", "3,1", "module")
    assert t["node_bytes"] == f"0:{48 * MiB},1:{16 * MiB}"
    cond = machine.conditions(info)
    assert {k: cond[k] for k in ("target_nodes", "target_weights", "target_node_bytes", "target_placement")} == {
        "target_nodes": "0,1", "target_weights": "3,1", "target_node_bytes": f"0:{48 * MiB},1:{16 * MiB}",
        "target_placement": "module"}
    text = machine.format_info(info)
    assert re.search(r"^  nodes \(weights\) +0,1 \(3,1\), placed by module$", text, re.M), text
    assert re.search(rf"^  bytes per node +0:{48 * MiB},1:{16 * MiB}$", text, re.M)
    # and each run's rows, read after the run: the load it ran on
    out = fake.module().run({"op": "load", "duration_ms": 2})
    assert out.conditions == {"target_nodes": "0,1", "target_weights": "3,1",
                              "target_node_bytes": f"0:{48 * MiB},1:{16 * MiB}", "target_placement": "module"}


def test_weights_option() -> None:
    assert [r.text for r in tier_sweep.parse_weights(tier_sweep.DEFAULT_WEIGHTS)] == ["1:0", "9:1", "4:1", "3:1", "2:1",
                                                                             "1:1", "0:1"]
    r = tier_sweep.parse_weights("3:1")[0]
    assert (r.dram_pct, r.label) == (75.0, "dram3-cxl1")
    for bad, what in (("3:1,6:2", "the ratio of an earlier one"), ("0:0", "none above 0"), ("256:1", "above 255"),
                      ("3-1", "is not DRAM:CXL"), ("", "is not DRAM:CXL")):
        with pytest.raises(ConfigError, match=what):
            tier_sweep.parse_weights(bad)
    loads = tier_sweep.ratio_loads(tier_sweep.parse_weights("1:0,3:1"), 0, 2, "64M", "4k")
    assert [(t.label, t.text()) for t in loads] == [
        ("dram1-cxl0", "target=dram dram_nodes=0,2 dram_weights=1,0 dram_size=64M dram_pages=4k"),
        ("dram3-cxl1", "target=dram dram_nodes=0,2 dram_weights=3,1 dram_size=64M dram_pages=4k")]


def test_node_pair() -> None:
    nodes = [{"node": 0, "cpus": "0-1", "mem_total_kib": 1}, {"node": 1, "cpus": "2", "mem_total_kib": 1},
             {"node": 2, "cpus": "", "mem_total_kib": 1}, {"node": 3, "cpus": "", "mem_total_kib": 0}]
    assert tier_sweep.node_pair(nodes, None, None) == (0, 2)
    assert tier_sweep.node_pair(nodes, 1, 0) == (1, 0)
    for dram, cxl, what in ((None, 3, "--cxl-node 3: no NUMA node 3 with memory"), (0, 0, "both 0")):
        with pytest.raises(ConfigError, match=what):
            tier_sweep.node_pair(nodes, dram, cxl)
    with pytest.raises(ConfigError, match="no NUMA node with memory and no CPUs"):
        tier_sweep.node_pair(nodes[:2], None, None)


def rows_of(cells: dict[tuple[str, str], list[float]], nodes: str = "0,1") -> pd.DataFrame:
    """Aggregate rows of tier-bw runs: (ratio, mix) -> the bandwidth of each run."""
    out = []
    for (ratio, mix), values in cells.items():
        d, c = (int(v) for v in ratio.split(":"))
        _, op, pct = next(m for m in tiers.MIXES if m[0] == mix)
        place = placement({"dram_nodes": nodes, "dram_weights": f"{d},{c}", "dram_size": "8M"})
        for bw in values:
            out.append({"thread": "all", "status": "ok", "op": op, "read_pct": pct, "bw_gbps": bw,
                        "target_label": f"dram{d}-cxl{c}", **place})
    out.append({"thread": "all", "status": "error", "op": "load", "read_pct": 0, "bw_gbps": 99.0,
                "target_label": "dram1-cxl1", **placement({"dram_nodes": nodes, "dram_weights": "1,1"})})
    return pd.DataFrame(out)


def test_summary_best_and_gain_over_dram_alone() -> None:
    rows = rows_of({("1:0", "load"): [10.0, 10.2, 9.8], ("3:1", "load"): [12.0, 12.1, 11.9],
                    ("1:1", "load"): [10.1, 10.6, 9.6], ("1:0", "2:1 load:store"): [8.0, 8.0],
                    ("1:1", "2:1 load:store"): [9.0, 9.4]})
    stats = tiers.summarize(rows, tier_sweep.parse_weights("1:0,3:1,1:1"))
    by = {(s.ratio.text, s.mix): s for s in stats}
    load = [by[(r, "load")] for r in ("1:0", "3:1", "1:1")]
    assert [s.best for s in load] == [False, True, False]
    assert load[1].gain_pct == pytest.approx(20.0) and load[1].beats_dram is True
    assert load[2].gain_pct == pytest.approx(1.0) and load[2].beats_dram is False, "CIs overlap"
    assert load[0].runs == 3 and load[2].runs == 3, "the error row is no run"
    assert load[1].dram_pct_placed == 75.0 and load[0].dram_pct_placed == 100.0
    mix = [by[(r, "2:1 load:store")] for r in ("1:0", "3:1", "1:1")]
    assert mix[1].runs == 0 and math.isnan(mix[1].mean) and not mix[1].best and mix[2].best
    text = tiers.best_text(stats)
    assert text["load"] == "3:1: 12 GB/s, +20.0 % over DRAM alone (95 % CIs apart)"
    # two runs: Student's t of 1 degree of freedom makes a wide interval
    assert text["2:1 load:store"] == "1:1: 9.2 GB/s, +15.0 % over DRAM alone (within the 95 % CIs of DRAM alone)"
    # without 1:0 there is no gain to give
    stats = tiers.summarize(rows, tier_sweep.parse_weights("3:1,1:1"))
    assert all(math.isnan(s.gain_pct) for s in stats) and tiers.best_text(stats)["load"] == "3:1: 12 GB/s"


# ---- pmemlab tier-bw on the fake module -----------------------------------------------------------
NODES = {"nodes": [{"node": 0, "cpus": "0-1", "mem_total_kib": 1 << 20, "distances": [10, 20]},
                   {"node": 1, "cpus": "", "mem_total_kib": 1 << 20, "distances": [20, 10]}], "source": "fixture"}


def peaked(load: dict[str, str]) -> float:
    """A memory whose bandwidth peaks at 3:1 (75 % of the pages on DRAM)."""
    d, c = (int(w) for w in load.get("dram_weights", "1,0").split(","))
    return 1.0 + 0.5 * (1 - abs(d / (d + c) - 0.75) * 4) if d else 0.6


@pytest.fixture
def tier_bed(tmp_path, monkeypatch):
    fake = fake_module_bed(tmp_path, monkeypatch, cpu_features="sse2 avx avx2 clflush clflushopt rdtscp",
                           bw_of_load=peaked)
    monkeypatch.setattr(machine, "numa_info", lambda host: NODES)
    return fake


def test_tier_bw_table(tier_bed, capsys) -> None:
    fake = tier_bed
    assert cli.main(["tier-bw", "--backend", "kernel", "--duration-ms", "5"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("pmemlab tier-bw (kernel backend") and lines[0].endswith("DRAM node 0, CXL node 1")
    assert "all 2 thread(s) on node 0 (CPUs 0-1) together: mean over 3 run(s) of 5 ms and its 95 % CI" in lines[1]
    assert "whose 2M pages go to node 0 and node 1 in weighted round robin" in lines[1]
    header = lines[3]
    assert header.split("  ")[0] == "DRAM:CXL" and "load GB/s" in header and "2:1 load:store GB/s" in header
    cells = [re.split(r"\s{2,}", ln.strip()) for ln in lines[4:11]]
    rows = {c[0]: c for c in cells}
    assert list(rows) == ["1:0", "9:1", "4:1", "3:1", "2:1", "1:1", "0:1"] and {len(c) for c in cells} == {8}
    assert [rows[r][1] for r in rows] == ["100.0", "90.62", "80.47", "75.00", "67.19", "50.00", "0.000"], \
        "DRAM % placed, from the rows' node bytes (256 MiB of 2 MiB pages: 128 units)"
    assert rows["3:1"][2].endswith(" *") and rows["3:1"][5].endswith(" *"), "the best ratio of each column is marked"
    assert sum(cell.endswith(" *") for c in cells for cell in c) == 2
    assert rows["1:0"][4] == "ref" and rows["1:0"][7] == "ref"
    assert re.fullmatch(r"\+\d+\.\d %", rows["3:1"][4]) and rows["0:1"][4].startswith("-")
    assert any(ln.startswith("best for load: 3:1: ") and "% over DRAM alone" in ln for ln in lines)
    assert [a.split(" ", 1)[1] for a in fake.adds] == [f"dram dram_nodes=0,1 dram_weights={d},{c} dram_size=256M"
                                                       for d, c in ((1, 0), (9, 1), (4, 1), (3, 1), (2, 1), (1, 1), (0, 1))]
    assert fake.removes == [a.split()[0] for a in reversed(fake.adds)], "a named target per ratio, removed after"
    assert {(r["threads"], r["cpus"], r["op"], r["read_pct"]) for r in fake.runs} == {
        ("2", "0-1", "load", "0"), ("2", "0-1", "store", "67")}
    assert len(fake.runs) == 7 * 2 * 3


def test_tier_bw_json_and_csv(tier_bed, capsys, tmp_path) -> None:
    out = tmp_path / "res" / "tier-bw.csv"
    assert cli.main(["tier-bw", "--backend", "kernel", "--duration-ms", "5", "--repeats", "2", "--weights",
                     "1:0,3:1,0:1", "--dram-pages", "4k", "--dram-size", "64M", "--json", "-o", str(out)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "tier-bw" and doc["dram_node"] == 0 and doc["cxl_node"] == 1
    assert doc["best"] == {"load": "3:1", "2:1 load:store": "3:1"}
    assert [(r["ratio"], r["mix"]) for r in doc["rows"]] == [(r, m) for m in ("load", "2:1 load:store")
                                                             for r in ("1:0", "3:1", "0:1")]
    best = next(r for r in doc["rows"] if r["best"] and r["mix"] == "load")
    assert best["runs"] == 2 and best["gain_over_dram_pct"] > 0 and best["dram_pct_placed"] == 75.0
    df = pd.read_csv(out, dtype={"thread": str, "target_nodes": str, "target_weights": str})
    agg = df[df["thread"] == "all"]
    assert set(agg["target_label"]) == {"dram1-cxl0", "dram3-cxl1", "dram0-cxl1"}
    three = agg[agg["target_label"] == "dram3-cxl1"].iloc[0]
    assert (three["target_nodes"], three["target_weights"], three["target_placement"]) == ("0,1", "3,1", "module")
    assert three["target_node_bytes"] == f"0:{48 * MiB},1:{16 * MiB}" and int(three["target_page_size"]) == 4096
    side = json.loads(out.with_suffix(".json").read_text())
    assert side["targets"]["dram3-cxl1"]["load"] == \
        "target=dram dram_nodes=0,1 dram_weights=3,1 dram_size=64M dram_pages=4k"
    assert "target_node_bytes" in side["columns"]
    assert cli.main(["plot", str(out), "-o", str(tmp_path / "plots"), "--format", "png"]) == 0
    assert (tmp_path / "plots" / "tier-bw.png").stat().st_size > 10_000
    check_figure(out, doc)


def check_figure(csv: Path, doc: dict) -> None:
    """The recipe draws the table's numbers: a line per mix at x = DRAM % asked, y = the mean and its
    95 % CI as the error bar, on an axis from 0; a star on each mix's best ratio, labelled with its
    gain; the caption names the best."""
    from matplotlib.container import ErrorbarContainer

    from pmemlab.analysis.resultset import load_results
    from pmemlab.plots.recipes import COMMAND_RECIPES
    from pmemlab.plots.style import caption_of

    fig = COMMAND_RECIPES["tier-bw"](load_results([csv]))
    (ax,) = [a for a in fig.axes if a.get_label() != "<colorbar>"]
    assert ax.get_ylabel() == "Bandwidth (GB/s)" and ax.get_ylim()[0] == 0
    drawn = {c.get_label(): c for c in ax.containers if isinstance(c, ErrorbarContainer)}
    assert list(drawn) == ["load", "2:1 load:store"]
    for mix, container in drawn.items():
        want = sorted(((r["dram_pct"], r["bw_gbps_mean"], r["bw_gbps_hi"] - r["bw_gbps_lo"]) for r in doc["rows"]
                       if r["mix"] == mix))
        x, y = container.lines[0].get_xdata(), container.lines[0].get_ydata()
        assert list(x) == [w[0] for w in want] and list(y) == pytest.approx([w[1] for w in want], rel=1e-9)
        bar = container.lines[2][0].get_segments()  # the error bars: the figures' spread (range below 3 runs)
        got = sorted((seg[0][0], seg[1][1] - seg[0][1]) for seg in bar)
        assert [g[0] for g in got] == [w[0] for w in want]
        assert [g[1] for g in got] == pytest.approx([w[2] for w in want], rel=1e-9)
    stars = [ln for ln in ax.lines if ln.get_marker() == "*"]
    got = sorted((float(ln.get_xdata()[0]), float(ln.get_ydata()[0])) for ln in stars)
    want = sorted((r["dram_pct"], r["bw_gbps_mean"]) for r in doc["rows"] if r["best"])
    assert [g[0] for g in got] == [w[0] for w in want]
    assert [g[1] for g in got] == pytest.approx([w[1] for w in want], rel=1e-9)
    labels = {t.get_text() for t in ax.texts}
    assert {f"{r['ratio']} {r['gain_over_dram_pct']:+.1f} %" for r in doc["rows"] if r["best"]} <= labels
    # a tick at each ratio, DRAM alone on the left
    assert [t.get_text() for t in ax.get_xticklabels() if t.get_text()] == ["0:1", "3:1", "1:0"]
    assert ax.xaxis_inverted()
    assert "best for load: 3:1" in caption_of(fig)


def test_tier_bw_bad_options_are_one_line(tier_bed, capsys, monkeypatch) -> None:
    fake = tier_bed
    for argv, what in ((["--weights", "3:1,6:2"], "the ratio of an earlier one"),
                       (["--cxl-node", "0"], "--dram-node and --cxl-node are both 0"),
                       (["--threads", "3"], "--threads 3: node 0 has 2 CPU(s)"),
                       (["--dram-node", "7"], "--dram-node 7: no NUMA node 7 with memory")):
        assert cli.main(["tier-bw", "--backend", "kernel", "--duration-ms", "5", *argv]) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and what in err and "Traceback" not in err, err
    monkeypatch.setattr(machine, "numa_info", lambda host: {"nodes": NODES["nodes"][:1], "source": "fixture"})
    assert cli.main(["tier-bw", "--backend", "kernel"]) == 2
    assert "no NUMA node with memory and no CPUs" in capsys.readouterr().err
    assert not fake.runs
