"""`pmemlab info` against fixture trees: ndctl JSON (ndctl list -RNDi), /proc/cpuinfo, NUMA sysfs."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

from fake_pmemlab import make_fake

import pmemlab.cli as cli
import pmemlab.cli.backend as cli_backend
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe

from testlib import HOST_FIXTURES

FIX = HOST_FIXTURES

CPUINFO = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz
physical id\t: 0
cpu MHz\t\t: 2400.000
flags\t\t: fpu sse2 avx avx2 avx512f clflush clflushopt clwb rdtscp constant_tsc nonstop_tsc

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8260 CPU @ 2.40GHz
physical id\t: 1
cpu MHz\t\t: 2400.000
flags\t\t: fpu sse2 avx avx2 avx512f clflush clflushopt clwb rdtscp constant_tsc nonstop_tsc
"""


@pytest.fixture
def host(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text(CPUINFO)
    sysd = tmp_path / "sys"
    (sysd / "devices/system/cpu").mkdir(parents=True)
    (sysd / "devices/system/cpu/online").write_text("0-1\n")
    for n, cpus, dist in ((0, "0", "10 21"), (1, "1", "21 10")):
        d = sysd / f"devices/system/node/node{n}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(cpus + "\n")
        (d / "distance").write_text(dist + "\n")
        (d / "meminfo").write_text(f"Node {n} MemTotal:       196608000 kB\nNode {n} MemFree: 1 kB\n")
    return probe.HostPaths(proc=proc, sys=sysd, dev=tmp_path / "dev")


def ndctl_runner(argv):
    if argv[:2] == ["ndctl", "list"]:
        return probe.ToolResult(0, (FIX / "ndctl-list-RNDi.json").read_text())
    return probe.ToolResult(127, "", "not installed")


def test_info_facts(tmp_path, host):
    fake = make_fake(tmp_path)
    info = machine.gather_info(fake.module(), host, runner=ndctl_runner)
    t = info["target"]
    assert t["device"] == "/dev/pmem0" and t["kind"] == "fsdax" and t["size"] == 1 << 30
    assert t["page_size"] == 2097152 and t["node"] == 0
    assert t["namespace"]["mode"] == "fsdax" and t["namespace"]["dev"] == "namespace0.0"
    assert t["region"] == "region0" and t["interleave_ways"] == 6
    assert sorted(t["dimms"]) == [f"nmem{i}" for i in range(6)]
    assert len(info["ndctl"]["regions"]) == 2 and info["ndctl"]["regions"][1]["state"] == "disabled"
    assert len(info["ndctl"]["dimms"]) == 6
    cpu = info["cpu"]
    assert cpu["model"].startswith("Intel(R) Xeon(R) Platinum 8260") and cpu["online_cpus"] == 2 and cpu["sockets"] == 2
    assert cpu["features"]["clwb"] and cpu["features"]["avx512f"] and cpu["features"]["rdtscp"]
    assert cpu["tsc"]["tsc_khz"] == 2_000_000 and cpu["tsc"]["invariant"] is True
    assert cpu["widths"] == [8, 16, 32]
    nodes = info["numa"]["nodes"]
    assert [n["node"] for n in nodes] == [0, 1] and nodes[1]["distances"] == [21, 10]
    assert nodes[0]["mem_total_kib"] == 196608000
    mod = info["module"]
    assert mod["loaded"] and mod["version"] == "0.1.0" and mod["parameters"]["target"] == "/dev/pmem0"
    assert mod["run_params"]["op"] == "load"
    assert info["prefetch"]["control"] == "none" and "modprobe msr" in info["prefetch"]["state"]
    assert info["ipmctl"]["available"] is False and info["host"]["kernel"]
    cond = machine.conditions(info)
    assert cond["target_interleave_ways"] == 6 and cond["target_region"] == "region0"
    assert cond["cpu_model"].startswith("Intel") and cond["tsc_khz"] == 2_000_000
    assert machine.discovered_defaults(info) == {"interleave_ways": 6}
    text = machine.format_info(info)
    assert "region0" in text and "interleave ways" in text and "nmem0" in text


def test_ndctl_shapes():
    # ndctl prints a bare list of namespaces for `ndctl list`, and buses with -B
    bare = [{"dev": "namespace1.0", "mode": "fsdax", "blockdev": "pmem1", "size": 1}]
    topo = machine.ndctl_topology(bare)
    assert machine.target_in_topology(topo, "/dev/pmem1")["namespace"]["dev"] == "namespace1.0"
    buses = [{"provider": "ACPI.NFIT", "dev": "ndbus0", "regions": json.loads((FIX / "ndctl-list-RNDi.json").read_text())["regions"]}]
    topo = machine.ndctl_topology(buses)
    assert [r["dev"] for r in topo["regions"]] == ["region0", "region1"]
    assert machine.target_in_topology(topo, "/dev/pmem7") == {}
    assert machine.target_in_topology(topo, "dram") == {}


def test_ndctl_missing_or_broken():
    assert machine.ndctl_info(lambda a: probe.ToolResult(127, "", ""))["available"] is False
    assert "unparsable" in machine.ndctl_info(lambda a: probe.ToolResult(0, "{oops"))["error"]
    assert "no NVDIMM" in machine.ndctl_info(lambda a: probe.ToolResult(0, ""))["note"]


def test_info_without_module(tmp_path, host):
    from pmemlab.backends.module import Module

    info = machine.gather_info(Module(tmp_path / "absent"), host, runner=ndctl_runner)
    assert info["module"]["loaded"] is False and "insmod" in info["module"]["note"]
    assert info["cpu"]["tsc"]["tsc_khz"] is None
    assert "not loaded" in machine.format_info(info)


def test_cli_info_json(tmp_path, host, monkeypatch, capsys):
    fake = make_fake(tmp_path)
    monkeypatch.setattr(cli_backend, "module", lambda args: fake.module())
    monkeypatch.setattr(probe, "run_tool", ndctl_runner)
    monkeypatch.setattr(machine, "HostPaths", lambda: host)
    assert cli.main(["info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["target"]["interleave_ways"] == 6 and info["numa"]["nodes"][1]["node"] == 1
    assert info["target"]["namespace"]["blockdev"] == "pmem0"
    assert cli.main(["info"]) == 0
    assert "Platinum 8260" in capsys.readouterr().out


def test_sweep_takes_interleave_geometry_from_ndctl(tmp_path, host, monkeypatch):
    fake = make_fake(tmp_path)
    monkeypatch.setattr(cli_backend, "module", lambda args: fake.module())
    monkeypatch.setattr(cli_backend, "online_cpus", lambda: 2)
    monkeypatch.setattr(probe, "run_tool", ndctl_runner)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[base]\nduration_ms = 1\nplacement = "per-dimm"\n[axes]\ndimms_per_thread = [1, 6]\n')
    out = tmp_path / "c.csv"
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    df = pd.read_csv(out)
    assert (df["interleave_ways"] == 6).all() and (df["target_interleave_ways"] == 6).all()
    assert [r["interleave_ways"] for r in fake.runs] == ["6", "6"]


def test_toolkit_revision_is_read_once_per_process(monkeypatch):
    """git describe runs once: rows written later in the same process (a sweep recording into
    tracked files makes the tree -dirty) keep the revision of the code that runs; without git
    the package version."""
    import subprocess

    calls = []

    def fake_run(argv, **kwargs):
        calls.append(argv)
        return subprocess.CompletedProcess(argv, 0, stdout=f"abc{len(calls)}\n", stderr="")

    machine.toolkit_revision.cache_clear()
    monkeypatch.setattr(machine.subprocess, "run", fake_run)
    try:
        assert machine.toolkit_revision() == "abc1" and machine.toolkit_revision() == "abc1"
        assert len(calls) == 1 and calls[0][-3:] == ["--always", "--dirty", "--tags"]
        machine.toolkit_revision.cache_clear()
        monkeypatch.setattr(machine.subprocess, "run", lambda argv, **kw: subprocess.CompletedProcess(argv, 128, "", ""))
        assert machine.toolkit_revision() == f"v{machine.__version__}"
    finally:
        machine.toolkit_revision.cache_clear()


# ---------------------------------------------------------------- NVDIMM interleave rotation
MiB = 1 << 20
X6 = ["nmem1", "nmem4", "nmem0", "nmem3", "nmem2", "nmem5"]  # the fixture's x6 set, by position
REGION_BASE = 0x30_0000_0000


def _nd_sys(sysd, *, partition_start=None, data_start=None):
    """bus/nd/devices/region0/resource; with data_start the fsdax namespace's pfn device (its
    resource: where its data starts) and pmem0 below it, with partition_start pmem0p1 too."""
    region = sysd / "devices/platform/ACPI0012:00/ndbus0/region0"
    region.mkdir(parents=True, exist_ok=True)
    (region / "resource").write_text(f"{REGION_BASE:#x}\n")
    (sysd / "bus/nd/devices").mkdir(parents=True, exist_ok=True)
    os.symlink(region, sysd / "bus/nd/devices/region0")
    if data_start is None:
        return
    pfn = region / "pfn0.1"
    disk = pfn / "block/pmem0"
    disk.mkdir(parents=True)
    (pfn / "resource").write_text(f"{data_start:#x}\n")
    os.symlink(pfn, disk / "device")
    (sysd / "class/block").mkdir(parents=True, exist_ok=True)
    os.symlink(disk, sysd / "class/block/pmem0")
    if partition_start is not None:
        part = disk / "pmem0p1"
        part.mkdir()
        (part / "partition").write_text("1\n")
        (part / "start").write_text(f"{partition_start // 512}\n")
        os.symlink(part, sysd / "class/block/pmem0p1")


@pytest.mark.parametrize("ways,shift,rotation", [
    # data 2 MiB into the set: chunk 512 of 4 KiB; 512 mod 2 = 0, mod 3 = 2, mod 6 = 2; 4 KiB more: 513
    (2, 0, 0), (2, 4096, 1), (3, 0, 2), (3, 4096, 0), (6, 0, 2), (6, 4096, 3),
])
def test_nvdimm_rotation_from_where_the_data_starts(tmp_path, ways, shift, rotation):
    """Device 0 of per-device placement is the set's position (data_offset / 4 KiB) mod ways: with
    x3 and x6 sets even the usual 2 MiB fsdax data offset is not a multiple of ways * 4 KiB."""
    _nd_sys(tmp_path)
    mappings = [{"dimm": f"nmem{p}", "position": p} for p in reversed(range(ways))]
    target = {"region": "region0", "mappings": mappings, "device": "/dev/pmem0"}
    got = machine.nvdimm_data_start(tmp_path, target, {"target_phys": hex(REGION_BASE + 2 * MiB + shift)})
    assert got == {"data_offset": 2 * MiB + shift, "gran": 4096, "rotation": rotation,
                   "aligned": (2 * MiB + shift) % (4096 * ways) == 0, "source": "target_phys"}


def test_nvdimm_rotation_of_a_partition_without_the_module(tmp_path):
    """The user backend (no target_phys): the namespace's data start (its pfn device's resource) plus
    the partition's start (sectors of 512 B), here 4 KiB into a namespace whose data starts 2 MiB in."""
    _nd_sys(tmp_path, data_start=REGION_BASE + 2 * MiB, partition_start=4096)
    target = {"region": "region0", "mappings": [{"dimm": d, "position": p} for p, d in enumerate(X6)],
              "device": "/dev/pmem0p1"}
    got = machine.nvdimm_data_start(tmp_path, target, {})
    assert got is not None and (got["data_offset"], got["rotation"]) == (2 * MiB + 4096, 3)
    assert got["source"] == "namespace data start + partition start"
    whole = machine.nvdimm_data_start(tmp_path, {**target, "device": "/dev/pmem0"}, {})
    assert whole is not None and (whole["data_offset"], whole["rotation"]) == (2 * MiB, 2)
    assert machine.nvdimm_data_start(tmp_path, {**target, "region": "region7"}, {}) is None


@pytest.mark.parametrize("shift,first", [(0, 2), (4096, 3)])
def test_info_lists_the_x6_devices_rotated(tmp_path, host, shift, first):
    """`pmemlab info` on the x6 set: devices in per-device order start at the position holding the
    target's first chunk (ndctl lists positions; before, device 0 was always position 0)."""
    _nd_sys(host.sys)
    fake = make_fake(tmp_path)
    (fake.root / "target_phys").write_text(f"{REGION_BASE + 2 * MiB + shift:#x}\n")
    info = machine.gather_info(fake.module(), host, runner=ndctl_runner)
    t = info["target"]
    assert t["devices"] == [X6[(first + i) % 6] for i in range(6)] and t["device_kind"] == "nvdimm"
    assert t["devices_shift"]["rotation"] == first
    assert f"device 0 is at position {first}" in machine.format_info(info)
    assert machine.conditions(info)["target_devices"] == " ".join(t["devices"])
