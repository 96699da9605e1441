"""scripts/vm's command line: the options (each with its VM_* variable), their checks, the builds
on the host, the guest lock, and a boot that stalls booted once more."""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import shutil
import tempfile
import time
from pathlib import Path

from . import boot, build, common, kernels, qemu, runner
from .common import die, parse_size, say


def add_guest_options(ap: argparse.ArgumentParser, env) -> None:
    """The options of the kernel, the accelerator and the guest's machine."""
    ap.add_argument("--kernel", default=None,
                    help="kernel release to boot, installed or in a build root of scripts/kernels.list "
                         "(VM_KERNEL; default: Debian's linux-image-amd64)")
    ap.add_argument("--kernel-tree", metavar="DIR", default=None,
                    help="boot the kernel built in this tree (DIR/arch/x86/boot/bzImage) and build the "
                         "module with KDIR=DIR (VM_KERNEL_TREE; e.g. the output of scripts/debug-kernel)")
    ap.add_argument("--accel", choices=["auto", "kvm", "tcg"], default=env.get("VM_ACCEL", "auto") or "auto",
                    help="accelerator (VM_ACCEL); auto probes KVM and falls back to TCG")
    ap.add_argument("--nvdimms", type=int, default=int(env.get("VM_NVDIMMS", "1")), help="emulated NVDIMMs (0..4)")
    ap.add_argument("--nvdimm-size", type=parse_size, default=parse_size(env.get("VM_NVDIMM_SIZE", "1G")),
                    help="size of each NVDIMM (default 1G)")
    ap.add_argument("--memmap", default=env.get("VM_MEMMAP", ""),
                    help="DRAM-emulated pmem through memmap=SIZE!OFFSET (e.g. 256M, or 256M!1G)")
    ap.add_argument("--mem", type=parse_size, default=parse_size(env.get("VM_MEM", "2G")), help="guest RAM")
    ap.add_argument("--cpus", type=int, default=int(env.get("VM_CPUS", "2")), help="guest vCPUs")
    ap.add_argument("--smt", action="store_true", default=env.get("VM_SMT", "") == "1",
                    help="two SMT threads per core (QEMU -smp ...,threads=2; VM_SMT=1): CPUs 2k and 2k+1 are "
                         "siblings; --cpus must be a multiple of 2 x --numa-nodes")
    ap.add_argument("--cpu-model", default=env.get("VM_CPU_MODEL", ""),
                    help="QEMU CPU model instead of virtme-ng's (VM_CPU_MODEL; e.g. Skylake-Server-v4: an "
                         "Intel model whose MSR 0x1A4 the module treats as the prefetcher control)")
    ap.add_argument("--cpuless-node", type=parse_size, default=parse_size(env.get("VM_CPULESS_NODE", "0")),
                    help="add a NUMA node with this much memory and no CPUs (the last node; how CXL "
                         "memory appears); the RAM of --mem stays with the vCPUs (VM_CPULESS_NODE)")
    ap.add_argument("--numa-nodes", type=int, default=int(env.get("VM_NUMA_NODES", "1")),
                    help="NUMA nodes, each with an equal share of --mem and of the vCPUs (VM_NUMA_NODES; "
                         "1..--cpus; the NVDIMMs are on node 0)")


