"""`pmemlab curves` end to end in the guest (issue 36): on the module over the NVDIMM, on the
module's DRAM with the load threads on another named target, on the user backend's DRAM, and with
--cxl on the CXL node with the load on local DRAM. Under TCG the numbers mean nothing: each run is
judged on its structure (every point of every mix ran, the probe was the module's own chase, the
rows say which target and backend, the figures are drawn and say EMULATED), never on a speed.
A weighted DRAM:CXL target's family is compared with DRAM alone by `pmemlab compare`.
Tiny families: 2 mixes x 3 points, one 20 ms run a point."""
from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest

import pmemlab.cli as cli
from numa_nodes import two_memory_nodes

TARGETS = Path("/sys/kernel/pmemlab/targets")
SMALL = ("--mixes", "100,0", "--points", "3", "--threads", "2", "--duration-ms", "20", "--repeats", "1",
         "--max-repeats", "1", "--max-delay", "4096", "--working-set", "4M", "--timeout", "600")


def curves(tmp_path: Path, *args: str) -> tuple[dict, list[dict[str, str]]]:
    """The command in this process (a new Python takes 15-30 s to import pandas under TCG): its
    JSON and its CSV's rows."""
    out = tmp_path / "curves.csv"
    buf, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(err):
        code = cli.main(["curves", *SMALL, *args, "-o", str(out), "--json"])
    print(f"$ pmemlab curves {' '.join(args)}\n{err.getvalue()}")
    assert code == 0, err.getvalue()
    with out.open() as f:
        return json.loads(buf.getvalue()), list(csv.DictReader(f))


def assert_family(doc: dict, rows: list[dict[str, str]], backend: str, probe_op: str) -> None:
    """Every mix has its points, each with probe samples and load-thread bytes; the rows say the
    backend and the emulation; the figures are beside the CSV."""
    assert doc["probe_op"] == probe_op and doc["emulated"] is True
    assert [s["mix"] for s in doc["summaries"]] == [100, 0] and all(s["points"] == 3 for s in doc["summaries"])
    assert len(rows) == 6 and {r["backend"] for r in rows} == {backend} and {r["emulated"] for r in rows} == {"1"}
    # the load threads moved bytes at every point (a thread's first batch always runs: method.md);
    # the probe sampled, or (a vCPU taken away for a whole 20 ms point under TCG: a chase of fewer
    # hops than a batch has no sample, as the host's curves probe met) has empty percentiles; some
    # point sampled
    for r in rows:
        assert float(r["bw_gbps"]) > 0, r
        if int(r["lat_samples"]) == 0:
            assert r["lat_p50_ns"] == "" and r["lat_p999_ns"] == "", r
            continue
        assert 0 <= float(r["lat_p50_ns"]) <= float(r["lat_p999_ns"]) <= float(r["lat_max_ns"]), r
    assert any(int(r["lat_samples"]) > 0 for r in rows), rows
    assert set(doc["unloaded_ns"]) == set(doc["unloaded_after_ns"]) and probe_op in doc["unloaded_ns"]
    assert any(n.startswith("EMULATED") for n in doc["notes"])
    assert [Path(p).name for p in doc["figures"]] == ["curves.family.png", "curves.tails.png"]
    assert all(Path(p).stat().st_size > 0 for p in doc["figures"])


def named_targets() -> list[str]:
    return sorted(p.name for p in TARGETS.iterdir() if p.is_dir())


def test_curves_on_the_module_over_the_nvdimm(module, pmem_dev: str, tmp_path: Path) -> None:
    """The module's own pointer chase probes the fsdax namespace, IRQ-off, beside the load threads."""
    with module(target=pmem_dev):
        doc, rows = curves(tmp_path, "--backend", "kernel")
    assert_family(doc, rows, "kernel", "chase")
    assert {r["target"] for r in rows} == {pmem_dev} and {r["load_target"] for r in rows} == {""}


def test_curves_on_the_module_dram_with_the_load_on_another_target(module, tmp_path: Path) -> None:
    """--load-target: the probe on the module's DRAM target, the load threads on a named one, found
    and left as it was."""
    with module(target="dram", dram_size="16M", targets='"load dram dram_size=16M"'):
        doc, rows = curves(tmp_path, "--backend", "kernel", "--load-target", "load")
        assert named_targets() == ["load"]
    assert_family(doc, rows, "kernel", "chase")
    assert {r["load_target"] for r in rows} == {"load"}


