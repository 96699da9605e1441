"""The kernel-log verdict: the splats that fail a run, the ACPI firmware errors that fail a --cxl
guest, and the line of where a boot's time went."""
from __future__ import annotations

import re
from pathlib import Path

# Kernel log lines that fail a run. Each is a kernel splat header, not a message text a
# driver might print in passing. The lockdep and hung-task headers only appear on kernels built
# with those checkers (scripts/debug-kernel); lockdep's own headers carry no "at FILE:LINE".
BAD_LOG = re.compile(
    r"(Oops[:\s]|BUG: |kernel BUG at|WARNING: CPU|WARNING: .* at |"
    r"soft lockup|hard LOCKUP|Watchdog detected hard LOCKUP|"
    r"rcu: INFO: rcu_\w+ (self-)?detected stall|rcu_\w+ detected stalls|"
    r"scheduling while atomic|general protection fault|Kernel panic|"
    r"UBSAN:|KASAN:|kmemleak: \d+ new suspected|"
    r"WARNING: (possible circular locking dependency|possible recursive locking|"
    r"inconsistent lock state|suspicious RCU usage|bad unlock balance|held lock freed|"
    r"lock held when returning to user space|lock held at task exit|Nested lock was not taken|"
    r"possible irq lock inversion dependency|\w+-safe -> \w+-unsafe lock order)|"
    r"INFO: trying to register non-static key|INFO: task \S+ blocked for more than|"
    r"ODEBUG: )"
)

# A --cxl guest also fails on an ACPI firmware error: the CXL host bridge, its windows and its
# generic port are described by ACPI tables (DSDT, CEDT, SRAT, HMAT), and a table the kernel could
# not load describes the platform wrongly. QEMU before 8.0
# declares _UID twice in the DSDT device of a CXL host bridge (pxb-cxl), both the bus number:
# ACPICA keeps the first and reports the second as AE_ALREADY_EXISTS, the host bridge's _UID is
# the one the CEDT names it by (cxl_acpi finds its dport, the regions work), and QEMU 8.0 dropped
# the duplicate ("hw/i386/acpi: Drop duplicate _UID entry for CXL root bridge"). Allowed only
# when such a QEMU runs a --cxl guest, and only for that one name.
FIRMWARE_LOG = re.compile(r"ACPI BIOS Error|ACPI Error: ")
CXL_UID_BUG = re.compile(r"ACPI BIOS Error \(bug\): Failure creating named object \[\\_SB\.CL[0-9A-F]{2}\._UID\], "
                         r"AE_ALREADY_EXISTS")
# ACPICA's own line for the same failure, printed right after it (QEMU 7.2 and Debian's 6.1:
# "ACPI Error: AE_ALREADY_EXISTS, During name lookup/catalog (20220331/psobject-220)")
CXL_UID_BUG_NEXT = re.compile(r"ACPI Error: AE_ALREADY_EXISTS, During name lookup/catalog")


def firmware_errors(text: str, qemu_ver: tuple[int, int]) -> list[str]:
    """The ACPI firmware errors of a --cxl guest's log, less QEMU 7.2's duplicate _UID of the CXL
    host bridge (its line and ACPICA's line right after it) on a QEMU before 8.0."""
    out = []
    allowed_next = False
    for line in text.splitlines():
        if qemu_ver < (8, 0) and CXL_UID_BUG.search(line):
            allowed_next = True
            continue
        if allowed_next and CXL_UID_BUG_NEXT.search(line):
            allowed_next = False
            continue
        allowed_next = False
        if FIRMWARE_LOG.search(line):
            out.append(line)
    return out


def scan_log(text: str) -> list[str]:
    return [line for line in text.splitlines() if BAD_LOG.search(line)]


def phase_times(path: Path, elapsed: float) -> str:
    """One line of where a boot's time went, from the guest's uptime at each stage (guest.sh
    writes them) and the host's wall time from QEMU's start to its exit."""
    marks: dict[str, float] = {}
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            marks[name] = float(value)
    except (OSError, ValueError):
        return f"{elapsed:.0f} s in all (no stage times from the guest)"
    parts = []
    last = 0.0
    for name, label in (("booted", "boot"), ("namespaces", "namespaces"), ("command", "command")):
        if name in marks:
            parts.append(f"{label} {marks[name] - last:.0f} s")
            last = marks[name]
    parts.append(f"QEMU start and exit {max(elapsed - last, 0):.0f} s")
    return ", ".join(parts) + f" ({elapsed:.0f} s in all)"