def add_cxl_options(ap: argparse.ArgumentParser, env) -> None:
    """The options of the CXL devices and the HMAT."""
    ap.add_argument("--cxl", action="store_true", default=env.get("VM_CXL", "") == "1",
                    help="two CXL type-3 memory devices behind a CXL host bridge (q35 with a pxb-cxl and two "
                         "root ports, one CXL fixed memory window), each backed by its own host files, and the "
                         "CXL lanes set up in the guest (VM_CXL=1; QEMU from bookworm-backports, see "
                         "scripts/install-deps; implies --hmat)")
    ap.add_argument("--cxl-pmem-size", type=parse_size, default=parse_size(env.get("VM_CXL_PMEM_SIZE", "256M")),
                    help="persistent capacity of each CXL device (256M: one 2-way pmem region of 512 MiB)")
    ap.add_argument("--cxl-ram-size", type=parse_size, default=parse_size(env.get("VM_CXL_RAM_SIZE", "512M")),
                    help="volatile capacity of each CXL device (512M: two 2-way ram regions of 512 MiB; 0: none)")
    ap.add_argument("--cxl-gran", type=int, default=int(env.get("VM_CXL_GRAN", "4096")),
                    help="interleave granularity of the CXL regions, bytes (4096)")
    ap.add_argument("--cxl-namespaces", default=env.get("VM_CXL_NAMESPACES", "64M,32M,32M"),
                    help="sizes of the fsdax namespaces made on the CXL pmem region (64M,32M,32M: the first for "
                         "the module and the byte tests, the second and third for the outside check of "
                         "per-device writes, the third on a partition 4 KiB in)")
    ap.add_argument("--cxl-dir", type=Path, default=Path(env["VM_CXL_DIR"]) if env.get("VM_CXL_DIR") else None,
                    help="keep the CXL devices' backing files and devices.json here after the guest (VM_CXL_DIR; "
                         "default: the temporary directory, removed)")
    ap.add_argument("--hmat", action="store_true", default=env.get("VM_HMAT", "") == "1",
                    help="an ACPI HMAT with known access latency and bandwidth for every initiator and memory "
                         "node (QEMU -numa hmat-lb; VM_HMAT=1), given to the guest in PMEMLAB_HMAT")


