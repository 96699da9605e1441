"""The generated loops as the compiler left them (objdump -dr), in the runner's object and in the
module's engine.o built for every installed kernel tree (build/<release>/, as scripts/vm builds it):

- every op x form x family has its bandwidth loop, its full bandwidth loop, its loop of split
  long accesses and its latency loop (both: every op, the copies too);
- no call, no indirect jump and no retpoline thunk anywhere in a loop function, the return
  (a jump to __x86_return_thunk on kernels built with return thunks) at its exit only;
- every latency bracket (rdtscp ... rdtscp, or lfence; rdtsc; lfence twice) holds fences, the
  saves of the first stamp, the access instructions and, for accesses of more than a line, the
  add/jnz of its loop: nothing else;
- each loop holds its op's instructions of its form, no other op's access instruction, the
  registers of its form (16 bytes: VEX where the form is VEX, legacy SSE where it is not), and
  vzeroupper where it used ymm or zmm;
- the per-access loop of every plain op's linear, random and per-DIMM sequential loop starts a
  64-byte line (core/core.mk: -falign-loops=64).
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from engine_code import (FAMILIES, FLUSH_OF, FORMS, LOAD, NTSTORE, OPS, Insn, disassemble, has_form,
                         ident, unit_kinds)
from testlib import TOP, load_vm_script

TREES = sorted(p for p in Path("/lib/modules").glob("*/build") if (p / "Makefile").exists())
VECTOR = {"movdqa", "vmovdqa", "vmovdqa64", "movntdqa", "vmovntdqa", "movntdq", "vmovntdq", "movnti"}
BRACKET_OK = {"mfence", "lfence", "mov", "add", "jne", "neg"}


@pytest.fixture(scope="module")
def runner_obj() -> Path:
    res = subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    return TOP / "userspace" / "runner" / "core-engine.o"


@pytest.fixture(scope="module", params=[t.parent.name for t in TREES] or ["none"])
def module_obj(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """core/engine.o of the module, built with the tree's flags (retpolines, return thunks) by
    the bed's own build (scripts/vm: `make module W=1` into build/<release>/ under the build lock).
    check-build (make/test_build.py) and scripts/vm leave it up to date: make only
    checks it then, it does not compile it again. A copy is judged, so a later build cannot change
    it under the test."""
    if request.param == "none":
        pytest.skip("no kernel headers under /lib/modules/*/build (scripts/install-deps installs them)")
    vm = load_vm_script()
    ko = vm.build_module(vm.Kernel.installed(request.param))
    assert ko is not None, f"no pmemlab.ko built for {request.param}"
    obj = tmp_path_factory.mktemp(f"engine-{request.param}") / "engine.o"
    shutil.copy2(ko.parent / "core" / "engine.o", obj)
    return obj


def loops(ops: tuple[str, ...]) -> dict[str, tuple[str, str, str]]:
    """loop function name -> (op, form, kind) for every loop the object must have."""
    out = {}
    for op in ops:
        for form in FORMS:
            if not has_form(op, form):
                continue
            for fam in FAMILIES:
                out[f"pl_bw_{ident(op)}_{form}_{fam}"] = (op, form, "bw")
            out[f"pl_bwf_{ident(op)}_{form}"] = (op, form, "bwf")
            out[f"pl_bwl_{ident(op)}_{form}"] = (op, form, "bwl")
            out[f"pl_lat_{ident(op)}_{form}"] = (op, form, "lat")
    return out


def transfers(insns: list[Insn]) -> list[str]:
    """Every call, indirect branch or thunk jump: the return's jump to __x86_return_thunk excepted."""
    bad = []
    for i in insns:
        thunk = "thunk" in i.target
        if i.mnemonic.startswith("call") or "*" in i.operands:
            bad.append(f"{i.addr:x} {i.mnemonic} {i.operands} {i.target}")
        elif thunk and not i.target.startswith("__x86_return_thunk"):
            bad.append(f"{i.addr:x} {i.mnemonic} {i.target}")
    return bad


def brackets(insns: list[Insn]) -> list[list[Insn]]:
    """The instructions between the two stamps of each bracket, in address order: rdtscp pairs,
    or (without rdtscp) the rdtsc of lfence; rdtsc; lfence pairs."""
    stamps = [k for k, i in enumerate(insns) if i.mnemonic == "rdtscp" or
              (i.mnemonic == "rdtsc" and 0 < k < len(insns) - 1 and insns[k - 1].mnemonic == "lfence"
               and insns[k + 1].mnemonic == "lfence")]
    assert len(stamps) % 2 == 0, "a bracket without its closing stamp"
    return [insns[a + 1:b] for a, b in zip(stamps[::2], stamps[1::2])]


