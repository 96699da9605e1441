"""The QEMU a guest runs on (the system's, or bookworm-backports' as scripts/install-deps unpacked
it), what an unpacked one needs, and virtme-ng's environment."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .common import CACHE_DIR, VENV_BIN, die


def qemu_version(binary: str) -> tuple[int, int]:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=20,
                             env={**os.environ, **qemu_env(binary)}).stdout
    except (OSError, subprocess.TimeoutExpired):
        return (0, 0)
    m = re.search(r"version (\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


BPO_QEMU = CACHE_DIR / "qemu-bpo" / "root"


def unpacked_root(binary: str) -> Path | None:
    """The root a QEMU binary was unpacked under (ROOT/usr/bin/qemu-...: scripts/install-deps),
    None for the system's own."""
    root = Path(binary).resolve().parent.parent.parent
    return None if root == Path("/") else root


def qemu_env(binary: str) -> dict[str, str]:
    """What a QEMU binary needs in its environment: an unpacked one (scripts/install-deps) loads
    its own modules, not the system QEMU's."""
    root = unpacked_root(binary)
    if root and (root / "usr/lib/x86_64-linux-gnu/qemu").is_dir():
        return {"QEMU_MODULE_DIR": str(root / "usr/lib/x86_64-linux-gnu/qemu")}
    return {}


def qemu_data_args(binary: str) -> list[str]:
    """An unpacked QEMU's own firmware and option ROMs (-L), not the system QEMU's: QEMU 10 on q35
    with bookworm's (QEMU 7.2's) took 33 s to load a 60 MB initramfs before the kernel's first
    line, 2 s with its own; the CXL guest's QEMU start fell from 35 s to a few."""
    root = unpacked_root(binary)
    if root is None:
        return []
    return [f"-L {d}" for d in (root / "usr/share/qemu", root / "usr/share/seabios") if d.is_dir()]


def guest_qemu(cxl: bool) -> str:
    """The QEMU of a guest: VM_QEMU, or for a CXL guest VM_CXL_QEMU; else the system's when it is
    8.0 or newer, else bookworm-backports' as scripts/install-deps unpacked it (QEMU 10). Any
    guest takes the newer one: under TCG on two cores a guest of 6.1 booted in 12-13 s on QEMU 10
    against 16-20 s on bookworm's 7.2 and set up its namespaces in 3 s against 5 (two rounds of
    the same kernel-matrix tests, back to back). Without one, a CXL guest cannot boot (volatile
    CXL memory needs 8.0) and the others take the system's."""
    chosen = os.environ.get("VM_QEMU") or (os.environ.get("VM_CXL_QEMU") if cxl else None)
    if chosen:
        return chosen
    system = shutil.which("qemu-system-x86_64")
    if system and qemu_version(system) >= (8, 0):
        return system
    unpacked = BPO_QEMU / "usr/bin/qemu-system-x86_64"
    if unpacked.exists():
        return str(unpacked)
    if not cxl and system:
        return system
    die("--cxl needs QEMU 8.0 or newer (volatile CXL memory): run scripts/install-deps (it unpacks "
        f"bookworm-backports' QEMU into {BPO_QEMU.parent}) or set VM_CXL_QEMU")
    return ""


# trixie's Rust virtiofsd, unpacked by scripts/install-deps: virtme-ng looks for a virtiofsd on
# PATH and shares the host's root over virtio-fs with it (over 9p without it: slower, see there)
VIRTIOFSD_BIN = CACHE_DIR / "virtiofsd" / "bin"


def vng_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{VENV_BIN}:{VIRTIOFSD_BIN}:{env.get('PATH', '')}"
    return env