def add_run_options(ap: argparse.ArgumentParser, env) -> None:
    """The options of the run: limits, module, log, verdict, the command."""
    ap.add_argument("--timeout", type=float, default=float(env.get("VM_TIMEOUT", "2400")),
                    help="seconds before the guest is killed")
    ap.add_argument("--boot-timeout", type=float, default=float(env.get("VM_BOOT_TIMEOUT", "300")),
                    help="seconds the guest may take to reach its script (VM_BOOT_TIMEOUT; 300: a TCG boot takes "
                         "12-62 s); a boot that stalls before is killed and booted once more")
    ap.add_argument("--probe-timeout", type=float, default=45.0, help="seconds the KVM probe may take")
    ap.add_argument("--no-module", action="store_true", help="do not build the module")
    ap.add_argument("--allow-log", default=env.get("VM_LOG_ALLOW", ""),
                    help="regex of kernel log lines that do not fail the run")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    ap.add_argument("--log", type=Path, help="copy the guest's kernel log here")
    ap.add_argument("--verdict", type=Path,
                    help="write the bed's own findings here, one per line (empty: clean boot and log)")
    ap.add_argument("--list-kernels", action="store_true",
                    help="print the installed kernels of scripts/kernels.list (with headers), in its order, and exit "
                         "(with --cxl: those that run both CXL lanes)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="command to run in the guest (default: a shell check)")


def parse_args(description: str, argv: list[str] | None = None) -> argparse.Namespace:
    env = os.environ
    ap = argparse.ArgumentParser(prog="scripts/vm", description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    add_guest_options(ap, env)
    add_cxl_options(ap, env)
    add_run_options(ap, env)
    return ap.parse_args(argv)


def check_machine(args) -> None:
    if not 0 <= args.nvdimms <= 4:
        die("--nvdimms must be 0..4")
    if not 1 <= args.numa_nodes <= args.cpus:
        die(f"--numa-nodes must be 1..{args.cpus} (one vCPU per node at least)")
    if args.smt and args.cpus % (2 * args.numa_nodes):
        die(f"--smt needs --cpus a multiple of {2 * args.numa_nodes} (two threads per core, whole cores per node)")
    if not (common.VENV_BIN / "vng").exists():
        die("virtme-ng missing: run scripts/install-deps")


def check_cxl(args, kernel: kernels.Kernel) -> None:
    """--cxl: a kernel with the CXL drivers and device sizes the decoders take; implies --hmat."""
    args.hmat = True
    why = kernels.cxl_kernel_lacks(kernel, ram=args.cxl_ram_size > 0)
    if why:
        die(f"--cxl needs a kernel with the CXL drivers: {kernel.release} lacks {why}")
    if args.cxl_pmem_size % (256 << 20) or args.cxl_ram_size % (256 << 20) or not args.cxl_pmem_size:
        die("--cxl-pmem-size and --cxl-ram-size must be multiples of 256M (the decoders' unit), pmem above 0")
    if args.cxl_gran not in (256, 512, 1024, 2048, 4096, 8192, 16384):
        die("--cxl-gran must be a power of two from 256 to 16384")


def build_for(args, kernel: kernels.Kernel) -> bytes | None:
    """pmemlab-run and its libraries, then the module for the kernel (None: --no-module, or no
    module in this tree): the module's bytes as built."""
    start = time.monotonic()
    build.build_userspace()
    if time.monotonic() - start > 1:
        say(f"pmemlab-run and its libraries built in {time.monotonic() - start:.1f} s")
        start = time.monotonic()
    ko = None if args.no_module else build.build_module(kernel)
    ko_image = build.snapshot_module(ko) if ko else None
    if ko:
        say(f"module for {kernel.release} built (or up to date) in {time.monotonic() - start:.1f} s")
    return ko_image


@contextlib.contextmanager
def guest_lock(path: str | None):
    """PMEMLAB_VM_LOCK=FILE: one guest at a time on this machine (two TCG guests on two host
    cores deschedule each other's vCPUs for 100+ ms and fail timing tests)."""
    if not path:
        yield
        return
    with open(path, "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for {path} (another guest is running)")
            waited = time.monotonic()
            fcntl.flock(lock, fcntl.LOCK_EX)
            say(f"waited {time.monotonic() - waited:.0f} s for {path}")
        yield


def boot_in(tmp: Path, args, cmd: list[str], kernel: kernels.Kernel, ko_image: bytes | None, accel: str) -> int:
    """One boot in tmp, the module's bytes copied into it first."""
    ko = None
    if ko_image is not None:
        ko = tmp / "pmemlab.ko"
        ko.write_bytes(ko_image)
    return boot.boot(args, cmd, kernel, ko, accel, tmp)


def boot_twice(args, cmd: list[str], kernel: kernels.Kernel, ko_image: bytes | None, accel: str) -> int:
    """Each boot in a fresh temporary directory, removed after unless --keep; a boot that stalls
    before the guest's script is booted once more; two stalls fail (99)."""
    for attempt in (1, 2):
        tmp = Path(tempfile.mkdtemp(prefix="pmemlab-vm-"))
        try:
            return boot_in(tmp, args, cmd, kernel, ko_image, accel)
        except runner.BootStalled as stalled:
            what = (f"stalled: the guest did not reach its script within {args.boot_timeout:.0f} s"
                    if stalled.ended is None else
                    f"ended: QEMU exited {stalled.ended:.0f} s in, before the guest reached its script")
            say(f"boot {attempt} of 2 of {kernel.release} {what} (no pmemlab code had run; console, last "
                f"lines):\n{stalled}")
        finally:
            if args.keep:
                say(f"kept {tmp}")
            else:
                shutil.rmtree(tmp, ignore_errors=True)
    say(f"FAIL: the guest stalled before its script twice, or ended before it (--boot-timeout "
        f"{args.boot_timeout:.0f} s)")
    return 99


def main(description: str, argv: list[str] | None = None) -> int:
    args = parse_args(description, argv)
    if args.list_kernels:
        print("\n".join(kernels.cxl_kernels() if args.cxl else kernels.guest_kernels()))
        return 0
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        cmd = ["sh", "-c", "ndctl list -N; ls -l /dev/pmem*"]
    check_machine(args)
    kernel = kernels.select_kernel(args.kernel, args.kernel_tree)
    args.qemu = qemu.guest_qemu(args.cxl)
    if args.cxl:
        check_cxl(args, kernel)
    ko_image = build_for(args, kernel)
    accel = runner.choose_accel(args.accel, kernel, args.probe_timeout)
    with guest_lock(os.environ.get("PMEMLAB_VM_LOCK")):
        return boot_twice(args, cmd, kernel, ko_image, accel)
