"""`ipmctl show -dimm -performance` parsing and the EWR / ERR arithmetic."""

from __future__ import annotations


from pmemlab.host import ipmctl
from pmemlab.host.probe import ToolResult

from testlib import HOST_FIXTURES

FIX = HOST_FIXTURES


def test_parse_documented_format():
    snap = ipmctl.parse_performance((FIX / "ipmctl-performance-before.txt").read_text())
    assert sorted(snap) == ["0x0001", "0x0101"]
    assert snap["0x0001"]["MediaReads"] == 0x3A7C3
    assert snap["0x0001"]["TotalWriteRequests"] == 0x2129C3490
    assert set(snap["0x0101"]) == set(ipmctl.COUNTERS)


def test_parse_tolerates_decimal_noise_and_blank_lines():
    text = "\nSome banner line\n---DimmID=0x1001---\nMediaReads=10\nMediaWrites = 0x20\nBogus=abc\n\n"
    assert ipmctl.parse_performance(text) == {"0x1001": {"MediaReads": 10, "MediaWrites": 32}}
    assert ipmctl.parse_performance("") == {}


def test_delta_ewr_err():
    before = ipmctl.parse_performance((FIX / "ipmctl-performance-before.txt").read_text())
    after = ipmctl.parse_performance((FIX / "ipmctl-performance-after.txt").read_text())
    d = ipmctl.delta(before, after)
    assert d["media_read_64b"] == 0x100 + 0x100
    assert d["media_write_64b"] == 0x1000 + 0x1000
    assert d["read_request_64b"] == 0x100 + 0x100
    assert d["write_request_64b"] == 0x1000 + 0x400
    assert d["ewr"] == (0x1000 + 0x400) / (0x1000 + 0x1000)
    assert d["err"] == 1.0
    one = ipmctl.delta(before, after, dimms=["0x0101"])
    assert one["ewr"] == 0x400 / 0x1000
    idle = ipmctl.delta(before, before)
    assert idle["ewr"] is None and idle["err"] is None  # nothing written: no ratio
    assert set(d) == set(ipmctl.COLUMNS)


def test_probe():
    assert ipmctl.probe(lambda a: ToolResult(127, "", ""))["available"] is False
    assert "no Optane" in ipmctl.probe(lambda a: ToolResult(0, "No PMem modules found.\n"))["note"]
    assert "failed" in ipmctl.probe(lambda a: ToolResult(1, "", "Error: access denied"))["note"]
    ok = ipmctl.probe(lambda a: ToolResult(0, (FIX / "ipmctl-performance-before.txt").read_text()))
    assert ok == {"available": True, "dimms": ["0x0001", "0x0101"]}


def test_delta_over_the_region_dimms_by_handle():
    before = ipmctl.parse_performance((FIX / "ipmctl-performance-before.txt").read_text())
    after = ipmctl.parse_performance((FIX / "ipmctl-performance-after.txt").read_text())
    # ndctl's handle 257 is ipmctl's DimmID 0x0101
    assert ipmctl.delta(before, after, [257]) == ipmctl.delta(before, after, ["0x0101"])
    assert ipmctl.delta(before, after, [1])["media_write_64b"] == 0x1000
    assert ipmctl.delta(before, after, [4097])["media_write_64b"] == 0  # a DIMM ipmctl did not list


def test_region_dimm_ids_from_info():
    import json

    from pmemlab.host import machine
    from pmemlab.backends.module import Module

    ndctl = (FIX / "ndctl-list-RNDi.json").read_text()
    info = {"target": {}, "ndctl": {}}
    assert ipmctl.region_dimm_ids(info) is None
    topo = machine.ndctl_topology(json.loads(ndctl))
    found = machine.target_in_topology(topo, "/dev/pmem0")
    info = {"target": {"dimms": [m["dimm"] for m in found["region"]["mappings"]]}, "ndctl": {"dimms": topo["dimms"]}}
    assert ipmctl.region_dimm_ids(info) == [1, 257, 4097, 4353, 8449]
    info["target"]["dimms"].append("nmem9")  # a DIMM ndctl did not list: unknown, not a guess
    assert ipmctl.region_dimm_ids(info) is None
