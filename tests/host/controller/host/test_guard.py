"""The controller's own overwrite guard and bad-range listing (pmemlab.host.safety): write runs on a
device that blkid or lsblk finds something on are refused unless the module was loaded with
allow_overwrite=1, with what was found named; read runs, DRAM, files and devdax pass without a
probe; bad ranges come from /sys/block/<disk>/badblocks (partition offsets applied) and ndctl.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pmemlab.host import safety
from pmemlab.errors import PmemlabError
from pmemlab.host.probe import ToolResult

MiB = 1 << 20


class Tools:
    """A fake run_tool: canned answers per command name."""

    def __init__(self, answers: dict[str, ToolResult]) -> None:
        self.answers, self.calls = answers, []

    def __call__(self, argv: list[str]) -> ToolResult:
        self.calls.append(argv)
        return self.answers.get(argv[0], ToolResult(127, "", "not installed"))


def info_for(dev: str, allow: str = "N") -> dict:
    return {"target": {"device": dev}, "module": {"parameters": {"allow_overwrite": allow}}}


@pytest.fixture
def blockdev(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(safety, "is_block_device", lambda path: True)
    return "/dev/pmem7"


def test_controller_refuses_write_runs_on_what_blkid_finds(blockdev: str) -> None:
    tools = Tools({"blkid": ToolResult(0, "DEVNAME=/dev/pmem7\nPTUUID=x\nPTTYPE=gpt\n"),
                   "lsblk": ToolResult(0, '{"blockdevices":[{"name":"pmem7","type":"disk","mountpoint":null,'
                                          '"children":[{"name":"pmem7p1","type":"part","mountpoint":"/mnt/a"}]}]}')})
    with pytest.raises(safety.OverwriteRefused) as exc:
        safety.check_overwrite(info_for(blockdev), True, tools)
    msg = str(exc.value)
    assert "gpt partition table" in msg and "partitions pmem7p1" in msg and "pmem7p1 on /mnt/a" in msg
    assert "allow_overwrite=1" in msg
    assert ["blkid", "-p", "-o", "export", blockdev] in tools.calls
    # read runs, and an allowed module, pass without probing
    tools.calls.clear()
    safety.check_overwrite(info_for(blockdev), False, tools)
    safety.check_overwrite(info_for(blockdev, "Y"), True, tools)
    assert not tools.calls


@pytest.mark.parametrize("rc,out,word", [(0, "TYPE=LVM2_member\nUSAGE=raid\n", "LVM2_member signature"),
                                         (4, "", "ambivalent"), (8, "", "no answer from blkid")])
def test_controller_refusal_names_each_blkid_answer(blockdev: str, rc: int, out: str, word: str) -> None:
    tools = Tools({"blkid": ToolResult(rc, out, "blkid: error" if rc == 8 else ""),
                   "lsblk": ToolResult(0, '{"blockdevices":[{"name":"pmem7","type":"disk","mountpoint":null}]}')})
    with pytest.raises(safety.OverwriteRefused, match=word):
        safety.check_overwrite(info_for(blockdev), True, tools)


def test_controller_passes_empty_devices_and_non_block_targets(blockdev: str, monkeypatch) -> None:
    tools = Tools({"blkid": ToolResult(2, ""),
                   "lsblk": ToolResult(0, '{"blockdevices":[{"name":"pmem7","type":"disk","mountpoint":null}]}')})
    safety.check_overwrite(info_for(blockdev), True, tools)
    monkeypatch.setattr(safety, "is_block_device", lambda path: False)
    tools = Tools({})
    for target in ("dram", "/dev/dax0.0", "/mnt/pmem/file"):
        safety.check_overwrite(info_for(target), True, tools)
    assert not tools.calls
    assert issubclass(safety.OverwriteRefused, PmemlabError)


def test_writes_follows_the_op_list() -> None:
    assert not safety.writes({"op": "load"}) and not safety.writes({"op": "load,ntload"})
    assert safety.writes({"op": "load,store+clwb"}) and safety.writes({"op": "ntstore"})


def test_bad_ranges_from_sys_and_ndctl(tmp_path: Path) -> None:
    sysdir = tmp_path / "sys"
    (sysdir / "block" / "pmem3").mkdir(parents=True)
    (sysdir / "block" / "pmem3" / "badblocks").write_text("8 1\n4096 16\n")
    # a partition of pmem3 starting at sector 2048
    part = sysdir / "devices" / "pmem3" / "pmem3p1"
    part.mkdir(parents=True)
    (part / "partition").write_text("1\n")
    (part / "start").write_text("2048\n")
    (sysdir / "class" / "block").mkdir(parents=True)
    (sysdir / "class" / "block" / "pmem3p1").symlink_to(part)
    (sysdir / "class" / "block" / "pmem3").symlink_to(sysdir / "devices" / "pmem3")
    ndctl = ToolResult(0, '[{"dev":"namespace3.0","blockdev":"pmem3","badblock_count":1,'
                          '"badblocks":[{"offset":8,"length":1,"dimms":["nmem3"]}]}]')
    whole = safety.bad_ranges("/dev/pmem3", sysdir, Tools({"ndctl": ndctl}))
    assert whole["badblocks"] == [{"sector": 8, "count": 1, "target_offset": 4096, "bytes": 512},
                                  {"sector": 4096, "count": 16, "target_offset": 2 * MiB, "bytes": 8192}]
    assert whole["ndctl_media_errors"] == [{"offset": 8, "length": 1, "dimms": ["nmem3"]}]
    lines = list(safety.format_bad_ranges(whole))
    assert "sectors 8+1 = target bytes 4096+512" in lines[0] and "nmem3" in lines[-1]
    p1 = safety.bad_ranges("/dev/pmem3p1", sysdir)
    assert p1["badblocks"] == [{"sector": 4096, "count": 16, "target_offset": 1 * MiB, "bytes": 8192}]
    (sysdir / "block" / "pmem3" / "badblocks").write_text("")
    assert list(safety.format_bad_ranges(safety.bad_ranges("/dev/pmem3", sysdir))) == [
        "none known (/sys/block/pmem3/badblocks is empty)"]
    assert safety.bad_ranges("dram", sysdir) == {}
