"""Unit tests of the test bed script (no guest boot)."""
from __future__ import annotations

import argparse
import functools
from types import SimpleNamespace

import pytest

from testlib import TOP, load_vm_script

vm = load_vm_script()


@pytest.mark.parametrize("line", [
    "[   12.3] WARNING: CPU: 1 PID: 77 at kmod/core.c:10 init+0x10/0x20 [pmemlab]",
    "[    4.0] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[    5.1] Oops: 0002 [#1] PREEMPT SMP NOPTI",
    "[   30.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [pmemlab/0:120]",
    "[   40.0] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1",
    "[   50.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "[   50.0] rcu: INFO: rcu_sched self-detected stall on CPU",
    "[    6.0] BUG: scheduling while atomic: pmemlab/0/99/0x00000002",
    "[    7.0] general protection fault, probably for non-canonical address 0xdead: 0000 [#1]",
    "[    8.0] kernel BUG at mm/slub.c:100!",
    # debug kernels (scripts/debug-kernel): KASAN, lockdep, hung tasks, debug objects
    "[    9.0] BUG: KASAN: slab-use-after-free in pmemlab_stop+0x1c/0x90 [pmemlab]",
    "[    9.1] WARNING: possible circular locking dependency detected",
    "[    9.2] WARNING: possible recursive locking detected",
    "[    9.3] WARNING: inconsistent lock state",
    "[    9.4] WARNING: suspicious RCU usage",
    "[    9.5] WARNING: bad unlock balance detected!",
    "[    9.6] WARNING: held lock freed!",
    "[    9.7] WARNING: lock held when returning to user space!",
    "[    9.8] WARNING: possible irq lock inversion dependency detected",
    "[    9.9] WARNING: HARDIRQ-safe -> HARDIRQ-unsafe lock order detected",
    "[   10.0] INFO: trying to register non-static key.",
    "[   10.1] INFO: task rmmod:321 blocked for more than 120 seconds.",
    "[   10.2] ODEBUG: free active (active state 0) object type: timer_list hint: tick+0x0/0x40 [pmemlab]",
    "[   10.3] kmemleak: 3 new suspected memory leaks (see /sys/kernel/debug/kmemleak)",
])
def test_scan_log_catches_splats(line: str) -> None:
    assert vm.scan_log("[ 0.0] Linux version 6.1\n" + line) == [line]


@pytest.mark.parametrize("line", [
    "[    0.5] ACPI: Added _OSI(Module Device)",
    "[    1.0] nd_pmem namespace0.0: unable to guarantee persistence of writes",
    "[    2.0] pmemlab: loaded, target /dev/pmem0 (1040187392 bytes, node 0)",
    "[    3.0] platform regulatory.0: Direct firmware load for regulatory.db failed with error -2",
    "[    0.1] kmemleak: Kernel memory leak detector initialized (mem pool available: 39000)",
    "[    0.2] kasan: KernelAddressSanitizer initialized",
    "[    0.3] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar",
])
def test_scan_log_ignores_ordinary_lines(line: str) -> None:
    assert vm.scan_log(line) == []


def test_parse_size() -> None:
    assert vm.parse_size("1G") == 1 << 30
    assert vm.parse_size("256M") == 256 << 20
    assert vm.parse_size("4096") == 4096
    with pytest.raises(argparse.ArgumentTypeError):
        vm.parse_size("1.5G")


def test_default_kernel_is_installed() -> None:
    from pathlib import Path
    kernel = vm.default_kernel()
    assert Path(f"/boot/vmlinuz-{kernel}").exists()


def test_guest_kernels_cover_the_matrix() -> None:
    """The bed's kernels are the list's five (scripts/kernels.list), Debian 12's default first, and
    each one it names is found with an image and a headers tree, on the host or in a build root."""
    import re
    kernels = vm.guest_kernels()
    assert kernels[0] == vm.default_kernel()
    assert len(set(kernels)) == len(kernels) == 5
    for pattern in (r"5\.10\.\d+-\d+-amd64", r"6\.1\.\d+-\d+-rt-amd64", r"6\.12\.\d+\+deb12-amd64",
                    r"7\.2\.\d+\+deb14-amd64"):
        assert any(re.fullmatch(pattern, k) for k in kernels), (pattern, kernels)
    for release in kernels:
        k = vm.Kernel.installed(release)
        assert k.image.exists() and (k.kdir / "Makefile").is_file(), release


