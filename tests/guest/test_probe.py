"""`pmemlab probe` end to end in the guest, function only: on the module over the NVDIMM, on the
user backend's DRAM, and with --cxl on the CXL node (the module's DRAM target there, and the user
backend's dram:NODE). Under TCG the numbers mean nothing: each card is judged on its structure
(the schema check, the keys docs/card.md documents, every inference marked as from emulation,
every line of the card inferred or undecided with why, a figure per inference, exit code 0), and
`--from DIR` must draw the same card again from the saved rows. A small budget: the later stages
are then `not measured`, which the card says. The guest has about 2.5 GiB: the guest's
MemAvailable is watched while each probe runs (the 2 MiB-page stage's target is a quarter of it
at most), and the 2 MiB-page stage runs alone on the user backend's DRAM below."""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import pmemlab.cli as cli
from pmemlab.analysis import card as C
from pmemlab.cli import probe as probe_cli

TOP = Path(__file__).resolve().parents[2]
BUDGET = "20s"
MiB = 1 << 20


def documented() -> tuple[set[str], set[str]]:
    """docs/card.md's keys of card.json (its table) and its lines (the figure names of -o DIR)."""
    text = (TOP / "docs" / "card.md").read_text()
    table = text[text.index("## card.json"):].split("\n\n")[1]
    keys = {k for row in table.splitlines()[2:] for k in re.findall(r"`(\w+)`", row.split("|")[1])}
    figures = next(line for line in text.split("\n- ") if line.startswith("`-o DIR`"))
    return keys, set(re.findall(r"`(\w+)\.png`", figures))


def mem_available() -> int:
    return int(re.search(r"MemAvailable:\s+(\d+) kB", Path("/proc/meminfo").read_text()).group(1)) << 10


@contextlib.contextmanager
def watched_memory() -> Iterator[dict[str, int]]:
    """MemAvailable before, at its least while the block runs (sampled every 0.2 s) and after."""
    seen = {"before": mem_available()}
    samples = [seen["before"]]
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.2):
            samples.append(mem_available())
    t = threading.Thread(target=sample, daemon=True)
    t.start()
    try:
        yield seen
    finally:
        done.set()
        t.join()
        seen.update(least=min(samples), after=mem_available())
        print(f"MemAvailable: {seen['before'] >> 20} MiB before, {seen['least'] >> 20} MiB at least, "
              f"{seen['after'] >> 20} MiB after")


def probe(tmp_path: Path, *args: str) -> tuple[dict, Path]:
    """The command in this process (a new Python takes 15-30 s to import pandas under TCG), as
    tests/guest/test_curves.py runs curves: its JSON card and its directory."""
    out = tmp_path / "card"
    buf, err = io.StringIO(), io.StringIO()
    with watched_memory() as mem, contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = cli.main(["probe", *args, "--budget", BUDGET, "-o", str(out), "--json"])
    print(f"$ pmemlab probe {' '.join(args)} --budget {BUDGET}\n{err.getvalue()}")
    assert code == 0, err.getvalue()
    # the probe's targets (the 2 MiB-page one a quarter of MemAvailable at most) are mapped one run
    # at a time and given back: the guest keeps memory, and has it again after
    assert mem["least"] > mem["before"] // 4, mem
    assert mem["after"] > mem["before"] * 3 // 4, mem
    return json.loads(buf.getvalue()), out


def assert_card(doc: dict, out: Path, backend: str, target: str) -> None:
    """The card's structure, as docs/card.md has it, and `--from DIR` drawing it again."""
    keys, lines = documented()
    assert C.validate(doc) == [] and set(doc) == keys, (C.validate(doc), sorted(set(doc) ^ keys))
    assert doc["emulated"] is True and doc["conditions"]["hypervisor"] == probe_cli.TCG
    assert doc["inferences"] and all(i["emulated"] is True for i in doc["inferences"]), doc["inferences"]
    assert (doc["backend"], doc["target"], doc["budget_s"]) == (backend, target, 20.0)
    assert doc["stopped"] in ("stable", "budget") and doc["wall_s"] > 0
    inferred = [i["name"] for i in doc["inferences"]]
    undecided = {u["name"]: u["reason"] for u in doc["undecided"]}
    assert len(set(inferred)) == len(inferred) and set(inferred) | set(undecided) == lines, (inferred, undecided)
    for inf in doc["inferences"]:
        assert inf["uncertain"] or inf["evidence"], inf["name"]
        assert not inf["uncertain"] or undecided[inf["name"]] == inf["reason"] and inf["reason"], inf
    for name in set(undecided) - set(inferred):
        assert undecided[name].startswith("not measured: "), (name, undecided[name])
    assert json.loads((out / "card.json").read_text()) == doc
    assert all((out / f"{n}.png").stat().st_size > 0 for n in inferred)  # a figure per inference
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli.main(["probe", "--from", str(out), "--json"]) == 0
    assert json.loads(buf.getvalue()) == doc, "--from drew another card from the saved rows"


