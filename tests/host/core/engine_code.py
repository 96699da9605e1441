"""What the engine's generated code is, read from objects and binaries: functions and their
instructions (objdump), the access instructions' addresses (section pl_sites of userspace
builds), and what each op x form must execute per unit. Shared by the objdump tests and the
execution-count tests; independent of the C description on purpose (ops.def is what they check)."""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

FORMS = ("8", "16sse", "16vex", "32", "64")
FORM_WIDTH = {"8": 8, "16sse": 16, "16vex": 16, "32": 32, "64": 64}
FAMILIES = ("linear", "rand", "dimm_linear", "dimm_rand")
OPS = ("load", "ntload", "store", "ntstore", "store+clwb", "store+clflushopt", "store+clflush", "copy", "ntcopy")
FLUSH_OF = {"store+clwb": "clwb", "store+clflushopt": "clflushopt", "store+clflush": "clflush"}

# (mnemonic, direction) of one load / store of each form, as objdump prints them
LOAD = {"8": "mov", "16sse": "movdqa", "16vex": "vmovdqa", "32": "vmovdqa", "64": "vmovdqa64"}
NTLOAD = {"16sse": "movntdqa", "16vex": "vmovntdqa", "32": "vmovntdqa", "64": "vmovntdqa"}
STORE = LOAD
NTSTORE = {"8": "movnti", "16sse": "movntdq", "16vex": "vmovntdq", "32": "vmovntdq", "64": "vmovntdq"}
# every mnemonic that can be an access or flush of some op: none may run where it does not belong
ACCESS_MNEMONICS = set(LOAD.values()) | set(NTLOAD.values()) | set(NTSTORE.values()) | set(FLUSH_OF.values())


def ident(op: str) -> str:
    return op.replace("+", "_")


def unit_kinds(op: str, form: str) -> list[tuple[str, str]]:
    """(mnemonic, 'ld'|'st') of the instructions of one unit of op in form."""
    if op == "load":
        return [(LOAD[form], "ld")]
    if op == "ntload":
        return [(NTLOAD[form], "ld")]
    if op == "ntstore":
        return [(NTSTORE[form], "st")]
    if op == "copy":
        return [(LOAD[form], "ld"), (STORE[form], "st")]
    if op == "ntcopy":
        return [(LOAD[form], "ld"), (NTSTORE[form], "st")]
    return [(STORE[form], "st")]  # store and the flushing ops


def has_form(op: str, form: str) -> bool:
    return not (op == "ntload" and form == "8")


@dataclass
class Insn:
    addr: int
    mnemonic: str
    operands: str
    target: str  # relocation or symbol a call/jump goes to ("" if none)

    @property
    def direction(self) -> str:
        """'st' when the memory operand is the destination (AT&T: last), else 'ld'."""
        ops = self.operands.split("#")[0].strip()
        return "st" if ops.endswith(")") else "ld"


def disassemble(obj: Path) -> dict[str, list[Insn]]:
    """Functions of an object or binary -> their instructions (objdump -dr: relocations name
    the targets of calls and jumps in unlinked objects)."""
    out = subprocess.run(["objdump", "-dr", "--no-show-raw-insn", str(obj)], capture_output=True,
                         text=True, check=True).stdout
    funcs: dict[str, list[Insn]] = {}
    cur: list[Insn] | None = None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <([^>]+)>:$", line)
        if m:
            cur = funcs.setdefault(m.group(2), [])
            continue
        if cur is None:
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(R_X86_64_\w+)\s+(\S+)", line)
        if m and cur:  # a relocation of the previous instruction
            cur[-1].target = m.group(3)
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(\S+)\s*(.*)$", line)
        if m:
            operands = m.group(3)
            tm = re.search(r"<([^>]+)>", operands)
            cur.append(Insn(int(m.group(1), 16), m.group(2), operands, tm.group(1) if tm else ""))
    return funcs


def symbols(binary: Path) -> dict[str, tuple[int, int]]:
    """name -> (start, end) of the defined functions."""
    out = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True, text=True,
                         check=True).stdout
    syms = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in "tT":
            start = int(parts[0], 16)
            syms[parts[3]] = (start, start + int(parts[1], 16))
    return syms


def access_sites(binary: Path) -> set[int]:
    """Addresses of the access instructions (userspace builds record each in pl_sites as a
    32-bit offset from the entry's own address)."""
    head = subprocess.run(["objdump", "-h", str(binary)], capture_output=True, text=True, check=True).stdout
    m = re.search(r"^\s*\d+\s+pl_sites\s+([0-9a-f]+)\s+([0-9a-f]+)", head, re.M)
    assert m, f"{binary} has no pl_sites section"
    vma = int(m.group(2), 16)
    dump = subprocess.run(["objdump", "-s", "-j", "pl_sites", str(binary)], capture_output=True, text=True,
                          check=True).stdout
    data = bytearray()
    for line in dump.splitlines():
        mm = re.match(r"^ ([0-9a-f]+) ((?:[0-9a-f]{2,8} ){1,4})", line)
        if mm:
            data += bytes.fromhex(mm.group(2).replace(" ", ""))
    sites = set()
    for i in range(0, len(data), 4):
        rel = int.from_bytes(data[i:i + 4], "little", signed=True)
        sites.add(vma + i + rel)
    return sites
