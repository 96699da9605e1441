"""The same small configurations on the module and on the user backend (pmemlab-run) give the
same counts: ops, reads, writes, bytes per thread and in total (count-bounded runs).

The module runs on target=dram; the runner on anonymous DRAM of the same size, on an ext4-dax
file on the DRAM-emulated pmem namespace (MAP_SYNC obtained and reported), and on a devdax
device made from that namespace (then turned back into fsdax). hugetlbfs pages from a pool
set up for the test."""
from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kmod_driver import Module

TOP = Path(__file__).resolve().parents[2]
RUNNER = TOP / "userspace" / "runner" / "pmemlab-run"
COUNTED = ("ops", "reads", "writes", "bytes")
# a bound that tells a hang from a wait, not a speed: under TCG on a loaded host a 16 MiB runner
# call took more than 120 s (the rt guest of a fresh make test)
HANG = 900
# the module keeps parameters between runs: every run sets all of these
BASE = dict(mode="bandwidth", pattern="seq", stride=0, read_pct=0, width=0, hotspot_size=4096, probe=0)

CONFIGS = [
    dict(op="store", access_size=4096, count=500, threads=1),
    dict(op="ntstore", access_size=256, count=2000, threads=2, pattern="rand"),
    dict(op="load", access_size=64, count=3000, threads=2, pattern="stride", stride=256),
    dict(op="store+clflush", access_size=128, count=1000, threads=1, read_pct=30, width=16),
    dict(mode="latency", op="load", access_size=64, count=2000, threads=1, pattern="rand"),
    dict(op="store", access_size=64, count=1000, threads=1, pattern="hotspot", hotspot_size=8192),
]


@pytest.fixture(scope="module")
def runner() -> Path:
    if not RUNNER.exists():
        subprocess.run(["make", "-s", "-C", str(TOP / "userspace")], check=True)
    return RUNNER


