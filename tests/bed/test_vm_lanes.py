"""scripts/vm builds the same guest for every lane of make test as the single-file bed it was split
from (commit 109d0b2, before scripts/vmbed): the same virtme-ng command line, environment, guest
script, backing files, CXL device map, lines on stderr and exit status, with QEMU mocked (no boot),
but for the changes made on purpose since (since_the_split names them).

The lanes are scripts/run-tests' (its vm_args, cpuless_args, smt_args and the matrix's node and CXL
options), each with a kernel tree of its own name; the CXL lane also on QEMU 7.2 (no volatile CXL
memory) and 9.0 (no generic port). fixtures/vm-lanes.json holds what the old bed gave (recorded
with PMEMLAB_RECORD_VM_LANES=1 from the old file); the temporary directory, the test's own
directory, the repository, the cache and the PATH are written as @TMP@, @ROOT@, @TOP@, @CACHE@ and
@PATH@."""
from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from testlib import TOP, load_vm_script

REAL_POPEN = subprocess.Popen
FIXTURE = Path(__file__).parent / "fixtures" / "vm-lanes.json"
OLD_COMMIT = "109d0b2"
PYTEST = [".venv/bin/python", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
COMMON = ["--memmap", "384M", "--nvdimm-size", "512M"]
LANES: dict[str, tuple[str, list[str]]] = {  # name: (QEMU version, options before "--")
    "default": ("10.0", []),
    "6.1-first": ("10.0", COMMON + ["--cpuless-node", "512M"]),
    "5.10-matrix": ("10.0", COMMON),
    "6.1-rt-matrix": ("10.0", COMMON),
    "7.2-cxl": ("10.0", COMMON + ["--cxl", "--cxl-dir", "@ROOT@/reports/cxl"]),
    "7.2-cxl-qemu-7.2": ("7.2", COMMON + ["--cxl", "--cxl-dir", "@ROOT@/reports/cxl"]),
    "7.2-cxl-qemu-9.0": ("9.0", COMMON + ["--cxl", "--cxl-dir", "@ROOT@/reports/cxl"]),
    "6.12-two-nodes": ("10.0", COMMON + ["--numa-nodes", "2"]),
    "6.1-smt": ("10.0", COMMON + ["--smt", "--cpus", "4", "--cpu-model", "Cascadelake-Server-v1"]),
    # refused before any boot: the message and the exit status
    "refused-nvdimms": ("10.0", ["--nvdimms", "5"]),
    "refused-numa-nodes": ("10.0", ["--numa-nodes", "3"]),
    "refused-smt": ("10.0", ["--smt", "--cpus", "3"]),
    "refused-cxl-gran": ("10.0", ["--cxl", "--cxl-gran", "100"]),
    "refused-cxl-size": ("10.0", ["--cxl", "--cxl-pmem-size", "100M"]),
    "refused-size": ("10.0", ["--mem", "1.5G"]),
}
CXL_OPTIONS = ("CXL_ACPI", "CXL_PCI", "CXL_MEM", "CXL_PMEM", "CXL_REGION", "FS_DAX", "DEV_DAX_CXL", "DEV_DAX_KMEM")


def kernel_tree(root: Path, name: str) -> Path:
    """A configured kernel build tree (scripts/vm --kernel-tree) with every CXL option."""
    tree = root / f"tree-{name}"
    (tree / "arch/x86/boot").mkdir(parents=True)
    (tree / "arch/x86/boot/bzImage").write_bytes(b"image")
    (tree / "include/config").mkdir(parents=True)
    (tree / "include/config/kernel.release").write_text(f"{name}-lane\n")
    (tree / "Makefile").write_text("")
    (tree / ".config").write_text("".join(f"CONFIG_{o}=m\n" for o in CXL_OPTIONS))
    return tree


def unpacked_qemu(root: Path) -> Path:
    """A QEMU as scripts/install-deps unpacks one (its firmware and modules beside it)."""
    for d in ("usr/bin", "usr/share/qemu", "usr/share/seabios", "usr/lib/x86_64-linux-gnu/qemu"):
        (root / "qemu-root" / d).mkdir(parents=True, exist_ok=True)
    return root / "qemu-root/usr/bin/qemu-system-x86_64"


class Capture:
    """subprocess.run and subprocess.Popen for one lane: `QEMU --version` answers the lane's version,
    make succeeds, and virtme-ng's Popen records what it was given and leaves what a guest that ran
    its command leaves (stage marks, exit status 0, virtio-fs)."""

    def __init__(self, version: str) -> None:
        self.version = version
        self.seen: dict = {}

    def run(self, cmd, *args, **kwargs):
        if cmd[1:] == ["--version"]:
            return subprocess.CompletedProcess(cmd, 0, f"QEMU emulator version {self.version}.1\n", "")
        if cmd[0] == "make":
            return subprocess.CompletedProcess(cmd, 0, "", "")
        raise AssertionError(f"unexpected command {cmd}")

    def popen(self, cmd, **kwargs):
        tmp = Path(cmd[cmd.index("--exec") + 1].split()[1]).parent
        changed = {k: v for k, v in kwargs.pop("env").items() if os.environ.get(k) != v}
        self.seen.update(tmp=str(tmp), argv=list(cmd), env=changed, guest_sh=(tmp / "guest.sh").read_text(),
                         popen_stdout=Path(kwargs.pop("stdout").name).name,
                         popen_stderr=kwargs.pop("stderr"), popen_stdin=kwargs.pop("stdin"), popen_kwargs=kwargs,
                         # guest.sh by its (normalised) text above: its size holds the repository's path
                         files=sorted((str(p.relative_to(tmp)), "guest_sh" if p.name == "guest.sh" else p.stat().st_size)
                                      for p in tmp.rglob("*") if p.is_file()))
        dirs = [tmp / "cxl"] + [Path(a[len("--rwdir="):]) for a in cmd if a.startswith("--rwdir=")]
        found = [d / "devices.json" for d in dirs if (d / "devices.json").exists()]
        self.seen["devices_json"] = found[0].read_text() if found else None
        (tmp / "phases").write_text("booted 1.0\nnamespaces 2.0\ncommand 3.0\n")
        (tmp / "rc").write_text("0\n")
        (tmp / "rootfs").write_text("virtiofs\n")
        (tmp / "dmesg.txt").write_text("[ 0.0] Linux version lane\n")
        return REAL_POPEN(["true"], stdout=subprocess.DEVNULL)


def normalised(value, names: dict[str, str]):
    text = json.dumps(value, sort_keys=True)
    for real, name in sorted(names.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(real, name)
    return json.loads(re.sub(r"\b\d+(\.\d+)? s\b", "N s", text))


def capture_lane(vm: ModuleType, patch_build, lane: str, root: Path, monkeypatch, capsys) -> dict:
    """What scripts/vm (module vm) gives QEMU, the guest and stderr for one lane under root."""
    version, options = LANES[lane]
    root.mkdir()
    qemu = unpacked_qemu(root)
    ko = root / "pmemlab.ko"
    ko.write_bytes(b"module")
    patch_build(lambda kernel: ko)
    for name in [k for k in os.environ if k.startswith("VM_")] + ["PMEMLAB_VM_LOCK"]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("VM_QEMU", str(qemu))
    monkeypatch.chdir(TOP)  # the guest's working directory (guest.sh's cd), as make test runs it
    cap = Capture(version)
    monkeypatch.setattr(subprocess, "run", cap.run)
    monkeypatch.setattr(subprocess, "Popen", cap.popen)
    argv = [o.replace("@ROOT@", str(root)) for o in options]
    cmd = PYTEST + [f"--junitxml={root}/guest.xml", "tests/guest"]
    monkeypatch.setattr(sys, "argv", ["scripts/vm", "--kernel-tree", str(kernel_tree(root, lane)), "--accel", "tcg",
                                      *argv, "--verdict", str(root / "verdict"), "--", *cmd])
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGHUP)}
    capsys.readouterr()
    try:
        rc = vm.main()
    except SystemExit as exc:
        rc = exc.code
    finally:
        for sig, handler in handlers.items():
            signal.signal(sig, handler)
    out = capsys.readouterr()
    result = {"rc": rc, "stdout": out.out, "stderr": out.err.splitlines(), **cap.seen,
              "verdict": (root / "verdict").read_text() if (root / "verdict").exists() else None}
    return normalised(result, {cap.seen.get("tmp", "@TMP@"): "@TMP@", str(root): "@ROOT@", str(TOP): "@TOP@", str(vm.CACHE_DIR): "@CACHE@",
                               os.environ.get("PATH", ""): "@PATH@"})


