"""The module's engine in the guest: every result line names the generated loop that ran (loop=)
and the instructions of one access unit (insn=); the loop is a function of the .ko built for the
booted kernel, and its disassembly holds those instructions and no other op's access instruction.
For every op x width this CPU has x address family x mode, plus read_pct mixes and fences (the
full bandwidth loop). The bandwidth threads report the engine's ceiling (ceiling_mbps), and so
does the all line, as their sum. (The host tests count what these loops execute.)"""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kmod_driver import OPS, Module

SYSFS = Path("/sys/kernel/pmemlab")
FAMILIES = {
    "linear": dict(pattern="seq", placement="per-thread"),
    "rand": dict(pattern="rand", placement="per-thread"),
    "stride": dict(pattern="stride", stride=256, placement="per-thread"),
    "hotspot": dict(pattern="hotspot", hotspot_size=8192, placement="per-thread"),
    "dimm_linear": dict(pattern="seq", placement="per-dimm", interleave_ways=2, interleave_gran=4096),
    "dimm_rand": dict(pattern="rand", placement="per-dimm", interleave_ways=2, interleave_gran=4096),
}
ACCESS = {"movdqa", "vmovdqa", "vmovdqa64", "movntdqa", "vmovntdqa", "movntdq", "vmovntdq", "movnti",
          "clwb", "clflushopt"}


@pytest.fixture(scope="module")
def ko_funcs(ko: Path) -> dict[str, set[str]]:
    """Function -> the mnemonics of its disassembly, for the generated loops of the .ko."""
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(ko)], capture_output=True, text=True,
                         check=True).stdout
    funcs: dict[str, set[str]] = {}
    cur = None
    for line in out.splitlines():
        m = re.match(r"^[0-9a-f]+ <(pl_(?:bw|bwf|lat)_[^>]+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(1), set())
        elif re.match(r"^[0-9a-f]+ <", line):
            cur = None
        elif cur is not None and "\t" in line:
            cur.add(line.split("\t", 1)[1].split()[0])
    return funcs


def widths_of(mod: Module) -> dict[str, list[int]]:
    """op -> the widths the op table says this CPU runs."""
    out = {}
    for line in mod.read("op_table").splitlines():
        name, *cells = line.split()
        out[name] = [int(c.split(":")[0]) for c in cells if c.endswith(":ok")]
    return out


def cases() -> list[tuple[str, str, str]]:
    return [(op, fam, mode) for op in OPS for fam in FAMILIES for mode in ("bandwidth", "latency")]


@pytest.mark.parametrize("op,family,mode", cases())
def test_result_names_the_loop_and_the_ko_holds_its_instructions(mod: Module, ko_funcs: dict[str, set[str]],
                                                                  op: str, family: str, mode: str) -> None:
    mod.wait(timeout=60)
    widths = widths_of(mod)[op]
    if not widths:
        pytest.skip(f"this CPU runs no width of {op}")
    table = {ln.split()[0]: ln.split()[1:] for ln in mod.read("op_table").splitlines()}
    for width in widths:
        insn_of_table = next(c.split(":")[1] for c in table[op] if c.startswith(f"{width}:"))
        params = dict(op=op, width=width, mode=mode, access_size=max(64, width), count=40, working_set=1 << 20,
                      threads=1, read_pct=0, fence="none", delay_ticks=0, cold=0, warm=0, stride=0,
                      interleave_ways=1)
        res = mod.run(**{**params, **FAMILIES[family]})
        row = res.threads[0]
        assert row["width"] == str(width) and row["op"] == op
        fam = {"stride": "linear", "hotspot": "linear"}.get(family, family)
        form = {8: "8", 16: "16vex" if "avx" in mod.read("cpu_features").split() else "16sse",
                32: "32", 64: "64"}[width]
        want = f"pl_lat_{op.replace('+', '_')}_{form}" if mode == "latency" else \
            f"pl_bw_{op.replace('+', '_')}_{form}_{fam}"
        assert row["loop"] == want, row
        assert row["insn"] == insn_of_table, (row["insn"], insn_of_table)
        assert want in ko_funcs, f"{want} is not a function of the .ko"
        mnemonics = set(row["insn"].split("+"))
        assert mnemonics <= ko_funcs[want] | {"mov"}, (want, mnemonics, sorted(ko_funcs[want] & ACCESS))
        others = (ko_funcs[want] & ACCESS) - mnemonics
        if mode == "latency":
            others -= {"clflush"}  # the cold preparation
            if op not in ("load", "ntload"):
                # a writing op's latency loop holds the read_pct load of its width too
                others -= {next(c.split(":")[1] for c in table["load"] if c.startswith(f"{width}:"))}
            assert "rdtscp" in ko_funcs[want] or "rdtsc" in ko_funcs[want]
        assert not others, f"{want} holds {sorted(others)} too"
        if mode == "bandwidth":
            assert float(row["ceiling_mbps"]) > 0 and row["ceiling_mbps"] == res.total["ceiling_mbps"]
        else:
            assert "ceiling_mbps" not in row


def test_mixes_and_fences_run_the_full_loop(mod: Module, ko_funcs: dict[str, set[str]]) -> None:
    mod.wait(timeout=60)
    width = max(widths_of(mod)["store"])
    for params, insn_extra in ((dict(read_pct=50, fence="none"), True), (dict(read_pct=0, fence="sfence"), False)):
        res = mod.run(**{**dict(op="ntstore", width=width, mode="bandwidth", access_size=256, count=200,
                                working_set=1 << 20, threads=2, delay_ticks=0, pattern="rand",
                                placement="per-thread"), **params})
        for row in res.threads:
            form = {8: "8", 16: "16vex", 32: "32", 64: "64"}[width]
            assert row["loop"] == f"pl_bwf_ntstore_{form}"
            assert ("," in row["insn"]) == insn_extra, row["insn"]
            assert {"sfence", "mfence"} <= ko_funcs[row["loop"]]
            assert int(row["reads"]) == (100 if insn_extra else 0)
        threads_ceiling = sum(float(r["ceiling_mbps"]) for r in res.threads)
        assert float(res.total["ceiling_mbps"]) == pytest.approx(threads_ceiling, abs=0.002)
    # results/ceiling_mbps: the all line's, empty without a bandwidth thread
    assert (SYSFS / "results" / "ceiling_mbps").read_text().strip() == res.total["ceiling_mbps"]
    mod.run(mode="latency", op="load", count=50, threads=1, read_pct=0, fence="none")
    assert (SYSFS / "results" / "ceiling_mbps").read_text() == "\n"