def test_phase_times_from_the_guest_uptimes(tmp_path) -> None:
    """scripts/vm's timing line: each stage as the difference of the guest's uptimes, the rest of
    the host's wall time as QEMU's own start and exit; a guest that wrote no stages, said so."""
    phases = tmp_path / "phases"
    phases.write_text("booted 12.5\nnamespaces 20.0\ncommand 300.25\n")
    assert vm.phase_times(phases, 315.0) == \
        "boot 12 s, namespaces 8 s, command 280 s, QEMU start and exit 15 s (315 s in all)"
    phases.write_text("booted 12.5\n")  # the namespace set-up failed
    assert vm.phase_times(phases, 20.0) == "boot 12 s, QEMU start and exit 8 s (20 s in all)"
    assert vm.phase_times(tmp_path / "none", 9.6) == "10 s in all (no stage times from the guest)"


def test_a_boot_that_never_reaches_the_script_is_told_from_a_slow_command(tmp_path) -> None:
    """The bed waits for QEMU: a guest whose script wrote no stage mark within --boot-timeout is
    killed as a stalled boot (once in CI the rt kernel hung at boot and held the bed 2400 s); one
    that reached its script runs to --timeout; one that exits is waited for."""
    import subprocess
    phases = tmp_path / "phases"

    def qemu(seconds: float) -> subprocess.Popen:
        return subprocess.Popen(["sleep", str(seconds)], start_new_session=True)

    # the stand-in QEMUs outlast every limit here (ten minutes, killed by the limit), and the limit
    # not under test is a hang's: on a starved host (nice 19 beside two TCG guests) a 60 s sleep or
    # a 30 s timeout could have come first
    stalled = qemu(600)
    assert vm.wait_guest(stalled, phases, timeout=300, boot_timeout=1.5) == "boot-stalled"
    assert stalled.returncode is not None  # killed, not left behind
    phases.write_text("booted 12.5\n")
    slow = qemu(600)
    assert vm.wait_guest(slow, phases, timeout=2.5, boot_timeout=1.0) == "timeout"
    assert slow.returncode is not None
    assert vm.wait_guest(qemu(0.2), tmp_path / "none", timeout=300, boot_timeout=300) == "exited"


def _bed_without_qemu(monkeypatch, tmp_path, release: str) -> None:
    """main() up to boot(), with kernel `release`, no QEMU, no KVM probe, no guest lock."""
    monkeypatch.setattr(vm.kernels, "select_kernel", lambda r, tree: vm.Kernel(release, tmp_path, tmp_path))
    monkeypatch.setattr(vm.qemu, "guest_qemu", lambda cxl: "qemu")
    monkeypatch.setattr(vm.runner, "choose_accel", lambda requested, kernel, timeout: "tcg")
    monkeypatch.setattr(vm.common, "VENV_BIN", tmp_path)
    (tmp_path / "vng").write_text("")
    monkeypatch.delenv("PMEMLAB_VM_LOCK", raising=False)


def test_a_stalled_boot_is_booted_once_more_then_fails(tmp_path, monkeypatch, capsys) -> None:
    """main() boots a stalled guest a second time, in a fresh directory, saying so with the
    console's last lines; two stalls in a row fail the bed (exit 99) without a third boot."""
    _bed_without_qemu(monkeypatch, tmp_path, "6.1-rt")
    dirs: list = []

    def boot(outcomes):
        def fake(args, cmd, kernel, ko, accel, tmp):
            dirs.append(tmp)
            outcome = outcomes.pop(0)
            if outcome == "stall":
                raise vm.BootStalled("[  5.0] virtme initramfs: mounting hostfs...")
            return outcome
        return fake

    monkeypatch.setattr("sys.argv", ["scripts/vm", "--no-module", "--boot-timeout", "7", "--", "true"])
    monkeypatch.setattr(vm._boot, "boot", boot(["stall", 0]))
    assert vm.main() == 0
    assert len(dirs) == 2 and dirs[0] != dirs[1] and not any(d.exists() for d in dirs)
    err = capsys.readouterr().err
    assert "boot 1 of 2 of 6.1-rt stalled" in err and "within 7 s" in err and "mounting hostfs" in err
    dirs.clear()
    monkeypatch.setattr(vm._boot, "boot", boot(["stall", "stall", 0]))
    assert vm.main() == 99
    assert len(dirs) == 2
    assert "FAIL: the guest stalled before its script twice" in capsys.readouterr().err