def old_bed(tmp: Path) -> ModuleType | None:
    """scripts/vm as it was before the split, from git, pointed at this repository."""
    res = subprocess.run(["git", "-C", str(TOP), "show", f"{OLD_COMMIT}:scripts/vm"], capture_output=True, text=True)
    if res.returncode != 0:
        return None
    path = tmp / "old-vm"
    path.write_text(res.stdout)
    loader = importlib.machinery.SourceFileLoader("pmemlab_vm_old", str(path))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    module.TOP, module.VENV_BIN = TOP, TOP / ".venv" / "bin"
    return module


# A guest whose root is 9p copies its fonts up into its /usr overlay before the tests (issue 33
# item 7: uncached 9p made matplotlib re-read them at every figure, and the CXL lane crawled).
GUEST_SH_FONTS = """if [ "$(cat "$out/rootfs" 2>/dev/null)" = 9p ]; then
\t# 9p caches nothing: matplotlib re-reads its fonts at every figure, tens of thousands of 9p
\t# requests a minute. A touch copies each file up into the tmpfs layer of the /usr overlay.
\tfind -L /usr/share/fonts /usr/share/matplotlib/mpl-data/fonts -type f -print0 2>/dev/null |
\t\twhile IFS= read -r -d '' f; do touch -c -r "$f" "$f"; done
\tlog "fonts copied up (the root is 9p)"
fi
"""


