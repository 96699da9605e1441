"""QEMU under a watchdog: the KVM probe, the guest's run with its output copied as it comes, and
the wait that tells a stalled boot from a slow command."""
from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .common import CACHE_DIR, VENV_BIN
from .kernels import Kernel
from .qemu import vng_env


def kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


class BootStalled(Exception):
    """The guest never reached its script: the kernel or QEMU stalled, or QEMU ended, before any
    pmemlab code ran (the module is loaded by the script, after its first stage mark). `ended`:
    how long QEMU ran when it ended on its own (None: a stall, killed at --boot-timeout)."""

    def __init__(self, console_tail: str, ended: float | None = None) -> None:
        super().__init__(console_tail)
        self.ended = ended


def wait_guest(proc: subprocess.Popen, phases: Path, timeout: float, boot_timeout: float) -> str:
    """Wait for QEMU to exit: "exited", or "timeout" after `timeout` s, or "boot-stalled" when
    the guest script's first stage mark (`phases`) has not appeared after `boot_timeout` s. A
    boot that hangs (once in CI, the rt kernel under TCG beside another guest) is told apart in
    minutes instead of holding the bed for the whole --timeout. The process group is killed on
    either limit."""
    start = time.monotonic()
    while True:
        try:
            proc.wait(timeout=1.0)
            return "exited"
        except subprocess.TimeoutExpired:
            pass
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            verdict = "timeout"
        elif elapsed >= boot_timeout and not phases.exists():
            verdict = "boot-stalled"
        else:
            continue
        kill_group(proc)
        proc.wait()
        return verdict


def probe_kvm(kernel: Kernel, timeout: float) -> tuple[bool, str]:
    """Boot a trivial guest with KVM. KVM can exist yet hang at boot, so a deadline decides."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm not usable"
    boot_id = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    what = kernel.release if kernel.image == Kernel.installed(kernel.release).image else kernel.image
    qemu = shutil.which("qemu-system-x86_64")
    key = hashlib.sha256(f"{boot_id} {what} {qemu}".encode()).hexdigest()[:16]
    cache = CACHE_DIR / f"kvm-probe-{key}"
    if cache.exists():
        ok, _, why = cache.read_text().partition(" ")
        return ok == "1", f"{why} (cached)"
    # A hang is the host's KVM, not the guest kernel's (every kernel hung alike on the machines
    # that hang): one hang in this boot stands for every kernel, which spares make test a 45 s
    # probe for each of its five on a freshly booted machine. A success is still per kernel.
    hang = CACHE_DIR / f"kvm-hang-{hashlib.sha256(f'{boot_id} {qemu}'.encode()).hexdigest()[:16]}"
    if hang.exists():
        return False, f"{hang.read_text()} (cached for this boot)"
    cmd = [str(VENV_BIN / "vng"), "--run", str(kernel.image), "--disable-microvm",
           "--memory", "512M", "--cpus", "1", "--exec", "echo PMEMLAB_KVM_OK"]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            text=True, env=vng_env(), start_new_session=True)
    try:
        out, _ = proc.communicate(timeout=timeout)
        ok = "PMEMLAB_KVM_OK" in out
        why = "guest booted" if ok else "guest failed: " + (out.strip().splitlines() or ["no output"])[-1][:160]
    except subprocess.TimeoutExpired:
        kill_group(proc)
        proc.communicate()
        ok, why = False, f"guest hung for {timeout:.0f} s"
    why += f" in {time.monotonic() - start:.0f} s"
    CACHE_DIR.mkdir(parents=True, exist_ok=True)
    cache.write_text(f"{int(ok)} {why}")
    if why.startswith("guest hung"):
        hang.write_text(f"{why} with {kernel.release}")
    return ok, why


def choose_accel(requested: str, kernel: Kernel, probe_timeout: float) -> str:
    if requested in ("kvm", "tcg"):
        print(f"vm: accelerator {requested} (VM_ACCEL)", file=sys.stderr)
        return requested
    ok, why = probe_kvm(kernel, probe_timeout)
    accel = "kvm" if ok else "tcg"
    print(f"vm: accelerator {accel} (KVM probe: {why})", file=sys.stderr)
    return accel


class Tail(threading.Thread):
    """Copy the guest command's output file to our stdout as it grows."""

    def __init__(self, path: Path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.stop = threading.Event()

    def pump(self, fh) -> None:
        chunk = fh.read()
        if chunk:
            sys.stdout.write(chunk)
            sys.stdout.flush()

    def run(self) -> None:
        while not self.path.exists() and not self.stop.is_set():
            time.sleep(0.2)
        if not self.path.exists():
            return
        with open(self.path, errors="replace") as fh:
            while not self.stop.wait(0.3):
                self.pump(fh)
            self.pump(fh)