def expected_access(op: str, form: str, kind: str) -> set[str]:
    """The access mnemonics a loop may hold: its op's, and the mix's load where it has one."""
    want = {m for m, _ in unit_kinds(op, form)} | ({FLUSH_OF[op]} if op in FLUSH_OF else set())
    if kind != "bw" and op not in ("load", "ntload"):
        want.add(LOAD[form])
    return want


def check_object(obj: Path, ops: tuple[str, ...]) -> None:
    funcs = disassemble(obj)
    want = loops(ops)
    missing = sorted(set(want) - set(funcs))
    assert not missing, f"{obj}: no {missing[:5]}"
    # (objdump names the call padding before a section's first function "<function>-0x10")
    extra = sorted(f for f in funcs if re.fullmatch(r"pl_(bw|bwf|bwl|lat)_\w+", f) and f not in want)
    assert not extra, f"{obj}: unexpected loops {extra[:5]}"
    for name, (op, form, kind) in want.items():
        insns = funcs[name]
        mn = {i.mnemonic for i in insns}
        bad = transfers(insns)
        assert not bad, f"{obj.name} {name}: {bad}"
        # the access instructions (8-byte mov cannot be told from the compiler's own moves here;
        # test_engine_exec counts those); latency loops flush lines for cold preparation too
        exp = expected_access(op, form, kind) - {"mov"} | ({"clflush"} if kind == "lat" else set())
        access = mn & (VECTOR | set(FLUSH_OF.values()))
        assert access == exp, f"{name}: access instructions {sorted(access)}, expected {sorted(exp)}"
        text = " ".join(i.operands for i in insns)
        if form in ("8", "16sse", "16vex"):
            assert "%ymm" not in text and "%zmm" not in text, name
        if form == "16sse":
            assert not {m for m in mn if m.startswith("v")}, f"{name}: VEX instructions in the legacy SSE form"
        if form == "16vex":
            assert not (mn & {"movdqa", "movntdqa", "movntdq", "paddq", "punpcklqdq"}), f"{name}: legacy SSE"
        if form in ("32", "64"):
            assert ("%ymm" if form == "32" else "%zmm") in text and "vzeroupper" in mn, name
        if kind in ("bwf", "bwl") and op not in ("load", "ntload"):
            assert {"sfence", "mfence"} <= mn, f"{name}: the configured fences"
        if kind != "lat":
            assert "rdtscp" not in mn, name
            continue
        pairs = brackets(insns)
        assert pairs, f"{name}: no latency bracket"
        for inside in pairs:
            kinds = {i.mnemonic for i in inside}
            assert [i.mnemonic for i in inside[:3]] == ["lfence", "mov", "mov"], \
                f"{name}: lfence, then the first stamp's registers saved"
            assert [i.mnemonic for i in inside if i.mnemonic != "lfence"][-1] == "mfence", \
                f"{name}: the bracket closes with mfence"
            assert kinds <= BRACKET_OK | expected_access(op, form, kind), \
                f"{name}: in a bracket: {sorted(kinds - BRACKET_OK - expected_access(op, form, kind))}"
            assert kinds & (expected_access(op, form, kind) - {"mov"}) or form == "8", f"{name}: empty bracket"
        # both timestamp forms: rdtscp, and lfence; rdtsc; lfence where the CPU has no rdtscp
        assert {"rdtscp", "rdtsc"} <= mn, name


def per_access_loop_heads(insns: list[Insn]) -> set[int]:
    """Where the per-access loop begins: the head of the innermost loop (a backward jump and its
    target) around each compare of the access size with one line (the shape choice)."""
    loops = []
    for i in insns:
        m = re.match(r"([0-9a-f]+) <", i.operands)
        if i.mnemonic.startswith("j") and m and int(m.group(1), 16) <= i.addr:
            loops.append((int(m.group(1), 16), i.addr))
    heads = set()
    for i in insns:
        if i.mnemonic == "cmp" and i.operands.startswith("$0x40,"):
            around = [(end - start, start) for start, end in loops if start <= i.addr <= end]
            if around:
                heads.add(min(around)[1])
    return heads


ALIGNED_FAMILIES = ("linear", "rand", "dimm_linear")