def test_probe_on_the_module_over_the_nvdimm(module, pmem_dev: str, tmp_path: Path) -> None:
    """The module's own chase on the fsdax namespace, its target also the 4 KiB- and 2 MiB-page chases'."""
    with module(target=pmem_dev):
        doc, out = probe(tmp_path, "--backend", "kernel", "--target", pmem_dev)
    assert_card(doc, out, "kernel", pmem_dev)


def test_probe_on_the_user_backend(tmp_path: Path) -> None:
    doc, out = probe(tmp_path, "--backend", "user", "--target", "dram")
    assert_card(doc, out, "user", "dram")


def cxl_node() -> str:
    node = os.environ.get("PMEMLAB_CXL_NODE", "")
    if not node:
        pytest.skip("PMEMLAB_CXL_NODE unset: the guest was booted without scripts/vm --cxl")
    return node


@pytest.mark.cxl
def test_probe_on_the_module_dram_on_the_cxl_node(module, tmp_path: Path) -> None:
    """The module's DRAM target on the CPU-less CXL node, small (emulated MMIO is slow under TCG)."""
    node = cxl_node()
    with module(target="dram", dram_node=node, dram_size="16M"):
        assert Path("/sys/kernel/pmemlab/target_node").read_text().strip() == node
        doc, out = probe(tmp_path, "--backend", "kernel", "--target", "dram")
    assert_card(doc, out, "kernel", "dram")
    assert doc["conditions"]["target_node"] == int(node)


@pytest.mark.cxl
def test_probe_on_the_user_backend_on_the_cxl_node(tmp_path: Path) -> None:
    node = cxl_node()
    doc, out = probe(tmp_path, "--backend", "user", "--target", f"dram:{node}")
    assert_card(doc, out, "user", f"dram:{node}")
    assert doc["conditions"]["target_node"] == int(node)


def test_the_2m_stage_on_the_user_backend(tmp_path: Path) -> None:
    """The 2 MiB-page stage alone (a probe of a small budget does not reach it): its target of
    transparent huge pages, a quarter of MemAvailable at most, opened when the stage begins and
    chased once over its ladder, one line per 2 MiB slot; the guest's memory back after."""
    from argparse import Namespace

    from pmemlab.backends.spec import BackendSpec
    from pmemlab.cli import backend as backends
    from pmemlab.sweep import Bench

    be = BackendSpec("user", target="dram", options={"dram_size": "16M"}).open()
    be.require_loaded()
    bench = Bench.probe(be, backends.online_cpus())
    with watched_memory() as mem:
        plan = probe_cli.page2m_plan(Namespace(backend="user", target="dram"), "dram", bench, bench.conditions,
                                     16 * MiB)
        assert plan.bench is None and plan.size <= mem["before"] // 4 and plan.size % (2 * MiB) == 0, plan
        prober = probe_cli.Prober(bench, time.monotonic() + 900, None, page2m=plan)
        probe_cli.measure_2m(prober, time.monotonic())  # until now: the first pass only
    assert mem["least"] > mem["before"] // 2 and mem["after"] > mem["before"] * 3 // 4, mem
    rows = [r for r in prober.rows if r["curve"] == "chase_page_2m"]
    if plan.why:  # the kernel gave the target 4 KiB pages: not chased, and why
        assert prober.skipped == [("tlb_reach_2m", plan.why)] and not rows and "not given" in plan.why
        pytest.skip(plan.why)
    assert prober.skipped == [] and [r["size"] for r in rows] == probe_cli.page2m_ladder(plan.size), rows
    for r in rows:
        assert r["status"] == "ok" and int(r["chase_page"]) == 1 and int(r["access_size"]) == 2 * MiB, r
        assert int(r["target_size"]) == plan.size and r["target_pages"] == "thp", r
        ops = int(r["ops"])
        assert ops > 0 and int(r["reads"]) == ops and int(r["writes"]) == 0, r
    # where the kernel gave it 2 MiB pages the line rests on those runs; else it says why not
    doc, _ = probe_cli.build_card(prober.rows, bench.conditions, target="dram", backend="user", caches=[],
                                  budget_s=None, wall_s=None, stopped="budget")
    huge = {r["size"] for r in rows if probe_cli.page_bytes_of(r) == 2 * MiB}
    t2 = next((i for i in doc["inferences"] if i["name"] == "tlb_reach_2m"), None)
    if huge:
        assert t2 is not None and {e["size_bytes"] for e in t2["evidence"]} == huge and t2["emulated"], t2
    else:
        assert t2 is None and any(u["name"] == "tlb_reach_2m" and "not measured: 2 MiB pages" in u["reason"]
                                  for u in doc["undecided"]), doc["undecided"]
