"""One boot end to end: the guest's machine as QEMU and virtme-ng options, its script, the run under
the watchdog, and the verdict (exit status, kernel log, namespace set-up, time-out)."""
from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

from . import guestscript, logscan, qemu, runner, topology
from .common import TOP, VENV_BIN, die, say
from .kernels import Kernel


class Layout:
    """What a boot derives from its options and its QEMU: the memory of the CPU-less node and in
    all (MiB), the volatile CXL capacity (QEMU 8.0) and the CXL generic port (QEMU 9.2)."""

    def __init__(self, args, qemu_ver: tuple[int, int]) -> None:
        self.qemu_ver = qemu_ver
        self.node1_mb = args.cpuless_node >> 20
        self.mem_mb = (args.mem >> 20) + self.node1_mb
        self.cxl_ram = args.cxl_ram_size if qemu_ver >= (8, 0) else 0  # volatile CXL memory: QEMU 8.0
        self.generic_port = args.cxl and qemu_ver >= (9, 2)  # -object acpi-generic-port: QEMU 9.2


def machine_options(args, lay: Layout, accel: str) -> list[str]:
    """QEMU's machine, memory, CPU model, firmware and -smp."""
    machine = "q35,nvdimm=on,cxl=on" if args.cxl else "pc,nvdimm=on"
    maxmem = lay.mem_mb + (args.nvdimms + 1) * (args.nvdimm_size >> 20)
    out = [f"-machine {machine}{',hmat=on' if args.hmat else ''},accel={accel}",
           f"-m {lay.mem_mb}M,slots={max(args.nvdimms, 1) + 1},maxmem={maxmem}M"]
    cpu = args.cpu_model or ("max" if args.cxl else "")
    if args.cxl:
        # x86 refuses to invalidate CPU caches for a new region under a hypervisor ("Failed to
        # synchronize CPU cache state", a WARN on 6.12; pmem/ndctl#250): hide the CPUID bit (the
        # guest still knows QEMU by its DMI vendor)
        cpu += ",-hypervisor"
    if cpu:
        out.append(f"-cpu {cpu}")  # after virtme-ng's own -cpu: QEMU takes the last
    if args.qemu:
        out += qemu.qemu_data_args(args.qemu)
    return out + topology.smp_options(args.numa_nodes, args.cpus, args.smt)


def nvdimm_options(args, tmp: Path) -> list[str]:
    """The NVDIMMs, each a fresh sparse file in tmp."""
    out = []
    for i in range(args.nvdimms):
        img = tmp / f"nvdimm{i}.img"
        with open(img, "wb") as fh:
            fh.truncate(args.nvdimm_size)
        out.append(f"-object memory-backend-file,id=nv{i},share=on,mem-path={img},size={args.nvdimm_size}")
        out.append(f"-device nvdimm,id=nvdimm{i},memdev=nv{i},label-size=128K")
    return out


def qemu_options(args, lay: Layout, accel: str, tmp: Path):
    """QEMU's options, the HMAT's entries and the CXL devices' directory (None without --cxl)."""
    opts = machine_options(args, lay, accel)
    hmat: list[tuple[int, int, int, int]] = []
    if args.hmat:
        hmat = topology.hmat_entries(args.numa_nodes, bool(lay.node1_mb), lay.generic_port)
        opts += topology.hmat_options(hmat)
    cxl_dir = None
    if args.cxl:
        cxl_dir = (args.cxl_dir or tmp / "cxl").resolve()
        cxl_dir.mkdir(parents=True, exist_ok=True)
        gp_node = args.numa_nodes + (1 if lay.node1_mb else 0) if lay.generic_port else None
        opts += topology.cxl_devices(cxl_dir, args.cxl_pmem_size, lay.cxl_ram, args.cxl_gran, lay.qemu_ver, gp_node)
    return opts + nvdimm_options(args, tmp), hmat, cxl_dir