def check_alignment(obj: Path, ops: tuple[str, ...]) -> None:
    """A loop that falls across instruction-fetch lines runs slower on a cache-resident buffer
    (205 against 185 GB/s, 256-B loads, Zen 4), and where it falls moved with unrelated edits;
    the kernel packs loops (-falign-loops=1), so engine.c asks for 64 (method.md)."""
    funcs = disassemble(obj)
    plain = [op for op in ops if op not in FLUSH_OF]
    checked, bad = 0, []
    for op in plain:
        for form in FORMS:
            if not has_form(op, form):
                continue
            for fam in ALIGNED_FAMILIES:
                name = f"pl_bw_{ident(op)}_{form}_{fam}"
                heads = per_access_loop_heads(funcs[name])
                assert heads, f"{obj.name} {name}: no per-access loop found"
                checked += len(heads)
                bad += [f"{name} at {h:#x}" for h in sorted(heads) if h % 64]
    assert checked and not bad, f"{obj.name}: per-access loops off a 64-byte line: {bad[:6]}"


COPY_REG = {"16sse": "%xmm1", "16vex": "%xmm1", "32": "%ymm1", "64": "%zmm1"}


def check_copy_units(obj: Path) -> None:
    """Each unit of a copy's plain loops (no mix load there) in a vector form: the load of the
    source into the load register, then at once the store (ntcopy: the non-temporal store) of that
    register to another address, the destination; as many loads as stores, and the store data
    register (register 0) stored nowhere: a copy writes the source's bytes, nothing else."""
    funcs = disassemble(obj)
    units = 0
    for op in ("copy", "ntcopy"):
        for form, reg in COPY_REG.items():
            ld, st = unit_kinds(op, form)[0][0], unit_kinds(op, form)[1][0]
            for fam in FAMILIES:
                name = f"pl_bw_{ident(op)}_{form}_{fam}"
                insns = funcs[name]
                loads = [k for k, i in enumerate(insns) if i.mnemonic == ld and i.operands.endswith("," + reg)
                         and "(" in i.operands]
                stores = [k for k, i in enumerate(insns) if i.operands.startswith(reg + ",") and "(" in i.operands]
                assert loads and len(loads) == len(stores), f"{obj.name} {name}: {len(loads)} loads, {len(stores)} stores"
                for k in loads:
                    nxt = insns[k + 1]
                    src = insns[k].operands.rsplit(",", 1)[0]
                    assert nxt.mnemonic == st and nxt.operands.startswith(reg + ",") and \
                        nxt.operands.split(",", 1)[1] != src, f"{obj.name} {name}: {insns[k]} then {nxt}"
                data = reg.replace("1", "0")
                assert not [i for i in insns if i.operands.startswith(data + ",") and "(" in i.operands], \
                    f"{obj.name} {name}: stores the data register"
                units += len(loads)
    assert units, obj.name


def test_runner_loops(runner_obj: Path) -> None:
    check_object(runner_obj, OPS)
    check_alignment(runner_obj, OPS)
    check_copy_units(runner_obj)


def test_module_loops_every_tree(module_obj: Path) -> None:
    check_object(module_obj, OPS)
    check_alignment(module_obj, OPS)
    check_copy_units(module_obj)


HOPS_PER_STEP = 16  # PL_CHASE_UNROLL (core/pl_core.h): chase_batch is a multiple of it


def back_loops(insns: list[Insn]) -> list[tuple[int, int]]:
    """(start, end) of every backward jump's loop."""
    out = []
    for i in insns:
        m = re.match(r"([0-9a-f]+) <", i.operands)
        if i.mnemonic.startswith("j") and m and int(m.group(1), 16) <= i.addr:
            out.append((int(m.group(1), 16), i.addr))
    return out


def hop_loop(obj: Path, name: str) -> tuple[list[Insn], list[Insn], list[Insn], str]:
    """A chase loop's hops, `mov (%r),%r` on one register (each load's address the previous load's
    result: one dependent load per hop), 16 of them in the innermost loop around them, whose counter
    steps by 16 (so chase_batch hops are chase_batch loads): (the function, its hops, that loop's
    body, the hop register)."""
    insns = disassemble(obj)[name]
    hop = re.compile(r"^\(%(\w+)\),%(\w+)$")
    hops = [i for i in insns if i.mnemonic == "mov" and (m := hop.match(i.operands)) and m.group(1) == m.group(2)]
    assert len(hops) == HOPS_PER_STEP, f"{obj.name}: {len(hops)} dependent loads in {name}"
    regs = {hop.match(i.operands).group(1) for i in hops}
    assert len(regs) == 1, f"{obj.name}: {name}'s hops on several registers"
    around = sorted((end - start, start, end) for start, end in back_loops(insns)
                    if all(start <= h.addr <= end for h in hops))
    assert around, f"{obj.name}: {name}'s hops are not in a loop"
    _, start, end = around[0]
    body = [i for i in insns if start <= i.addr <= end]
    others = [i for i in body if i not in hops]
    assert any(i.mnemonic == "add" and i.operands.startswith(f"${HOPS_PER_STEP:#x},") for i in others), \
        f"{obj.name}: {name}'s hop loop's counter does not step by {HOPS_PER_STEP}: {others}"
    assert not [i for i in body if i.mnemonic.startswith("call") or "mfence" in i.mnemonic or
                i.mnemonic == "movnti"], f"{obj.name}: a call, fence or movnti in {name}'s hop loop"
    mn = {i.mnemonic for i in insns}
    assert {"rdtscp", "rdtsc", "lfence"} <= mn, f"{obj.name}: {name}'s brackets"
    return insns, hops, body, regs.pop()