def test_a_guest_that_ends_before_its_script_is_booted_again(tmp_path, monkeypatch, capsys) -> None:
    """QEMU gone before the guest's first stage mark (once in CI: the SMT lane's guest ended 7 s
    in, during PCI enumeration): verdict() calls it a boot that did not reach its script, and
    main() boots it once more saying so; a guest that reached its script and ended without an exit
    status is a failure as before, not booted again."""
    args = SimpleNamespace(log=None, verdict=None, timeout=900, boot_timeout=300, cxl=False, allow_log=None)
    (tmp_path / "console.log").write_text("[    1.946893] pci 0000:00:02.0: [1af4:105a] type 00 class 0x018000\n")
    with pytest.raises(vm.BootStalled) as ended:
        vm._boot.verdict(args, tmp_path, "exited", 7.2, (10, 0))
    assert ended.value.ended == pytest.approx(7.2) and "1af4:105a" in str(ended.value)
    (tmp_path / "phases").write_text("booted 1.0\n")
    assert vm._boot.verdict(args, tmp_path, "exited", 7.2, (10, 0)) == 1  # no exit status: a failure
    assert "guest ended without an exit status" in capsys.readouterr().err

    _bed_without_qemu(monkeypatch, tmp_path, "6.1")
    outcomes = ["ended", 0]

    def boot(args, cmd, kernel, ko, accel, tmp):
        if outcomes.pop(0) == "ended":
            raise vm.BootStalled("[  1.9] pci 0000:00:02.0", ended=7.0)
        return 0

    monkeypatch.setattr("sys.argv", ["scripts/vm", "--no-module", "--", "true"])
    monkeypatch.setattr(vm._boot, "boot", boot)
    assert vm.main() == 0 and not outcomes
    assert "boot 1 of 2 of 6.1 ended: QEMU exited 7 s in, before the guest reached its script" in capsys.readouterr().err


def _junit(path, tests: int, failures: int, skipped: int) -> None:
    path.write_text(f'<testsuites><testsuite name="pytest" tests="{tests}" failures="{failures}" '
                    f'errors="0" skipped="{skipped}"/></testsuites>')


def test_summary_adds_every_report_and_failed_boot(tmp_path) -> None:
    import subprocess
    import sys
    from testlib import TOP
    summary = [sys.executable, str(TOP / "scripts" / "test-summary"), str(tmp_path)]
    _junit(tmp_path / "host.xml", 10, 0, 1)
    _junit(tmp_path / "guest-6.1.xml", 5, 0, 0)
    _junit(tmp_path / "guest-6.12.xml", 4, 0, 0)
    res = subprocess.run(summary, capture_output=True, text=True)
    assert res.returncode == 0
    assert res.stdout.splitlines()[-1] == "total: 18 passed, 0 failed, 1 skipped"
    (tmp_path / "vm-failed-6.12").touch()
    res = subprocess.run(summary, capture_output=True, text=True)
    assert res.returncode == 1
    assert res.stdout.splitlines()[-1] == "total: 18 passed, 1 failed, 1 skipped"
    for path in tmp_path.iterdir():
        path.unlink()
    res = subprocess.run(summary, capture_output=True, text=True)
    assert res.returncode == 1 and res.stdout.splitlines()[-1] == "total: 0 passed, 1 failed, 0 skipped"


def _fake_tree(root, release: str = "6.1.192-pmemlab-debug", image: bool = True):
    (root / "include" / "config").mkdir(parents=True)
    (root / "include" / "config" / "kernel.release").write_text(release + "\n")
    (root / "Makefile").write_text("include /src/Makefile\n")
    if image:
        (root / "arch" / "x86" / "boot").mkdir(parents=True)
        (root / "arch" / "x86" / "boot" / "bzImage").write_bytes(b"\0")
    return root


def test_kernel_tree_boots_its_bzimage_and_builds_against_itself(tmp_path) -> None:
    tree = _fake_tree(tmp_path)
    kernel = vm.select_kernel(None, str(tree), env={})
    assert kernel.release == "6.1.192-pmemlab-debug"
    assert kernel.image == tree / "arch" / "x86" / "boot" / "bzImage"
    assert kernel.kdir == tree


def test_kernel_tree_from_the_environment(tmp_path) -> None:
    tree = _fake_tree(tmp_path)
    assert vm.select_kernel(None, None, env={"VM_KERNEL_TREE": str(tree)}).kdir == tree
    # an option on the command line overrides the other variable
    assert vm.select_kernel(None, str(tree), env={"VM_KERNEL": "6.1.0-56-amd64"}).kdir == tree


@pytest.mark.parametrize("release,tree_kind,env", [
    ("6.1.0-56-amd64", "good", {}),          # both options
    (None, "no-image", {}),                  # tree without a built kernel
    (None, "missing", {}),                   # no such directory
    (None, "no-release", {}),                # not a configured build tree
    (None, None, {"VM_KERNEL": "x", "VM_KERNEL_TREE": "y"}),  # both variables
])
def test_kernel_tree_refused(tmp_path, release, tree_kind, env) -> None:
    tree = {"good": lambda: _fake_tree(tmp_path / "t"),
            "no-image": lambda: _fake_tree(tmp_path / "t", image=False),
            "missing": lambda: tmp_path / "nothing",
            "no-release": lambda: _fake_tree(tmp_path / "t", release=""),
            None: lambda: None}[tree_kind]()
    with pytest.raises(SystemExit) as exc:
        vm.select_kernel(release, None if tree is None else str(tree), env=env)
    assert exc.value.code == 2