def kernel_append(args, lay: Layout) -> tuple[list[str], str]:
    """The guest kernel's command line additions, and the memmap= given ('' without --memmap)."""
    # A ring buffer that does not wrap in a whole test session: the verdict scans the log at the
    # end (a splat pushed out by later lines would go unseen) and tests look for kernel lines
    # printed long before (the TSC verdict at boot).
    append = ["log_buf_len=16M"]
    memmap = ""
    if args.memmap:
        size, _, offset = args.memmap.partition("!")
        if not offset:
            offset = f"{lay.mem_mb // 2}M"
        memmap = f"{size}!{offset}"
        append.append(f"memmap={memmap}")
    if args.cxl:
        append.append("memhp_default_state=offline")  # a CXL ram region is onlined by daxctl, as asked
    return append, memmap


def vng_command(args, kernel: Kernel, lay: Layout, accel: str, tmp: Path, opts: list[str],
                cxl_dir: Path | None, append: list[str]) -> list[str]:
    """virtme-ng's command line: the kernel, the shared directories, QEMU's options, the script."""
    vng = [str(VENV_BIN / "vng"), "--run", str(kernel.image), "--disable-microvm", "--verbose",
           "--memory", f"{lay.mem_mb}M", "--cpus", str(args.cpus), f"--rwdir={tmp}", f"--rwdir={TOP}",
           "--qemu-opts=" + " ".join(opts), "--exec", f"bash {tmp}/guest.sh"]
    if cxl_dir and tmp not in cxl_dir.parents:
        vng.append(f"--rwdir={cxl_dir}")
    if args.qemu:
        vng += ["--qemu", args.qemu]
    if cxl_dir:
        # QEMU emulates CXL memory as I/O and shares only RAM with vhost-user's virtiofsd: a file
        # buffer on the CXL node made it panic (FindMemoryRegion) and every file access of the guest
        # hang (issue 33 item 7). QEMU's own 9p reaches such buffers through its address space.
        vng.append("--force-9p")
    vng += topology.numa_options(args.numa_nodes, lay.mem_mb, args.cpus, lay.node1_mb, explicit=args.hmat,
                                 generic_port=lay.generic_port)
    if accel == "tcg":
        vng.append("--disable-kvm")
    return vng + [f"--append={a}" for a in append]


def banner(args, kernel: Kernel, lay: Layout, memmap: str) -> str:
    """The "vm: booting ..." line's text: the guest's machine in one line."""
    cxl = f", 2 CXL devices ({args.cxl_pmem_size >> 20} MiB pmem, {lay.cxl_ram >> 20} MiB ram each)"
    return (f"booting {kernel.release} ({args.cpus} vCPUs, {lay.mem_mb} MiB, {args.nvdimms} x "
            f"{args.nvdimm_size >> 20} MiB NVDIMM{', memmap=' + memmap if memmap else ''}"
            f"{f', {args.numa_nodes} NUMA nodes' if args.numa_nodes > 1 else ''}"
            f"{f', a CPU-less node of {lay.node1_mb} MiB' if lay.node1_mb else ''}"
            f"{cxl if args.cxl else ''}"
            f"{', HMAT' if args.hmat else ''}; QEMU {lay.qemu_ver[0]}.{lay.qemu_ver[1]})")


def run_guest(args, vng: list[str], tmp: Path) -> tuple[str, float]:
    """Run virtme-ng (QEMU) with the console into tmp/console.log and the command's output copied
    to stdout as it comes; its outcome (runner.wait_guest) and the seconds it took."""
    tail = runner.Tail(tmp / "output.log")
    tail.start()
    start = time.monotonic()
    with open(tmp / "console.log", "w") as con:
        env = qemu.vng_env()
        if args.qemu:
            env.update(qemu.qemu_env(args.qemu))
        proc = subprocess.Popen(vng, stdout=con, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)

        # QEMU runs in its own session (so a time-out can kill it whole); when this script is
        # itself terminated, take the guest down too instead of leaving it orphaned.
        def terminate(signum, _frame):
            runner.kill_group(proc)
            raise SystemExit(128 + signum)

        for sig in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, terminate)
        try:
            outcome = runner.wait_guest(proc, tmp / "phases", args.timeout, args.boot_timeout)
        except KeyboardInterrupt:
            runner.kill_group(proc)
            proc.wait()
            tail.stop.set()
            die("interrupted", 130)
    tail.stop.set()
    tail.join()
    return outcome, time.monotonic() - start


def read(path: Path, default: str = "") -> str:
    return path.read_text(errors="replace") if path.exists() else default