def check_chase(obj: Path) -> None:
    """pl_chase_loop (op chase, both backends): 16 dependent loads on one register back to back in
    the hop loop, no other memory access in that loop (a plain chase reads only); the bracket
    around it reads the clock serialised."""
    _, hops, body, _ = hop_loop(obj, "pl_chase_loop")
    idx = [body.index(h) for h in hops]
    assert idx == list(range(idx[0], idx[0] + HOPS_PER_STEP)), f"{obj.name}: the hops are not consecutive"
    others = [i for i in body if i not in hops]
    assert not [i for i in others if "(" in i.operands], f"{obj.name}: other memory accesses in the hop loop: {others}"


def check_chase_store(obj: Path) -> None:
    """pl_chase_store_loop (chase_write=store): each hop is the data's add, one 8-byte store to
    offset 8 of the hop's line (the hop register), then the dependent load: 16 of each per step,
    in that order, and no other memory access in the hop loop."""
    _, hops, body, reg = hop_loop(obj, "pl_chase_store_loop")
    store = re.compile(rf"^%(\w+),0x8\(%{reg}\)$")
    stores = [i for i in body if i.mnemonic == "mov" and store.match(i.operands)]
    assert len(stores) == HOPS_PER_STEP, f"{obj.name}: {len(stores)} stores to 8(%{reg}) in the store-chase"
    data = {store.match(i.operands).group(1) for i in stores}
    assert len(data) == 1, f"{obj.name}: the store-chase stores several registers {data}"
    dreg = data.pop()
    for st, h in zip(stores, hops):
        k = body.index(st)
        assert body[k + 1] is h and body[k - 1].mnemonic == "add" and body[k - 1].operands.endswith(f",%{dreg}"), \
            f"{obj.name}: a store-chase hop is not add, store, load: {body[k - 1:k + 2]}"
    others = [i for i in body if i not in hops and i not in stores]
    assert not [i for i in others if "(" in i.operands], f"{obj.name}: other memory accesses in the hop loop: {others}"


def check_chase_raw(obj: Path) -> None:
    """pl_chase_raw_loop (chase_write=raw): the timed hops as in the plain chase (no other memory
    access in their loop), and outside it the write pass: one movnti to offset 8 of a line in a
    loop of its own (one per line), and the mfence that ends the pass."""
    insns, hops, body, _ = hop_loop(obj, "pl_chase_raw_loop")
    others = [i for i in body if i not in hops]
    assert not [i for i in others if "(" in i.operands], f"{obj.name}: other memory accesses in the hop loop: {others}"
    nt = [i for i in insns if i.mnemonic == "movnti"]
    assert len(nt) == 1 and re.match(r"^%\w+,0x8\(%\w+\)$", nt[0].operands), f"{obj.name}: the write pass {nt}"
    assert any(s <= nt[0].addr <= e and not any(s <= h.addr <= e for h in hops) for s, e in back_loops(insns)), \
        f"{obj.name}: the write pass's movnti is not in a loop of its own"
    assert "mfence" in {i.mnemonic for i in insns}, f"{obj.name}: no mfence after the write pass"


def test_runner_chase_loop(runner_obj: Path) -> None:
    check_chase(runner_obj)


def test_module_chase_loop(module_obj: Path) -> None:
    check_chase(module_obj)


@pytest.mark.parametrize("check", [check_chase_store, check_chase_raw])
def test_runner_chase_write_loops(runner_obj: Path, check) -> None:
    check(runner_obj)


@pytest.mark.parametrize("check", [check_chase_store, check_chase_raw])
def test_module_chase_write_loops(module_obj: Path, check) -> None:
    check(module_obj)