def test_installed_kernel_unchanged_without_a_tree() -> None:
    from pathlib import Path
    kernel = vm.select_kernel(None, None, env={})
    assert kernel.release == vm.default_kernel()
    assert kernel.image == Path(f"/boot/vmlinuz-{kernel.release}")
    assert kernel.kdir == Path(f"/lib/modules/{kernel.release}/build")


def test_kernel_tree_option_errors_before_any_boot(tmp_path) -> None:
    import subprocess
    import sys
    from testlib import TOP
    run = [sys.executable, str(TOP / "scripts" / "vm")]
    res = subprocess.run(run + ["--kernel-tree", str(tmp_path / "none"), "--", "true"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "holds no built kernel" in res.stderr
    res = subprocess.run(run + ["--kernel", "x", "--kernel-tree", str(tmp_path), "--", "true"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "not both" in res.stderr
    assert "--kernel-tree DIR" in subprocess.run(run + ["--help"], capture_output=True, text=True).stdout


def test_a_socket_per_numa_node() -> None:
    assert vm.socket_per_node(1, 2) == []
    assert vm.socket_per_node(2, 2) == ["-smp 2,sockets=2,cores=1,threads=1"]
    assert vm.socket_per_node(2, 4) == ["-smp 4,sockets=2,cores=2,threads=1"]
    assert vm.socket_per_node(2, 5) == []


def test_smt_gives_two_threads_per_core() -> None:
    """--smt: QEMU's -smp with threads=2 (CPUs 2k and 2k+1 siblings), a socket per NUMA node;
    without it the topology is socket_per_node's; an odd split is refused before any boot."""
    assert vm.smp_options(1, 4, True) == ["-smp 4,sockets=1,cores=2,threads=2"]
    assert vm.smp_options(2, 4, True) == ["-smp 4,sockets=2,cores=1,threads=2"]
    assert vm.smp_options(1, 2, True) == ["-smp 2,sockets=1,cores=1,threads=2"]
    assert vm.smp_options(2, 4, False) == vm.socket_per_node(2, 4)
    assert vm.smp_options(1, 2, False) == []
    import subprocess
    res = subprocess.run([str(TOP / "scripts" / "vm"), "--smt", "--cpus", "3", "--", "true"],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "--smt needs --cpus a multiple of 2" in res.stderr, res.stderr


def test_numa_nodes_share_memory_and_vcpus() -> None:
    assert vm.numa_options(1, 2048, 2) == []
    assert vm.numa_options(2, 2048, 2) == ["--numa", "1024M,cpus=0", "--numa", "1024M,cpus=1"]
    assert vm.numa_options(2, 2049, 5) == ["--numa", "1024M,cpus=0-1", "--numa", "1025M,cpus=2-4"]
    # a CPU-less node (CXL memory) after the CPU nodes, its memory on top of theirs
    assert vm.numa_options(1, 2560, 2, 512) == ["--numa", "2048M,cpus=0-1", "--numa", "512M"]
    assert vm.numa_options(2, 2560, 2, 512) == ["--numa", "1024M,cpus=0", "--numa", "1024M,cpus=1", "--numa", "512M"]


COLLECT_WITH_MARKERS = """
import json, sys, pytest
class Record:
    items = {}
    def pytest_collection_finish(self, session):
        for item in session.items:
            self.items[item.nodeid.split("/")[-1]] = sorted(m.name for m in item.iter_markers())
rec = Record()
code = pytest.main(["-q", "--collect-only", "-p", "no:cacheprovider", "tests/guest"], plugins=[rec])
print("MARKERS " + json.dumps(rec.items))
sys.exit(code)
"""


@functools.cache
def guest_test_markers() -> dict[str, list[str]]:
    """Every guest test (file::name[params]) with its markers, collected as pytest sees them."""
    import json
    import subprocess
    import sys
    from testlib import TOP
    res = subprocess.run([sys.executable, "-c", COLLECT_WITH_MARKERS], capture_output=True, text=True, cwd=TOP,
                         timeout=300)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    return json.loads(res.stdout.split("MARKERS ", 1)[1])


EVERY_OP_ITEM = {f"test_module.py::test_every_op_is_consistent[{target}-{mode}-{pattern}]"
                 for target in ("fsdax", "dram") for mode in ("latency", "bandwidth")
                 for pattern in ("seq", "rand", "stride", "hotspot")}


def test_kernel_matrix_covers_what_every_kernel_must_prove() -> None:
    """The other kernels of make test run only the guest tests marked kernel_matrix: among them
    the module's build and load, every op x pattern x mode on both targets, the fuzz, the teardown
    paths (rmmod and abort mid-run, a namespace or a CPU gone under a run, load/run/unload cycles)
    and a run longer than every watchdog threshold; never the soak or the controller."""
    markers = guest_test_markers()
    matrix = {name for name, marks in markers.items() if "kernel_matrix" in marks}
    assert matrix and matrix < set(markers)
    required = {"test_chain.py::test_module_matches_guest_kernel", "test_chain.py::test_insmod_sysfs_rmmod",
                "test_fuzz.py::test_fuzz_every_attribute", "test_module.py::test_rmmod_mid_run",
                "test_module.py::test_abort_during_latency_run", "test_module.py::test_long_run_without_lockup",
                "test_reliability.py::test_namespace_disabled_under_a_run",
                "test_reliability.py::test_cpu_taken_offline_under_a_run",
                "test_reliability.py::test_hundred_load_run_unload_cycles_leak_nothing"}
    required |= EVERY_OP_ITEM
    assert required <= matrix, sorted(required - matrix)
    assert not [t for t in matrix if "soak" in markers[t] or t.startswith("test_controller.py")], sorted(matrix)


def test_make_check_is_load_every_op_and_pattern_unload() -> None:
    """make check runs the guest tests marked check: the namespace, the module built for the
    booted kernel, insmod/sysfs/rmmod, and every op in both modes on every pattern and both
    targets; nothing slow (no soak, no long run, no controller)."""
    markers = guest_test_markers()
    check = {name for name, marks in markers.items() if "check" in marks}
    required = {"test_chain.py::test_namespace_is_fsdax_with_dax", "test_chain.py::test_module_matches_guest_kernel",
                "test_chain.py::test_insmod_sysfs_rmmod"} | EVERY_OP_ITEM
    assert required <= check, sorted(required - check)
    slow = [t for t in check if {"slow", "soak"} & set(markers[t]) or t.startswith("test_controller.py")]
    assert not slow, slow


def test_two_node_tests_run_in_make_test() -> None:
    """The tests that need two NUMA nodes (latency-matrix and bw-matrix across nodes) would be
    skipped in every guest of one node: make test boots the last kernel's guest with two and
    selects them there beside the kernel matrix."""
    markers = guest_test_markers()
    two = {name for name, marks in markers.items() if "two_nodes" in marks}
    assert {"test_oneliners_on_module.py::test_matrices_across_two_nodes[latency-matrix]",
            "test_oneliners_on_module.py::test_matrices_across_two_nodes[bw-matrix]"} <= two
    script = (TOP / "scripts" / "run-tests").read_text()
    branch = script[script.index('[ "$kernel" = "$last" ]'):]
    branch = branch[:branch.index("elif")]
    assert 'select=(-m "kernel_matrix or two_nodes")' in branch and "node_args=(--numa-nodes 2)" in branch


@pytest.mark.parametrize("expr", ["kernel_matrix", "kernel_matrix or two_nodes", "kernel_matrix or cxl",
                                  "kernel_matrix or two_nodes or cxl"])
def test_a_matrix_guest_gets_the_files_of_its_selection(expr: str) -> None:
    """run-tests gives a kernel-matrix guest the files scripts/guest-test-files names for its -m:
    every file with a selected test, none without one (the controller's files stay out)."""
    import subprocess
    import sys
    res = subprocess.run([sys.executable, str(TOP / "scripts" / "guest-test-files"), expr], capture_output=True,
                         text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    files = res.stdout.split()
    assert all(f.startswith("tests/guest/test_") and (TOP / f).is_file() for f in files), files
    wanted = set(expr.split(" or "))
    selected = {name.split("::")[0] for name, marks in guest_test_markers().items() if wanted & set(marks)}
    assert {f.rsplit("/", 1)[1] for f in files} == selected
    assert "test_controller.py" not in selected and "test_params_three_ways.py" not in selected
    script = (TOP / "scripts" / "run-tests").read_text()
    assert '"$top/scripts/guest-test-files" "${select[1]}"' in script and '"${files[@]}"' in script


def test_guest_test_files_refuses_an_expression_that_selects_nothing() -> None:
    import subprocess
    import sys
    for expr, why in (("no_such_marker", "no guest test is marked"), ("kernel_matrix and (", "Wrong expression")):
        res = subprocess.run([sys.executable, str(TOP / "scripts" / "guest-test-files"), expr], capture_output=True,
                             text=True, timeout=300)
        assert res.returncode == 2 and not res.stdout, res.stdout
        assert len(res.stderr.strip().splitlines()) == 1 and why in res.stderr, res.stderr


def test_numa_options_for_an_hmat_and_a_generic_port() -> None:
    # an HMAT names every node: the one node is given explicitly, nodes without CPUs name node 0
    assert vm.numa_options(1, 2048, 2, explicit=True) == ["--numa", "2048M,cpus=0-1"]
    assert vm.numa_options(1, 2560, 2, 512, explicit=True) == ["--numa", "2048M,cpus=0-1", "--numa",
                                                               "512M,initiator=0"]
    # the CXL host bridge's generic port: an empty node after the others
    assert vm.numa_options(2, 2048, 2, generic_port=True) == ["--numa", "1024M,cpus=0", "--numa", "1024M,cpus=1",
                                                              "--numa", "0,initiator=0"]


def test_hmat_entries_give_every_memory_one_best_initiator() -> None:
    entries = vm.hmat_entries(2, cpuless=True, generic_port=True)
    by = {(i, t): (lat, bw) for i, t, lat, bw in entries}
    assert sorted(by) == [(i, t) for i in range(2) for t in range(4)]
    assert by[(0, 0)] == by[(1, 1)] == vm.HMAT_LOCAL and by[(0, 1)] == by[(1, 0)] == vm.HMAT_REMOTE
    for target in range(4):  # the best latency and bandwidth come from the same single node
        best_lat = min(by[(i, target)][0] for i in range(2))
        best_bw = max(by[(i, target)][1] for i in range(2))
        assert [i for i in range(2) if by[(i, target)] == (best_lat, best_bw)] != []
        assert sum(by[(i, target)][0] == best_lat for i in range(2)) == 1
    opts = vm.hmat_options([(0, 2, 100, 16384)])
    assert opts == ["-numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-latency,latency=100",
                    "-numa hmat-lb,initiator=0,target=2,hierarchy=memory,data-type=access-bandwidth,bandwidth=16384M"]


def test_cxl_devices_are_fresh_files_with_their_map(tmp_path) -> None:
    import json

    stale = tmp_path / "cxl0-pmem.raw"
    stale.write_bytes(b"\x01" * 4096)
    opts = vm.cxl_devices(tmp_path, 256 << 20, 512 << 20, 4096, (10, 0), gp_node=1)
    assert opts[0] == "-device pxb-cxl,bus_nr=12,bus=pcie.0,id=cxl.1"
    assert "-device cxl-type3,bus=rp1,lsa=cxl-lsa1,persistent-memdev=cxl-pmem1,volatile-memdev=cxl-ram1,id=cxl-dev1,sn=4097" in opts
    assert "-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size=4096M,cxl-fmw.0.interleave-granularity=4096" in opts
    assert opts[-1] == "-object acpi-generic-port,id=gp0,pci-bus=cxl.1,node=1"
    assert stale.stat().st_size == 256 << 20 and stale.read_bytes()[:4096] == bytes(4096)  # zeros again
    doc = json.loads((tmp_path / "devices.json").read_text())
    assert [(d["serial"], d["pmem_file"], d["ram_size"]) for d in doc["devices"]] == [
        (0x1000, "cxl0-pmem.raw", 512 << 20), (0x1001, "cxl1-pmem.raw", 512 << 20)]
    # QEMU 7.2: one persistent memdev=, no volatile memory, no generic port
    (tmp_path / "old").mkdir()
    old = vm.cxl_devices(tmp_path / "old", 256 << 20, 0, 4096, (7, 2), gp_node=None)
    assert any("memdev=cxl-pmem0," in o and "persistent" not in o and "volatile" not in o for o in old)
    assert not any("acpi-generic-port" in o or "cxl-ram" in o for o in old)


# as QEMU 7.2 and Debian's 6.1 print them (a --cxl guest, scripts/vm --cxl with VM_CXL_QEMU=qemu 7.2)
UID_BUG = ("[    0.884241] ACPI BIOS Error (bug): Failure creating named object [\\_SB.CL0C._UID], AE_ALREADY_EXISTS "
           "(20220331/dswload2-326)")
UID_BUG_NEXT = "[    0.884241] ACPI Error: AE_ALREADY_EXISTS, During name lookup/catalog (20220331/psobject-220)"


@pytest.mark.parametrize("log,qemu,flagged", [
    ([UID_BUG, UID_BUG_NEXT, "[ 1.2] ACPI: PCI Root Bridge [CL0C] (domain 0000 [bus 0c-0e])"], (7, 2), []),
    ([UID_BUG, UID_BUG_NEXT], (10, 0), [UID_BUG, UID_BUG_NEXT]),  # a fixed QEMU: a new cause
    ([UID_BUG_NEXT], (7, 2), [UID_BUG_NEXT]),  # ACPICA's line alone is not the known one
    ([UID_BUG.replace("CL0C", "PCI0")], (7, 2), [UID_BUG.replace("CL0C", "PCI0")]),
    (["[ 0.9] ACPI Error: AE_NOT_FOUND, While resolving a named reference package element"], (10, 0),
     ["[ 0.9] ACPI Error: AE_NOT_FOUND, While resolving a named reference package element"]),
    (["[ 0.9] ACPI: SRAT: Node 1 PXM 1 [mem 0x80000000-0x9fffffff]"], (10, 0), []),
])
def test_firmware_errors_fail_a_cxl_guest_but_qemu_7_2_s_duplicate_uid(log, qemu, flagged) -> None:
    assert vm.firmware_errors("\n".join(log), qemu) == flagged
    assert vm.scan_log("\n".join(log)) == []  # not a splat: the other guests do not judge firmware tables


def test_cxl_kernels_are_those_with_every_option(tmp_path, monkeypatch) -> None:
    cfg = tmp_path / ".config"
    cfg.write_text("".join(f"CONFIG_{o}=m\n" for o in vm.CXL_PMEM_CONFIG + vm.CXL_RAM_CONFIG))
    kernel = vm.Kernel("9.9.9-test", tmp_path / "bzImage", tmp_path)
    assert vm.cxl_kernel_lacks(kernel) == ""
    cfg.write_text(cfg.read_text().replace("CONFIG_DEV_DAX_CXL=m\n", "# CONFIG_DEV_DAX_CXL is not set\n"))
    assert vm.cxl_kernel_lacks(kernel) == "CONFIG_DEV_DAX_CXL" and vm.cxl_kernel_lacks(kernel, ram=False) == ""


def test_make_test_runs_the_cxl_lanes_and_checks_the_backing_files_after() -> None:
    """The guest of the first kernel that can run the CXL lanes boots with --cxl, its devices'
    backing files kept in the reports, selects the tests marked cxl beside its own, and the host
    then checks the files (tests/host/module/test_cxl_backing.py)."""
    markers = guest_test_markers()
    cxl = {name for name, marks in markers.items() if "cxl" in marks}
    assert {"test_cxl.py::test_pmem_lane_every_op_and_placement", "test_cxl.py::test_ram_lane_module_on_the_cxl_node",
            "test_cxl.py::test_ram_lane_user_backend_on_devdax",
            "test_cxl.py::test_per_device_writes_for_the_outside_check",
            "test_cxl.py::test_advertised_is_what_qemu_was_told_and_what_the_kernel_exposes"} <= cxl
    script = (TOP / "scripts" / "run-tests").read_text()
    assert '--list-kernels --cxl' in script and 'cxl_args=(--cxl --cxl-dir "$reports/cxl")' in script
    assert 'select=(-m "${select[1]} or cxl")' in script
    after = script[script.index('if [ ${#cxl_args[@]} -gt 0 ]'):]
    assert 'PMEMLAB_CXL_DIR="$reports/cxl"' in after and "tests/host/module/test_cxl_backing.py" in after


def test_an_unpacked_qemu_gets_its_own_firmware_and_modules(tmp_path) -> None:
    """QEMU 10 unpacked under the cache (the CXL guests') is given its own firmware and option
    ROMs with -L, the qemu data first, and its own modules; the system's QEMU gets none of them
    (its own are the defaults)."""
    binary = tmp_path / "root/usr/bin/qemu-system-x86_64"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    assert vm.unpacked_root(str(binary)) == tmp_path / "root"
    assert vm.qemu_data_args(str(binary)) == [] and vm.qemu_env(str(binary)) == {}  # nothing beside it
    (tmp_path / "root/usr/lib/x86_64-linux-gnu/qemu").mkdir(parents=True)
    assert vm.qemu_env(str(binary)) == {"QEMU_MODULE_DIR": f"{tmp_path}/root/usr/lib/x86_64-linux-gnu/qemu"}
    for d in ("usr/share/qemu", "usr/share/seabios"):
        (tmp_path / "root" / d).mkdir(parents=True)
    assert vm.qemu_data_args(str(binary)) == [f"-L {tmp_path}/root/usr/share/qemu",
                                              f"-L {tmp_path}/root/usr/share/seabios"]
    assert vm.qemu_data_args("/usr/bin/qemu-system-x86_64") == []
    assert vm.unpacked_root("/usr/bin/qemu-system-x86_64") is None and vm.qemu_env("/usr/bin/qemu-system-x86_64") == {}


def test_a_kvm_hang_in_this_boot_stands_for_every_kernel(tmp_path, monkeypatch) -> None:
    """The KVM probe boots a guest and gives up after its deadline. A hang is the host's KVM: once
    one kernel's probe hung, the others use TCG without a probe of their own (five kernels would
    wait 45 s each on a freshly booted machine); a probe that booted counts for its kernel only."""
    import subprocess
    started: list[list[str]] = []

    class Probe:
        def __init__(self, cmd, **_kw) -> None:
            started.append(cmd)
            self.pid, self.cmd = -1, cmd

        def communicate(self, timeout=None):
            if timeout is not None and "hangs" in self.cmd[2]:
                raise subprocess.TimeoutExpired(self.cmd, timeout)
            return ("PMEMLAB_KVM_OK\n" if timeout is not None else ""), None

    monkeypatch.setattr(vm.runner, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(vm.runner.os, "access", lambda path, mode: True)
    monkeypatch.setattr(vm.runner.subprocess, "Popen", Probe)
    monkeypatch.setattr(vm.runner, "kill_group", lambda proc: None)
    monkeypatch.setattr(vm.Kernel, "installed", classmethod(lambda cls, release: cls(release, tmp_path / release,
                                                                                      tmp_path)))
    # the probes' times on a clock of the test's own that stands still ("in 0 s" below): on the
    # real one a stand-in probe that waited half a second for a CPU took "1 s"
    from types import SimpleNamespace
    monkeypatch.setattr(vm.runner, "time", SimpleNamespace(monotonic=lambda: 100.0))
    boots = vm.Kernel("6.1-boots", tmp_path / "6.1-boots", tmp_path)
    hangs = vm.Kernel("5.10-hangs", tmp_path / "5.10-hangs", tmp_path)
    other = vm.Kernel("7.2-boots", tmp_path / "7.2-boots", tmp_path)
    assert vm.probe_kvm(boots, 0.1)[0] is True
    ok, why = vm.probe_kvm(hangs, 0.1)
    assert ok is False and why.startswith("guest hung for 0 s")
    assert len(started) == 2
    ok, why = vm.probe_kvm(other, 0.1)  # never probed: the hang stands for it
    assert ok is False and "with 5.10-hangs" in why and why.endswith("(cached for this boot)")
    assert len(started) == 2
    assert vm.probe_kvm(boots, 0.1) == (True, "guest booted in 0 s (cached)")  # its own result first
    assert len(started) == 2


def test_every_guest_takes_the_newer_qemu(tmp_path, monkeypatch) -> None:
    """A guest, CXL or not, runs on QEMU 8.0 or newer when the machine has one (the system's, else
    the one install-deps unpacked): under TCG a 6.1 guest booted in 12-13 s on QEMU 10 against
    16-20 s on 7.2. VM_QEMU picks one for any guest, VM_CXL_QEMU for a CXL guest only; without a
    new one a CXL guest stops with the reason and the others take the system's."""
    versions = {"/usr/bin/qemu-system-x86_64": (7, 2)}
    unpacked = tmp_path / "root/usr/bin/qemu-system-x86_64"
    monkeypatch.setattr(vm.qemu, "BPO_QEMU", tmp_path / "root")
    monkeypatch.setattr(vm.qemu.shutil, "which", lambda name: "/usr/bin/qemu-system-x86_64")
    monkeypatch.setattr(vm.qemu, "qemu_version", lambda binary: versions.get(binary, (10, 0)))
    for name in ("VM_QEMU", "VM_CXL_QEMU"):
        monkeypatch.delenv(name, raising=False)
    assert vm.guest_qemu(False) == "/usr/bin/qemu-system-x86_64"  # nothing newer here
    with pytest.raises(SystemExit):
        vm.guest_qemu(True)
    unpacked.parent.mkdir(parents=True)
    unpacked.write_text("")
    assert vm.guest_qemu(False) == vm.guest_qemu(True) == str(unpacked)
    versions["/usr/bin/qemu-system-x86_64"] = (8, 2)  # a system QEMU new enough comes first
    assert vm.guest_qemu(False) == vm.guest_qemu(True) == "/usr/bin/qemu-system-x86_64"
    monkeypatch.setenv("VM_CXL_QEMU", "/opt/cxl-qemu")
    assert vm.guest_qemu(True) == "/opt/cxl-qemu" and vm.guest_qemu(False) == "/usr/bin/qemu-system-x86_64"
    monkeypatch.setenv("VM_QEMU", "/opt/qemu")
    assert vm.guest_qemu(True) == vm.guest_qemu(False) == "/opt/qemu"
