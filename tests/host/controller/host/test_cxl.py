"""CXL regions, geometry and advertised performance from a fixture sysfs tree (pmemlab/host/cxl.py), and
`pmemlab info`, the CSV's condition columns and per-device placement defaults built on them."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from cxl_sysfs import MiB, PMEM, RAM0, RAM1, make_cxl_sysfs
from fake_pmemlab import make_fake

import pmemlab.cli as cli
import pmemlab.cli.backend as cli_backend
import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab.host import cxl
from pmemlab.backends.module import Module


@pytest.fixture
def sysd(tmp_path: Path) -> Path:
    return make_cxl_sysfs(tmp_path / "sys")


def test_region_at_reads_the_region_and_its_targets(sysd: Path) -> None:
    r = cxl.region_at(sysd, PMEM + 5 * MiB)
    assert r is not None and r["region"] == "region2" and r["mode"] == "pmem"
    assert (r["resource"], r["size"], r["interleave_ways"], r["interleave_gran"]) == (PMEM, 512 * MiB, 2, 4096)
    assert [(t["position"], t["memdev"], t["serial"], t["decoder"]) for t in r["targets"]] == [
        (0, "mem0", 0x1001, "decoder3.2"), (1, "mem1", 0x1000, "decoder2.2")]
    t0 = r["targets"][0]
    assert (t0["dpa_resource"], t0["dpa_size"], t0["ram_size"], t0["pmem_size"]) == (512 * MiB, 256 * MiB,
                                                                                      512 * MiB, 256 * MiB)
    assert t0["host_bridge"] == "pci0000:0c" and t0["pci"] == "0000:0e:00.0" and r["host_bridges"] == ["pci0000:0c"]
    assert r["node"] == 2  # the nvdimm region it became says where its memory is
    assert r["access0"] == {"read_latency": 17270, "write_latency": 17370, "read_bandwidth": 16384,
                            "write_bandwidth": 16384}
    assert cxl.region_at(sysd, PMEM + 512 * MiB) is None and cxl.region_at(sysd, 0x1000) is None
    assert cxl.region_at(sysd, None) is None
    assert cxl.region_at(sysd / "absent", PMEM) is None


def test_geometry_names_the_device_of_target_offset_zero(sysd: Path) -> None:
    r = cxl.region_at(sysd, PMEM)
    assert r is not None
    assert cxl.geometry(r, PMEM + 2 * MiB) == {"offset_in_region": 2 * MiB, "shift": 0, "aligned": True,
                                               "devices": ["mem0", "mem1"], "arithmetic": "modulo", "why": None}
    # a target starting one chunk into a pair: its device 0 is the memdev at position 1
    g = cxl.geometry(r, PMEM + 2 * MiB + 4096)
    assert g["shift"] == 1 and g["aligned"] is False and g["devices"] == ["mem1", "mem0"]


@pytest.mark.parametrize("offset,position,dpa", [
    (0, 0, 512 * MiB), (4095, 0, 512 * MiB + 4095), (4096, 1, 512 * MiB), (8192, 0, 512 * MiB + 4096),
    (3 * 4096 + 8, 1, 512 * MiB + 4096 + 8), (2 * MiB, 0, 512 * MiB + MiB),
])
def test_locate_decodes_modulo_interleave(sysd: Path, offset: int, position: int, dpa: int) -> None:
    r = cxl.region_at(sysd, PMEM)
    assert r is not None
    got = cxl.locate(r, PMEM, offset)
    assert (got["position"], got["dpa"]) == (position, dpa)
    assert got["memdev"] == ("mem0", "mem1")[position] and got["serial"] == (0x1001, 0x1000)[position]


def test_node_regions_are_those_onlined_by_kmem(sysd: Path) -> None:
    assert [r["region"] for r in cxl.node_regions(sysd, 2)] == ["region0"]  # region1 is devdax
    assert cxl.node_regions(sysd, 0) == [] and cxl.node_regions(sysd, None) == []


def test_device_region_and_mem_node(sysd: Path) -> None:
    r = cxl.device_region(sysd, "/dev/dax1.0", None)  # devdax: by the dax device's own address
    assert r is not None and r["region"] == "region1" and r["resource"] == RAM1 and r["node"] == 2
    assert cxl.device_region(sysd, "/dev/pmem9", None) is None
    assert cxl.mem_node(sysd, "/dev/dax1.0", "user-devdax", None) == 2
    assert cxl.mem_node(sysd, "/dev/pmem3", "fsdax", 0) == 2  # the region's target_node, not numa_node
    assert cxl.mem_node(sysd, None, "dram", 2) == 2
    assert cxl.mem_node(sysd, "/dev/pmem7", "fsdax", 0) == 0  # not found: the module's node stays


def test_advertised_and_tier(sysd: Path) -> None:
    assert cxl.advertised(sysd, 2) == {"node": 2, "initiators": "0", "source": "node2 access0", "read_latency": 17270, "write_latency": 17370,
                                       "read_bandwidth": 16384, "write_bandwidth": 16384}
    empty = cxl.advertised(sysd, 5)
    assert empty["node"] == 5 and all(empty[k] is None for k in cxl.ADV_ATTRS) and empty["initiators"] is None
    assert cxl.advertised(sysd, None)["read_latency"] is None
    assert cxl.memory_tier(sysd, 2) == {"tier": 22, "nodes": "2"}
    assert cxl.memory_tier(sysd, 0) == {"tier": 4, "nodes": "0"}
    assert cxl.memory_tier(sysd, 7) == {"tier": None, "nodes": None}


def test_target_cxl(sysd: Path) -> None:
    assert cxl.target_cxl(sysd, "dram", "dram", None, 2)["regions"][0]["region"] == "region0"
    assert cxl.target_cxl(sysd, "dram", "dram", None, 0) == {}
    t = cxl.target_cxl(sysd, "/dev/pmem3", "fsdax", PMEM + 2 * MiB + 4096, 2)
    assert t["devices"] == ["mem1", "mem0"] and t["phys"] == PMEM + 2 * MiB + 4096
    assert cxl.target_cxl(sysd, "/dev/dax0.0", "user-devdax", None, 2)["phys"] == RAM0


@pytest.fixture
def host(tmp_path: Path) -> probe.HostPaths:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nmodel name\t: QEMU TCG\nflags\t\t: sse2 clflush\n")
    sysd = make_cxl_sysfs(tmp_path / "sys")
    (sysd / "devices/system/cpu").mkdir(parents=True)
    (sysd / "devices/system/cpu/online").write_text("0-1\n")
    return probe.HostPaths(proc=proc, sys=sysd, dev=tmp_path / "dev")


def no_tools(argv: list[str]) -> probe.ToolResult:
    return probe.ToolResult(127, "", "not installed")


def cxl_fake(tmp_path: Path, phys: int):
    fake = make_fake(tmp_path, target="/dev/pmem3")
    (fake.root / "target_phys").write_text(f"{phys:#x}\n")
    return fake


def test_info_shows_the_region_geometry_and_advertised_values(tmp_path: Path, host: probe.HostPaths) -> None:
    fake = cxl_fake(tmp_path, PMEM + 2 * MiB + 4096)
    info = machine.gather_info(fake.module(), host, runner=no_tools)
    t = info["target"]
    assert t["interleave_ways"] == 2 and t["interleave_gran"] == 4096
    assert t["devices"] == ["mem1", "mem0"] and t["device_kind"] == "cxl" and t["mem_node"] == 2
    assert t["cxl"]["regions"][0]["region"] == "region2" and t["cxl"]["shift"] == 1
    assert t["advertised"]["read_latency"] == 17270 and t["memory_tier"]["tier"] == 22
    text = machine.format_info(info)
    for want in ("cxl region", "region2 pmem", "ways=2 gran=4096 node=2 host bridge pci0000:0c",
                 "position 0: mem0 serial 0x1001", "position 1: mem1 serial 0x1000", "0: mem1, 1: mem0",
                 "read 17270 ns 16384 MB/s, write 17370 ns 16384 MB/s (node2 access0, from node 0)", "memory tier",
                 "22 (nodes 2)"):
        assert want in text, want
    cond = machine.conditions(info)
    assert cond["target_interleave_ways"] == 2 and cond["target_interleave_gran"] == 4096
    assert cond["target_devices"] == "mem1 mem0" and cond["target_device_kind"] == "cxl"
    assert cond["target_cxl_region"] == "region2" and cond["adv_node"] == 2 and cond["adv_initiators"] == "0"
    assert (cond["adv_read_latency_ns"], cond["adv_write_latency_ns"], cond["adv_read_bw_mbps"],
            cond["adv_write_bw_mbps"]) == (17270, 17370, 16384, 16384)
    assert (cond["memory_tier"], cond["memory_tier_nodes"]) == (22, "2")
    assert machine.discovered_defaults(info) == {"interleave_ways": 2, "interleave_gran": 4096}


def test_info_without_advertised_values_leaves_them_empty(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nflags\t\t: sse2\n")
    host = probe.HostPaths(proc=proc, sys=make_cxl_sysfs(tmp_path / "sys", advertised="none"), dev=tmp_path / "dev")
    info = machine.gather_info(cxl_fake(tmp_path, PMEM).module(), host, runner=no_tools)
    cond = machine.conditions(info)
    assert cond["adv_node"] == 2 and all(cond[k] is None for k in ("adv_read_latency_ns", "adv_write_latency_ns",
                                                                     "adv_read_bw_mbps", "adv_write_bw_mbps"))
    assert "no HMAT" in machine.format_info(info)


def test_a_cxl_node_without_access0_takes_its_regions(tmp_path: Path) -> None:
    """7.2 leaves the CXL node without access0 while the region keeps its own: the target's region
    (an fsdax namespace on it) or the ram region onlined into the node (a DRAM target there) gives
    the values, with the source said and no initiator named; node 0 (no CXL region) stays empty."""
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nflags\t\t: sse2\n")
    sysd = make_cxl_sysfs(tmp_path / "sys", advertised="region")
    host = probe.HostPaths(proc=proc, sys=sysd, dev=tmp_path / "dev")
    info = machine.gather_info(cxl_fake(tmp_path, PMEM).module(), host, runner=no_tools)
    cond = machine.conditions(info)
    assert (cond["adv_read_latency_ns"], cond["adv_write_latency_ns"], cond["adv_read_bw_mbps"],
            cond["adv_write_bw_mbps"]) == (17270, 17370, 16384, 16384)
    assert cond["adv_source"] == "region2 access0 (node2 has none)" and cond["adv_initiators"] is None
    assert "region2 access0 (node2 has none), no initiator named" in machine.format_info(info)
    node2 = cxl.advertised(sysd, 2)
    assert node2["source"] == "region0 access0 (node2 has none)" and node2["read_latency"] == 17270
    assert cxl.advertised(sysd, 0)["source"] is None and cxl.advertised(sysd, 0)["read_latency"] is None
    full = cxl.advertised(make_cxl_sysfs(tmp_path / "sys2"), 2)
    assert full["source"] == "node2 access0" and full["initiators"] == "0"


def test_sweep_takes_ways_and_granularity_from_the_cxl_region(tmp_path: Path, host: probe.HostPaths,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    fake = cxl_fake(tmp_path, PMEM)
    monkeypatch.setattr(cli_backend, "module", lambda args: fake.module())
    monkeypatch.setattr(cli_backend, "online_cpus", lambda: 2)
    monkeypatch.setattr(probe, "run_tool", no_tools)
    monkeypatch.setattr(machine, "HostPaths", lambda: host)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[base]\nduration_ms = 1\nthreads = 2\nplacement = "per-dimm"\n')
    out = tmp_path / "c.csv"
    assert cli.main(["sweep", str(cfg), "-o", str(out), "--no-progress"]) == 0
    df = pd.read_csv(out)
    assert (df["interleave_ways"] == 2).all() and (df["interleave_gran"] == 4096).all()
    assert (df["target_devices"] == "mem0 mem1").all() and (df["adv_read_latency_ns"] == 17270).all()
    assert [(r["interleave_ways"], r["interleave_gran"]) for r in fake.runs] == [("2", "4096")]


def test_report_holds_each_point_against_the_advertised_value() -> None:
    from pmemlab.analysis.resultset import Results
    from pmemlab.report.experiments import point_table

    base = {"thread": "all", "status": "ok", "source_csv": "x.csv", "target_label": "", "adv_read_latency_ns": 250,
            "adv_write_latency_ns": 300, "adv_read_bw_mbps": 8000, "adv_write_bw_mbps": 2000, "read_pct": 0}
    rows = pd.DataFrame([
        {**base, "mode": "latency", "op": "load", "access_size": 64, "repeat": r, "lat_ns_p50": v}
        for r, v in enumerate((500.0, 500.0, 500.0))] + [
        {**base, "mode": "bandwidth", "op": "ntstore", "access_size": 256, "repeat": r, "bw_gbps": v}
        for r, v in enumerate((1.0, 1.0, 1.0))])
    table = point_table(Results("x", rows, None))
    lat = table[table["metric"] == "lat_ns_p50"].iloc[0]
    bw = table[table["metric"] == "bw_gbps"].iloc[0]
    assert (lat["advertised"], lat["mean_over_adv"]) == (250, 2.0)
    assert (bw["advertised"], bw["mean_over_adv"]) == (2.0, 0.5)
    plain = point_table(Results("x", rows.drop(columns=[c for c in rows if c.startswith("adv_")]), None))
    assert "advertised" not in plain and "mean_over_adv" not in plain


# ---------------------------------------------------------------------------------------------
# what the machine has of CXL, with no target on it (issue 34: `pmemlab info` before the module)
# ---------------------------------------------------------------------------------------------
def test_inventory_lists_memdevs_decoders_and_every_region(sysd: Path) -> None:
    inv = cxl.inventory(sysd)
    assert [(m["memdev"], m["serial"], m["ram_size"], m["pmem_size"], m["numa_node"], m["host_bridge"])
            for m in inv["memdevs"]] == [("mem0", 0x1001, 512 * MiB, 256 * MiB, 0, "pci0000:0c"),
                                         ("mem1", 0x1000, 512 * MiB, 256 * MiB, 0, "pci0000:0c")]
    kinds = {d["decoder"]: d["kind"] for d in inv["decoders"]}
    assert kinds["decoder0.0"] == "root" and kinds["decoder1.0"] == "switch" and kinds["decoder3.2"] == "endpoint"
    assert list(kinds)[:2] == ["decoder0.0", "decoder1.0"] and list(kinds)[-1] == "decoder3.2"  # by port, index
    root = inv["decoders"][0]
    assert (root["start"], root["size"], root["pmem_capable"], root["volatile_capable"], root["target_list"]) == (
        RAM0, 4 << 30, True, True, "0")
    ep = next(d for d in inv["decoders"] if d["decoder"] == "decoder2.2")
    assert (ep["memdev"], ep["mode"], ep["dpa_resource"], ep["dpa_size"]) == ("mem1", "pmem", 512 * MiB, 256 * MiB)
    regions = {r["region"]: r for r in inv["regions"]}
    assert sorted(regions) == ["region0", "region1", "region2"]
    assert [(x["dax"], x["driver"], x["target_node"], x["device"]) for x in regions["region0"]["dax"]] == [
        ("dax0.0", "kmem", 2, "/dev/dax0.0")]
    assert regions["region1"]["dax"][0]["driver"] == "device_dax" and regions["region1"]["nvdimm_region"] is None
    assert regions["region2"]["nvdimm_region"] == "region3" and regions["region2"]["dax"] == []
    for r in regions.values():
        assert r["node"] == 2 and r["interleave_ways"] == 2 and r["interleave_gran"] == 4096
        assert r["advertised"]["source"] == "node2 access0" and r["advertised"]["read_latency"] == 17270
        assert r["memory_tier"] == {"tier": 22, "nodes": "2"}
    assert cxl.inventory(sysd / "absent") == {"memdevs": [], "decoders": [], "regions": []}


def test_inventory_on_7_2_takes_the_regions_own_access0(tmp_path: Path) -> None:
    inv = cxl.inventory(make_cxl_sysfs(tmp_path / "sys", advertised="region"))
    adv = {r["region"]: r["advertised"] for r in inv["regions"]}
    assert adv["region0"]["source"] == "region0 access0 (node2 has none)" and adv["region0"]["read_latency"] == 17270
    none = cxl.inventory(make_cxl_sysfs(tmp_path / "none", advertised="none"))
    assert all(r["advertised"]["source"] is None and r["access0"] is None for r in none["regions"])


def test_info_without_the_module_shows_cxl(host: probe.HostPaths, tmp_path: Path) -> None:
    """Before any target: the memdevs, the CXL window, each region (pmem and ram) with its mode,
    size, ways, granularity, node and what it became, the advertised values, in text and JSON."""
    mod = Module(tmp_path / "no-module")
    info = machine.gather_info(mod, host, runner=no_tools)
    assert info["module"]["loaded"] is False and info["target"]["device"] is None
    assert [m["memdev"] for m in info["cxl"]["memdevs"]] == ["mem0", "mem1"]
    assert {r["region"]: r["mode"] for r in info["cxl"]["regions"]} == {"region0": "ram", "region1": "ram",
                                                                        "region2": "pmem"}
    nodes = {n["node"]: n for n in info["numa"]["nodes"]}
    assert nodes[2]["advertised"]["read_latency"] == 17270 and nodes[2]["memory_tier"] == 22
    text = machine.format_info(info)
    section = text.split("\ncxl\n", 1)[1]
    for want in ("mem0", "serial 0x1001, ram 512.00 MiB", "under host bridge pci0000:0c",
                 "decoder0.0", "root decoder (CXL window) 4.00 GiB", "at 0x370000000, ways=1 gran=4096 "
                 "pmem_capable volatile_capable, targets 0",
                 "region0", "ram 512.00 MiB", "at 0x370000000, ways=2 gran=4096 node=2, dax0.0 system RAM, devices 0: mem0, 1: mem1",
                 "dax1.0 device_dax", "region2", "pmem 512.00 MiB", "node=2, nvdimm region3",
                 "advertised read 17270 ns 16384 MB/s, write 17370 ns 16384 MB/s (node2 access0, from node 0)",
                 "memory tier 22 (nodes 2)", "decoder1.0 switch targets 0,1, 1.50 GiB",
                 "decoder2.2 endpoint mem1 pmem dpa 0x20000000+256.00 MiB"):
        assert want in section, want
    assert "node2" in text and "memory tier 22, advertised read 17270 ns" in text
    doc = json.loads(json.dumps(info))  # what --json prints
    assert doc["cxl"]["regions"][2]["nvdimm_region"] == "region3"


def test_info_of_a_machine_without_cxl_has_no_cxl_section(tmp_path: Path) -> None:
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nflags\t\t: sse2\n")
    host = probe.HostPaths(proc=proc, sys=tmp_path / "sys", dev=tmp_path / "dev")
    info = machine.gather_info(Module(tmp_path / "no-module"), host, runner=no_tools)
    assert info["cxl"] == {"memdevs": [], "decoders": [], "regions": []}
    assert "\ncxl\n" not in machine.format_info(info)