def since_the_split(lane: str, want: dict) -> dict:
    """The old bed's lane with the changes made on purpose after the split, each with its reason:
    a CXL guest shares the host's files over 9p (issue 33 item 7: virtiofsd panicked on a file
    buffer on the emulated CXL node, which QEMU never shares with it), and a 9p guest copies its
    fonts up first (GUEST_SH_FONTS)."""
    want = json.loads(json.dumps(want))
    if "--cxl" in LANES[lane][1] and "argv" in want:
        at = want["argv"].index("--numa") if "--numa" in want["argv"] else len(want["argv"])
        want["argv"].insert(at, "--force-9p")
    if "guest_sh" in want:
        anchor = "if ! setup_namespaces; then\n"
        assert want["guest_sh"].count(anchor) == 1, "the recorded guest.sh lost its namespaces step"
        want["guest_sh"] = want["guest_sh"].replace(anchor, GUEST_SH_FONTS + anchor)
    return want


@pytest.mark.parametrize("lane", LANES)
def test_a_cxl_guest_and_only_it_shares_the_files_over_9p(lane, tmp_path, monkeypatch, capsys) -> None:
    vm = load_vm_script()
    got = capture_lane(vm, lambda fake: monkeypatch.setattr(vm.build, "build_module", fake), lane,
                       tmp_path / "new", monkeypatch, capsys)
    if "argv" in got:
        assert ("--force-9p" in got["argv"]) == ("--cxl" in LANES[lane][1]), got["argv"]


@pytest.mark.parametrize("lane", LANES)
def test_the_split_bed_boots_every_lane_as_the_old_one(lane, tmp_path, monkeypatch, capsys) -> None:
    vm = load_vm_script()
    old = old_bed(tmp_path) if os.environ.get("PMEMLAB_RECORD_VM_LANES") == "1" else None
    got = capture_lane(vm, lambda fake: monkeypatch.setattr(vm.build, "build_module", fake), lane,
                       tmp_path / "new", monkeypatch, capsys)
    if os.environ.get("PMEMLAB_RECORD_VM_LANES") == "1":
        assert old is not None, f"git show {OLD_COMMIT}:scripts/vm failed"
        want = capture_lane(old, lambda fake: monkeypatch.setattr(old, "build_module", fake), lane,
                            tmp_path / "old", monkeypatch, capsys)
        recorded = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
        recorded[lane] = want
        FIXTURE.write_text(json.dumps(recorded, indent=1, sort_keys=True) + "\n")
    want = since_the_split(lane, json.loads(FIXTURE.read_text())[lane])
    if lane.startswith("refused-"):
        assert got["rc"] == 2 and "argv" not in got and got["stderr"], got  # no boot
    else:
        assert got["rc"] == 0 and "--disable-kvm" in got["argv"]  # booted (mocked) with TCG, exit 0
    for key in want:
        assert got[key] == want[key], key
    assert got == want


@pytest.mark.parametrize("lane", LANES)
def test_the_recording_is_the_old_bed(lane, tmp_path, monkeypatch, capsys) -> None:
    """The fixture is what the old file gives (where git still has it)."""
    old = old_bed(tmp_path)
    if old is None:
        pytest.skip(f"{OLD_COMMIT} is not in this clone")
    got = capture_lane(old, lambda fake: monkeypatch.setattr(old, "build_module", fake), lane,
                       tmp_path / "old", monkeypatch, capsys)
    assert got == json.loads(FIXTURE.read_text())[lane]