def user_counts(runner: Path, target: list[str], cfg: dict) -> list[dict[str, str]]:
    args = [str(runner), *target, "working_set=8M", "placement=per-thread",
            *(f"{k}={v}" for k, v in {**BASE, **cfg}.items())]
    res = subprocess.run(args, capture_output=True, text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr
    rows = [dict(f.split("=", 1) for f in ln.split()) for ln in res.stdout.splitlines() if ln.startswith("thread=")]
    return rows


def module_counts(cfg: dict) -> list[dict[str, str]]:
    m = Module()
    res = m.run(working_set="8M", placement="per-thread", **{**BASE, **cfg})
    return res.threads + [res.total]


def assert_same_counts(runner: Path, target: list[str], configs: list[dict]) -> None:
    """Each config on the loaded module and on the user backend at `target`: the same rows with
    the same counts, width, op and mode."""
    for cfg in configs:
        want = module_counts(cfg)
        got = user_counts(runner, target, cfg)
        assert len(got) == len(want), cfg
        for w, g in zip(want, got):
            assert {k: w[k] for k in COUNTED} == {k: g[k] for k in COUNTED}, (cfg, w, g)
            assert w["width"] == g["width"] and w["op"] == g["op"] and w["mode"] == g["mode"], cfg


def test_same_counts_dram(module, runner: Path) -> None:
    with module(target="dram", dram_size="16M"):
        assert_same_counts(runner, ["target=dram", "dram_size=16M"], CONFIGS)


def facts(out: str) -> dict[str, str]:
    return dict(ln[6:].split(" ", 1) for ln in out.splitlines() if ln.startswith("#fact ") and " " in ln[6:])


def run_user(runner: Path, *args: str) -> subprocess.CompletedProcess[str]:
    res = subprocess.run([str(runner), *args], capture_output=True, text=True, timeout=HANG)
    assert res.returncode == 0, res.stderr
    return res


@pytest.fixture
def ext4_mount(dram_pmem_dev: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """mkfs.ext4 on the DRAM-emulated namespace; yields (device, mount point) to mount as wanted."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    # -b 4096: on a namespace this small mkfs picks 1 KiB blocks, and ext4 mounts those without DAX
    subprocess.run(["mkfs.ext4", "-q", "-F", "-b", "4096", dram_pmem_dev], check=True)
    try:
        yield dram_pmem_dev, mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)
        subprocess.run(["wipefs", "-a", dram_pmem_dev], capture_output=True)


def test_same_counts_dax_file(module, runner: Path, ext4_mount: tuple[str, Path]) -> None:
    dev, mnt = ext4_mount
    subprocess.run(["mount", "-o", "dax", dev, str(mnt)], check=True)
    pool = mnt / "pool"
    pool.write_bytes(b"")
    with module(target="dram", dram_size="16M"):
        assert_same_counts(runner, [f"target={pool}", "size=16M"], CONFIGS[:3])
    out = subprocess.run([str(runner), "--facts", f"target={pool}"], capture_output=True, text=True).stdout
    assert facts(out)["target_kind"] == "file"


@pytest.mark.kernel_matrix
def test_map_sync_on_an_ext4_dax_file(runner: Path, ext4_mount: tuple[str, Path]) -> None:
    """MAP_SYNC on ext4 mounted with dax (writes, reads, --facts, and the CSV; size= creates the
    file); without dax the file is page cache: refused unless allow_file=1."""
    from pmemlab.backends.user import UserBackend

    dev, mnt = ext4_mount
    subprocess.run(["mount", "-o", "dax", dev, str(mnt)], check=True)
    pool = mnt / "pool"
    f = facts(run_user(runner, f"target={pool}", "size=16M", "op=ntstore", "count=100", "access_size=4K").stdout)
    assert (f["map_sync"], f["target_pages"], f["target_kind"], f["dax"]) == ("1", "file", "file", "1"), f
    assert pool.stat().st_size == 16 << 20, "size= created the file for the write run"
    print("ext4-dax file mapping:", {k: f[k] for k in ("target_page_size", "target_huge_pct")})
    # smaps does not count DAX pages in Rss (6.1): the runner then claims no page size (0)
    assert f["target_page_size"] in ("0", "4096", str(2 << 20))
    assert facts(run_user(runner, f"target={pool}", "op=load", "count=100").stdout)["map_sync"] == "1"
    assert facts(run_user(runner, "--facts", f"target={pool}").stdout)["map_sync"] == "1"
    out = UserBackend(str(pool)).run({"op": "store", "count": 100})
    assert out.ok and out.conditions["map_sync"] == 1 and out.conditions["target_pages"] == "file"
    assert out.conditions["target_page_size"] == (int(f["target_page_size"]) or None)
    subprocess.run(["umount", str(mnt)], check=True)
    # the same file system without DAX: page cache, refused (the file unchanged) unless allow_file=1;
    # MAP_SYNC is refused by the kernel, and the facts say 0
    subprocess.run(["mount", "-o", "dax=never", dev, str(mnt)], check=True)
    before = pool.read_bytes()
    res = subprocess.run([str(runner), f"target={pool}", "op=store", "count=100"], capture_output=True, text=True)
    assert res.returncode == 2 and "not on a DAX file system" in res.stderr and "allow_file=1" in res.stderr
    assert pool.read_bytes() == before
    f = facts(run_user(runner, f"target={pool}", "allow_file=1", "op=store", "count=100").stdout)
    assert (f["map_sync"], f["dax"]) == ("0", "0"), f


@pytest.mark.kernel_matrix
def test_user_backend_hugetlbfs_pages(runner: Path) -> None:
    nr = Path("/proc/sys/vm/nr_hugepages")
    old = nr.read_text().strip()
    nr.write_text("8\n")
    try:
        if int(nr.read_text()) < 4:
            pytest.skip("the guest could not reserve 4 huge pages")
        res = run_user(runner, "target=dram", "dram_size=8M", "dram_pages=hugetlb", "op=store", "count=1000")
        f = facts(res.stdout)
        assert (f["target_page_size"], f["target_pages"], f["target_huge_pct"]) == (str(2 << 20), "hugetlbfs", "100")
        # more than the pool: refused before anything runs
        res = subprocess.run([str(runner), "target=dram", "dram_size=64M", "dram_pages=hugetlb", "count=10"],
                             capture_output=True, text=True, timeout=HANG)
        assert res.returncode == 2 and "ENOMEM" in res.stderr and "vm.nr_hugepages" in res.stderr
    finally:
        nr.write_text(old + "\n")


def namespace_of(blockdev: str) -> str:
    listing = json.loads(subprocess.run(["ndctl", "list", "-N"], capture_output=True, text=True, check=True).stdout)
    listing = listing if isinstance(listing, list) else [listing]
    return next(ns["dev"] for ns in listing if ns.get("blockdev") == Path(blockdev).name)


@pytest.fixture
def devdax(dram_pmem_dev: str) -> Iterator[str]:
    """The DRAM-emulated namespace as devdax (/dev/daxN.M); fsdax again, same block device, afterwards."""
    subprocess.run(["modprobe", "dax_pmem"], capture_output=True)
    if not Path("/sys/bus/nd/drivers/dax_pmem").exists():
        pytest.skip("this kernel has no device DAX (CONFIG_DEV_DAX_PMEM; Debian's PREEMPT_RT kernels lack it)")
    ns = namespace_of(dram_pmem_dev)
    res = subprocess.run(["ndctl", "create-namespace", "-f", "-e", ns, "--mode=devdax"], capture_output=True,
                         text=True, timeout=HANG)
    try:
        assert res.returncode == 0, res.stderr
        chardev = json.loads(res.stdout)["daxregion"]["devices"][0]["chardev"]
        # Until device_dax (loaded by udev on demand) binds it, opening the device fails with
        # ENXIO: wait for the binding, not for a fixed time.
        subprocess.run(["udevadm", "settle"], capture_output=True)
        driver = Path(f"/sys/bus/dax/devices/{chardev}/driver")
        deadline = time.monotonic() + HANG
        while not driver.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert driver.exists(), f"/dev/{chardev}: no driver bound after {HANG} s"
        yield f"/dev/{chardev}"
    finally:
        back = subprocess.run(["ndctl", "create-namespace", "-f", "-e", ns, "--mode=fsdax"], capture_output=True,
                              text=True, timeout=HANG)
        subprocess.run(["udevadm", "settle"], capture_output=True)
        assert back.returncode == 0 and json.loads(back.stdout)["blockdev"] == Path(dram_pmem_dev).name, back.stderr
        subprocess.run(["wipefs", "-a", dram_pmem_dev], capture_output=True)


@pytest.mark.kernel_matrix
def test_devdax_target(module, runner: Path, devdax: str) -> None:
    """The user backend on a devdax device: kind, MAP_SYNC, the device's page size, the module's counts."""
    align = Path(f"/sys/bus/dax/devices/{Path(devdax).name}/align")
    res = run_user(runner, f"target={devdax}", "allow_overwrite=1", "op=ntstore", "count=200", "access_size=4K")
    f = facts(res.stdout)
    assert (f["target_kind"], f["target_pages"], f["map_sync"]) == ("devdax", "devdax", "1"), f
    if align.exists():
        assert f["target_page_size"] == align.read_text().strip()
    with module(target="dram", dram_size="16M"):
        assert_same_counts(runner, [f"target={devdax}", "allow_overwrite=1"], CONFIGS[:3])
