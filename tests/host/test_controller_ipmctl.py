"""`ipmctl show -dimm -performance` parsing and the EWR / ERR arithmetic."""

from __future__ import annotations

from pathlib import Path

from pmemlab import ipmctl
from pmemlab.machine import ToolResult

FIX = Path(__file__).resolve().parent / "fixtures"


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