def problems_of(args, tmp: Path, timed_out: bool, log: str, console_text: str, qemu_ver) -> list[str]:
    """The bed's own findings: a time-out, no exit status, a bad kernel log, a failed set-up."""
    problems = []
    if timed_out:
        problems.append(f"guest did not finish within {args.timeout:.0f} s")
    if not (tmp / "rc").exists():
        problems.append("guest ended without an exit status (crash, panic or boot failure)")
    bad = logscan.scan_log(log + "\n" + console_text)
    if args.cxl:
        bad += logscan.firmware_errors(log or console_text, qemu_ver)
    if args.allow_log:
        allow = re.compile(args.allow_log)
        bad = [line for line in bad if not allow.search(line)]
    if bad:
        problems.append("kernel log shows: " + "; ".join(sorted(set(b.strip() for b in bad))[:8]))
    if guest_rc(tmp) == 90:
        why = read(tmp / "setup.err").strip()
        problems.append("namespace set-up failed in the guest" + (":\n" + why[-1500:] if why else ""))
    return problems


def guest_rc(tmp: Path) -> int:
    rc_path = tmp / "rc"
    return int(rc_path.read_text().strip() or 1) if rc_path.exists() else 1


def verdict(args, tmp: Path, outcome: str, elapsed: float, qemu_ver: tuple[int, int]) -> int:
    """The boot's exit status, with its timing, root file system and findings on stderr."""
    console_text = (tmp / "console.log").read_text(errors="replace")
    if outcome == "boot-stalled":
        raise runner.BootStalled("\n".join(console_text.splitlines()[-40:]))
    if outcome == "exited" and not (tmp / "phases").exists() and not (tmp / "rc").exists():
        # QEMU gone before the guest's first stage mark: once in CI the SMT lane's 4-vCPU guest
        # ended 7 s in, during PCI enumeration, with no panic on the console (under TCG, beside
        # another guest); no pmemlab code had run, so it is booted again as a stall is
        raise runner.BootStalled("\n".join(console_text.splitlines()[-40:]), ended=elapsed)
    dmesg = read(tmp / "dmesg.txt")
    if args.log:
        args.log.write_text(dmesg or console_text)
    problems = problems_of(args, tmp, outcome == "timeout", dmesg, console_text, qemu_ver)
    rc = guest_rc(tmp)
    say(f"times: {logscan.phase_times(tmp / 'phases', elapsed)}")
    rootfs = read(tmp / "rootfs", "unknown").strip()
    why_9p = (" (a CXL guest: virtiofsd cannot reach buffers on the emulated CXL node)" if args.cxl else
              " (virtio-fs needs the Rust virtiofsd: scripts/install-deps unpacks it; 9p is slower)")
    say(f"root file system {rootfs}" + ("" if rootfs == "virtiofs" else why_9p))
    if args.verdict:
        args.verdict.write_text("".join(p + "\n" for p in problems))
    if problems:
        tail_lines = "\n".join((dmesg or console_text).splitlines()[-40:])
        say(f"kernel log (last lines):\n{tail_lines}")
        for p in problems:
            say(f"FAIL: {p}")
        return rc if rc not in (0, 90) else 99
    say(f"guest command exited {rc} after {elapsed:.0f} s; kernel log clean")
    return rc


def boot(args, cmd: list[str], kernel: Kernel, ko: Path | None, accel: str, tmp: Path) -> int:
    """Boot the guest once in tmp and run cmd in it: its exit status, or the bed's 99 (a finding
    of its own); raises runner.BootStalled when the guest never reached its script."""
    lay = Layout(args, qemu.qemu_version(args.qemu))
    opts, hmat, cxl_dir = qemu_options(args, lay, accel, tmp)
    append, memmap = kernel_append(args, lay)
    (tmp / "guest.sh").write_text(guestscript.render(args, cmd, lay.cxl_ram, cxl_dir, hmat, ko, tmp))
    (tmp / "output.log").touch()
    vng = vng_command(args, kernel, lay, accel, tmp, opts, cxl_dir, append)
    say(banner(args, kernel, lay, memmap))
    outcome, elapsed = run_guest(args, vng, tmp)
    return verdict(args, tmp, outcome, elapsed, lay.qemu_ver)
