"""What the guest needs built on the host first: the module for its kernel and pmemlab-run with its
libraries, each under its own build lock (two beds may start at once)."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

from .common import TOP, die
from .kernels import Kernel


def build_module(kernel: Kernel) -> Path | None:
    if not (TOP / "Kbuild").exists() or not (TOP / "kmod").is_dir() or not (TOP / "core").is_dir():
        return None
    build = kernel.kdir
    if not build.exists():
        die(f"no headers for {kernel.release} ({build} missing): run scripts/install-deps")
    # Two beds may start at once: one build at a time into build/RELEASE (scripts/check-build
    # takes the same lock), and the second finds it up to date. W=1 as check-build builds, so
    # the tree it left (make test builds every tree first) is reused as it is.
    (TOP / "build").mkdir(exist_ok=True)
    with open(TOP / "build" / ".module-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        # -j: engine.c is half of a build; the other files compile beside it (the first guest of
        # make test waits for this build with the second core idle)
        res = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "-C", str(TOP), "module", f"KDIR={build}", "W=1"],
                             capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout + res.stderr)
        die(f"module build against {kernel.release} failed", 3)
    ko = TOP / "build" / kernel.release / "pmemlab.ko"
    return ko if ko.exists() else None


def build_userspace() -> None:
    """pmemlab-run and the libraries the guest's tests and controller use, built here on the host
    when stale: the guest shares this tree, and a TCG guest building the optimised engine itself
    (the tests' session start does) sits silent for tens of minutes. One build at a time, as the
    module's (two beds may start at once); make test built them already, so this finds them up
    to date."""
    runner = TOP / "userspace" / "runner"
    if not (runner / "Makefile").exists():
        return
    (TOP / "build").mkdir(exist_ok=True)
    with open(TOP / "build" / ".userspace-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        res = subprocess.run(["make", "-s", f"-j{os.cpu_count() or 1}", "-C", str(runner), "pmemlab-run",
                              "libplcore.so", "libpltest.so"], capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stdout + res.stderr)
        die(f"building {runner}'s pmemlab-run and libraries failed: fix the build, or run make userspace", 3)


def snapshot_module(ko: Path) -> bytes:
    """The module as built, read under the build lock: the guest loads this copy, so a
    check-build beside it (make test runs the host tests while the bed's own guests boot; FRESH=1
    removes build/RELEASE) cannot take the module away between the build and the insmod."""
    with open(TOP / "build" / ".module-build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not ko.exists():
            die(f"{ko} went away after it was built (a build beside this one failed?)", 3)
        return ko.read_bytes()