def test_curves_on_the_user_backend(tmp_path: Path) -> None:
    doc, rows = curves(tmp_path, "--backend", "user", "--target", "dram")
    assert_family(doc, rows, "user", "chase")
    assert {r["target"] for r in rows} == {"dram"}


def test_curves_on_the_user_backend_on_an_ext4_dax_file(dram_pmem_dev: str, tmp_path: Path) -> None:
    """The runner on pmem: a file of ext4 mounted with dax on the DRAM-emulated namespace (MAP_SYNC)."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # -b 4096: on a namespace this small mkfs picks 1 KiB blocks, and ext4 mounts those without DAX
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", dram_pmem_dev], check=True)
    try:
        subprocess.run(["mount", "-o", "dax", dram_pmem_dev, str(mnt)], check=True)
        pool = mnt / "pool"
        subprocess.run(["fallocate", "-l", "8M", str(pool)], check=True)
        doc, rows = curves(tmp_path, "--backend", "user", "--target", str(pool))
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        subprocess.run(["wipefs", "-a", dram_pmem_dev], capture_output=True)
    assert_family(doc, rows, "user", "chase")
    assert {r["target"] for r in rows} == {str(pool)}


@pytest.mark.cxl
def test_curves_on_the_user_backend_on_the_cxl_node(tmp_path: Path) -> None:
    """The runner's DRAM target on the CPU-less CXL node, as small as the window (4 MiB: emulated
    MMIO under TCG takes about a minute for the default 256 MiB)."""
    node = os.environ.get("PMEMLAB_CXL_NODE", "")
    if not node:
        pytest.skip("PMEMLAB_CXL_NODE unset: the guest was booted without scripts/vm --cxl")
    doc, rows = curves(tmp_path, "--backend", "user", "--target", f"dram:{node}")
    assert_family(doc, rows, "user", "chase")


@pytest.mark.cxl
def test_curves_on_the_cxl_node_with_the_load_on_local_dram(module, tmp_path: Path) -> None:
    """The latency of CXL memory while the node's DRAM is loaded (the question of a tiering study):
    the module's target on the CPU-less CXL node, the load threads on DRAM of CPU 0's node."""
    node = os.environ.get("PMEMLAB_CXL_NODE", "")
    if not node:
        pytest.skip("PMEMLAB_CXL_NODE unset: the guest was booted without scripts/vm --cxl")
    with module(target="dram", dram_node=node, dram_size="4M", targets='"local dram dram_size=4M"'):
        doc, rows = curves(tmp_path, "--backend", "kernel", "--load-target", "local")
    assert_family(doc, rows, "kernel", "chase")
    assert {r["load_target"] for r in rows} == {"local"}


def test_a_weighted_target_against_dram_alone(module, tmp_path: Path) -> None:
    """The curves of a 3:1 DRAM:other-node placement against DRAM alone, and `pmemlab compare` of
    the two families on their common mixes (the tiering question of issue 36 point 4)."""
    dram, other = two_memory_nodes()
    weighted, alone = tmp_path / "weighted", tmp_path / "alone"
    weighted.mkdir()
    alone.mkdir()
    with module(target="dram", dram_size="8M", dram_nodes=f"{dram},{other}", dram_weights="3,1"):
        assert (Path("/sys/kernel/pmemlab/target_weights")).read_text().strip() == "3,1"
        doc_w, rows_w = curves(weighted, "--backend", "kernel")
    with module(target="dram", dram_size="8M", dram_node=str(dram)):
        doc_d, rows_d = curves(alone, "--backend", "kernel")
    assert_family(doc_w, rows_w, "kernel", "chase")
    assert_family(doc_d, rows_d, "kernel", "chase")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli.main(["compare", str(weighted / "curves.csv"), str(alone / "curves.csv"), "--json"])
    assert code == 0
    doc = json.loads(out.getvalue())
    assert sorted(m["mix"] for m in doc["mixes"]) == [0, 100]
    # under TCG the ratios may be anything (a 0 ns median is a real one): the peaks are above 0
    assert all(m["peak_gbps_a"] > 0 and m["peak_gbps_b"] > 0 for m in doc["mixes"]), doc["mixes"]
