"""CXL interleave across host bridges (pmemlab/host/cxl.py): the firmware's CEDT parsed from binary
tables built here from the structures' documented layouts (ACPICA's acpi_table_header,
acpi_cedt_cfmws, acpi_cedt_cxims, acpi_cedt_chbs), the host bridge of an address by the window's
arithmetic (modulo, or XOR as CXL 3.1 Table 9-22 and Linux's cxl_xor_calc_n compute it: 2, 3, 4,
6 and 12 ways), and per-device placement named or refused with the reason; each expectation
worked out by hand in the comments."""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

import pytest

from cxl_sysfs import MiB, make_cxl_sysfs

import pmemlab.host.machine as machine
import pmemlab.host.probe as probe
from pmemlab.host import cxl
from pmemlab import params as P

GiB = 1 << 30
BASE = 1 << 34  # the window's base (16 GiB): 256 MiB aligned as the CEDT wants
DPA = 0x1000_0000


# ---------------------------------------------------------------- binary CEDT, by the layouts
def acpi_table(signature: bytes, body: bytes) -> bytes:
    """acpi_table_header: signature[4] length u32 revision u8 checksum u8 oem_id[6]
    oem_table_id[8] oem_revision u32 asl_compiler_id[4] asl_compiler_revision u32 (36 bytes)."""
    head = struct.pack("<4sIBB6s8sI4sI", signature, 36 + len(body), 1, 0, b"BOCHS ", b"BXPC    ", 1, b"BXPC", 1)
    assert len(head) == 36
    return head + body


def cfmws(base: int, size: int, eiw: int, arith: int, eig: int, targets: list[int], restrictions: int = 0x6) -> bytes:
    """acpi_cedt_cfmws: type 1, reserved, length u16, reserved1 u32, base_hpa u64, window_size u64,
    interleave_ways u8, interleave_arithmetic u8, reserved2 u16, granularity u32, restrictions u16,
    qtg_id u16, interleave_targets u32[]."""
    fixed = struct.pack("<BBHIQQBBHIHH", 1, 0, 36 + 4 * len(targets), 0, base, size, eiw, arith, 0, eig,
                        restrictions, 0)
    assert len(fixed) == 36
    return fixed + struct.pack(f"<{len(targets)}I", *targets)


def cxims(eig: int, maps: list[int]) -> bytes:
    """acpi_cedt_cxims: type 2, reserved, length u16, reserved1 u16, hbig u8, nr_xormaps u8,
    xormap_list u64[]."""
    return struct.pack("<BBHHBB", 2, 0, 8 + 8 * len(maps), 0, eig, len(maps)) + struct.pack(f"<{len(maps)}Q", *maps)


def chbs(uid: int) -> bytes:
    """acpi_cedt_chbs: type 0, reserved, length u16 (32), uid u32, cxl_version u32, reserved u32,
    base u64, length u64: skipped by the parser."""
    return struct.pack("<BBHIIIQQ", 0, 0, 32, uid, 1, 0, 0xFED0_0000 + uid * 0x10000, 0x10000)


EIW = {1: 0, 2: 1, 4: 2, 8: 3, 16: 4, 3: 8, 6: 9, 12: 10}
EIG = {256: 0, 512: 1, 1024: 2, 2048: 3, 4096: 4, 8192: 5, 16384: 6}


# ---------------------------------------------------------------- a sysfs tree of one region
def _put(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def _link(link: Path, target: Path) -> None:
    link.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, link.parent), link)


def make_region(sysd: Path, *, ways: int, gran: int, start: int, size: int, positions: list[tuple[str, int]],
                cedt: bytes | None, uid_by: str = "firmware_node") -> Path:
    """A pmem region at `start` whose position p is memdev positions[p][0], below the host bridge
    of ACPI _UID positions[p][1] (pci0000:<uid>); the UID told by the bridge's firmware node
    (ACPI0016) or by the CXL root's dport<UID> link (uid_by="dport"); the CEDT as given."""
    cxl_dir = sysd / "bus/cxl/devices"
    root = sysd / "devices/platform/ACPI0017:00/root0"
    for uid in sorted({u for _, u in positions}):
        hb = sysd / f"devices/pci0000:{uid:02x}"
        hb.mkdir(parents=True, exist_ok=True)
        if uid_by == "firmware_node":
            fw = sysd / f"devices/LNXSYSTM:00/ACPI0016:{uid:02x}"
            _put(fw / "uid", str(uid))
            _link(hb / "firmware_node", fw)
        else:
            _link(root / f"dport{uid}", hb)
    _link(cxl_dir / "root0", root)
    reg = root / "decoder0.0/region0"
    for name, value in (("mode", "pmem"), ("resource", hex(start)), ("size", hex(size)),
                        ("interleave_ways", str(ways)), ("interleave_granularity", str(gran))):
        _put(reg / name, value)
    for pos, (mem, uid) in enumerate(positions):
        dev = sysd / f"devices/pci0000:{uid:02x}/0000:{uid:02x}:00.0/0000:{uid + 1:02x}:0{pos}.0/{mem}"
        _put(dev / "serial", hex(0x2000 + pos))
        _link(cxl_dir / mem, dev)
        port = root / f"port{uid}/endpoint{pos + 10}"
        port.mkdir(parents=True, exist_ok=True)
        _link(port / "uport", dev)
        dec = port / f"decoder{pos + 10}.0"
        _put(dec / "dpa_resource", hex(DPA))
        _put(dec / "dpa_size", hex(size // ways))
        _put(dec / "mode", "pmem")
        _link(cxl_dir / dec.name, dec)
        _put(reg / f"target{pos}", dec.name)
    _link(cxl_dir / "region0", reg)
    if cedt is not None:
        (sysd / "firmware/acpi/tables").mkdir(parents=True, exist_ok=True)
        (sysd / cxl.CEDT).write_bytes(cedt)
    return sysd


def region(sysd: Path) -> dict[str, Any]:
    r = cxl.region_at(sysd, BASE)
    assert r is not None
    return r


def devices_at(r: dict[str, Any], offsets: list[int]) -> list[str]:
    return [cxl.locate(r, BASE, o)["memdev"] for o in offsets]


# ---------------------------------------------------------------- the parser
def test_parse_cedt_reads_windows_and_xormaps() -> None:
    table = acpi_table(b"CEDT", chbs(7) + cfmws(BASE, 4 * GiB, EIW[6], 1, EIG[4096], [7, 8, 9, 10, 11, 12])
                       + cxims(EIG[4096], [0x1000, 0x2000_0000]) + chbs(8)
                       + cfmws(BASE + 4 * GiB, GiB, EIW[3], 0, EIG[256], [7, 8, 9]))
    got = cxl.parse_cedt(table)
    w0, w1 = got["windows"]
    assert (w0["base"], w0["size"], w0["ways"], w0["gran"], w0["arithmetic"], w0["targets"]) == (
        BASE, 4 * GiB, 6, 4096, 1, [7, 8, 9, 10, 11, 12])
    assert (w0["eiw"], w0["eig"], w0["restrictions"]) == (9, 4, 0x6)
    assert (w1["ways"], w1["gran"], w1["arithmetic"], w1["targets"]) == (3, 256, 0, [7, 8, 9])
    assert got["cxims"] == [{"eig": 4, "gran": 4096, "xormaps": [0x1000, 0x2000_0000]}]
    # a 6-way XOR window uses log2(6 / 3) = 1 map; 12 ways 2, 4 ways 2, 3 ways none
    assert cxl.xor_maps(got, w0) == [0x1000]
    assert cxl.xor_maps(got, {**w0, "ways": 12}) == [0x1000, 0x2000_0000]
    assert cxl.xor_maps(got, {**w0, "ways": 16}) is None  # 4 maps wanted, 2 given
    assert cxl.xor_maps(got, {**w0, "gran": 256}) is None  # no CXIMS of that granularity
    assert cxl.xor_maps(got, w1) == []


@pytest.mark.parametrize("data,why", [
    (b"XSDT" + bytes(40), "no CEDT signature"),
    (acpi_table(b"CEDT", b"")[:30], "no CEDT signature"),
    (acpi_table(b"CEDT", cfmws(BASE, GiB, 1, 0, 0, [1, 2]))[:-4], "does not match"),
    (acpi_table(b"CEDT", struct.pack("<BBH", 1, 0, 200) + bytes(40)), "runs past the table"),
    (acpi_table(b"CEDT", cfmws(BASE, GiB, EIW[4], 0, 0, [1, 2])), "cannot hold 4 targets"),  # 2 of 4 given
    (acpi_table(b"CEDT", struct.pack("<BBHHBB", 2, 0, 16, 0, 0, 2) + bytes(8)), "cannot hold 2 XORMAPs"),
])
def test_parse_cedt_refuses_a_broken_table(data: bytes, why: str) -> None:
    with pytest.raises(ValueError, match=why):
        cxl.parse_cedt(data)


def test_encodings() -> None:
    assert [cxl.ways_of(e) for e in (0, 1, 2, 3, 4, 8, 9, 10)] == [1, 2, 4, 8, 16, 3, 6, 12]
    assert cxl.ways_of(5) is None and cxl.ways_of(11) is None
    assert [cxl.gran_of(e) for e in range(7)] == [256, 512, 1024, 2048, 4096, 8192, 16384]
    assert cxl.gran_of(7) is None


# ---------------------------------------------------------------- XOR host-bridge selection
def test_hb_index_by_hand() -> None:
    """Table 9-22: bit i = parity(HPA & XORMAP[i]); 3/6/12 ways add HPA[51:eig + eiw] mod 3."""
    two = {"ways": 2, "eiw": 1, "eig": 0}
    assert [cxl.hb_index(two, [0x10100], a) for a in (0, 0x100, 0x10000, 0x10100, 0x200)] == [0, 1, 1, 0, 0]
    four = {"ways": 4, "eiw": 2, "eig": 0}
    maps = [0x100 | 1 << 18, 0x200 | 1 << 19]
    assert [cxl.hb_index(four, maps, a) for a in (0, 0x100, 0x200, 0x300, 1 << 18, 1 << 19 | 0x200)] == [0, 1, 2, 3, 1, 0]
    # 3 ways, 256 B: HPA[51:8] mod 3; 2^34 >> 8 = 2^26 = 4^13, 1 mod 3
    three = {"ways": 3, "eiw": 8, "eig": 0}
    assert [cxl.hb_index(three, [], BASE + c * 256) for c in range(4)] == [1, 2, 0, 1]
    # 6 ways, 4 KiB (eig 4): bit 0 from the map, bits 2:1 = HPA[51:13] mod 3
    six = {"ways": 6, "eiw": 9, "eig": 4}
    assert cxl.hb_index(six, [0x1000], 0) == 0 and cxl.hb_index(six, [0x1000], 0x1000) == 1
    assert cxl.hb_index(six, [0x1000], 0x2000) == 2 and cxl.hb_index(six, [0x1000], 0x5000) == 5
    assert cxl.hb_index(six, [0x1000], 0x6000) == 0  # (0x6000 >> 13) = 3, 0 mod 3
    # bits of the address above 51 are not the platform's
    assert cxl.hb_index(three, [], 1 << 52) == 0


# the 2-way XOR window and its region: memA below host bridge _UID 7, memB below 9
XOR2 = [("memA", 7), ("memB", 9)]


def xor2(tmp: Path, size: int, maps: list[int], uid_by: str = "firmware_node") -> Path:
    table = acpi_table(b"CEDT", chbs(7) + chbs(9) + cfmws(BASE, 4 * GiB, EIW[2], 1, EIG[256], [7, 9])
                       + cxims(EIG[256], maps))
    return make_region(tmp / "sys", ways=2, gran=256, start=BASE, size=size, positions=XOR2, cedt=table, uid_by=uid_by)


@pytest.mark.parametrize("uid_by", ["firmware_node", "dport"])
def test_xor_two_ways_names_the_device_the_platform_picks(tmp_path: Path, uid_by: str) -> None:
    """XORMAP bits 8 and 16: chunk c at BASE + 256 c goes to host bridge parity(bit 8, bit 16):
    offsets 0 -> memA, 256 -> memB, 64 KiB (bit 16) -> memB, 64 KiB + 256 -> memA. Modulo would
    put 64 KiB on memA. The DPA drops the interleave bit: chunk / 2 * 256."""
    r = region(xor2(tmp_path, 256 * MiB, [0x10100], uid_by))
    assert r["arithmetic"] == "xor" and r["window"]["xormaps"] == [0x10100]
    assert [t["host_bridge_uid"] for t in r["targets"]] == [7, 9]
    assert devices_at(r, [0, 256, 512, 65536, 65536 + 256, 65536 + 512]) == ["memA", "memB", "memA", "memB", "memA",
                                                                               "memB"]
    got = cxl.locate(r, BASE, 65536 + 8)
    assert (got["position"], got["memdev"], got["dpa"]) == (1, "memB", DPA + 128 * 256 + 8)
    # the bit-16 map makes the device of chunk c depend on more than c mod 2: no device i
    g = cxl.geometry(r, BASE)
    assert g["devices"] is None and g["arithmetic"] == "xor"
    assert "XOR interleave" in g["why"] and "0x10100" in g["why"] and "round 128" in g["why"]
    # a target inside the first 64 KiB never sees bit 16: its device order holds throughout
    assert cxl.geometry(r, BASE, 64 * 1024)["devices"] == ["memA", "memB"]
    # one starting one chunk in: its device 0 is memB
    assert cxl.geometry(r, BASE + 256, 32 * 1024)["devices"] == ["memB", "memA"]


def test_xor_two_ways_over_two_bridges_of_two_devices(tmp_path: Path) -> None:
    """4 ways over 2 host bridges (2 devices each), map bit 8 only: host bridge by bit 8, then the
    bridge's decoder (granularity 2 x 256) by bit 9 over its devices in region order; positions
    0, 2 below _UID 5, 1, 3 below 6: the same order modulo gives, consistent over the region."""
    table = acpi_table(b"CEDT", cfmws(BASE, 4 * GiB, EIW[2], 1, EIG[256], [5, 6]) + cxims(EIG[256], [0x100]))
    sysd = make_region(tmp_path / "sys", ways=4, gran=256, start=BASE, size=256 * MiB,
                       positions=[("m0", 5), ("m1", 6), ("m2", 5), ("m3", 6)], cedt=table)
    r = region(sysd)
    assert devices_at(r, [0, 256, 512, 768, 1024]) == ["m0", "m1", "m2", "m3", "m0"]
    assert cxl.geometry(r, BASE)["devices"] == ["m0", "m1", "m2", "m3"]


def _bridges(ways: int) -> list[tuple[str, int]]:
    return [(f"mem{i}", 20 + i) for i in range(ways)]


@pytest.mark.parametrize("ways,maps,want", [
    # 3 ways: HPA[51:8] mod 3; chunk c of BASE: (2^26 + c) mod 3 = (1 + c) mod 3
    (3, [], [1, 2, 0]),
    # 6 ways, map bit 8: n = (c & 1) | ((HPA >> 9) mod 3) << 1, HPA >> 9 = 2^25 + c / 2, 2^25 = 2 mod 3:
    # c = 0..5 -> 4, 5, 0, 1, 2, 3
    (6, [0x100], [4, 5, 0, 1, 2, 3]),
    # 12 ways, maps bits 8, 9: n = (c & 3) | ((HPA >> 10) mod 3) << 2, 2^24 = 1 mod 3:
    # c = 0..11 -> 4..11, 0..3
    (12, [0x100, 0x200], [4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3]),
])
def test_xor_three_six_twelve_ways(tmp_path: Path, ways: int, maps: list[int], want: list[int]) -> None:
    """One device per host bridge (_UID 20 + i is window target i, region position i): device i of
    per-device placement is the window target `want[i]`, rotated the same way in every round."""
    table = acpi_table(b"CEDT", cfmws(BASE, 12 * GiB, EIW[ways], 1, EIG[256], [20 + i for i in range(ways)])
                       + (cxims(EIG[256], maps + [0x8000_0000]) if maps else b""))
    r = region(make_region(tmp_path / "sys", ways=ways, gran=256, start=BASE, size=256 * MiB * ways,
                           positions=_bridges(ways), cedt=table))
    assert r["arithmetic"] == "xor"
    names = [f"mem{n}" for n in want]
    assert devices_at(r, [c * 256 for c in range(ways)]) == names
    assert devices_at(r, [(ways * 1000 + c) * 256 for c in range(ways)]) == names
    g = cxl.geometry(r, BASE)
    assert g["devices"] == names and g["shift"] == want[0] and g["why"] is None
    # modulo (what cxl.py did before) would have named mem0, mem1, ...
    assert names != [f"mem{i}" for i in range(ways)]


@pytest.mark.parametrize("ways", [2, 3, 6, 12])
def test_modulo_windows_keep_the_region_order(tmp_path: Path, ways: int) -> None:
    table = acpi_table(b"CEDT", cfmws(BASE, 12 * GiB, EIW[ways], 0, EIG[4096], [20 + i for i in range(ways)]))
    r = region(make_region(tmp_path / "sys", ways=ways, gran=4096, start=BASE, size=256 * MiB * ways,
                           positions=_bridges(ways), cedt=table))
    assert r["arithmetic"] == "modulo"
    assert devices_at(r, [c * 4096 for c in range(2 * ways)]) == [f"mem{c % ways}" for c in range(2 * ways)]
    # a target 4 KiB in: device 0 is position 1
    g = cxl.geometry(r, BASE + 4096)
    assert g["devices"] == [f"mem{(1 + i) % ways}" for i in range(ways)] and g["shift"] == 1


# ---------------------------------------------------------------- unknown arithmetic: refused
@pytest.mark.parametrize("case,why", [
    ("no cedt", "no CEDT"),
    ("outside", "HPA != SPA"),
    ("arith 2", "interleave arithmetic 2"),
    ("no cxims", "no CXIMS"),
    ("broken", "malformed"),
])
def test_unknown_arithmetic_over_two_bridges_is_refused(tmp_path: Path, case: str, why: str) -> None:
    tables = {
        "no cedt": None,
        "outside": acpi_table(b"CEDT", cfmws(BASE + 16 * GiB, GiB, EIW[2], 0, 0, [7, 9])),
        "arith 2": acpi_table(b"CEDT", cfmws(BASE, 4 * GiB, EIW[2], 2, 0, [7, 9])),
        "no cxims": acpi_table(b"CEDT", cfmws(BASE, 4 * GiB, EIW[2], 1, 0, [7, 9])),
        "broken": b"CEDT\x00",
    }
    r = region(make_region(tmp_path / "sys", ways=2, gran=256, start=BASE, size=256 * MiB, positions=XOR2,
                           cedt=tables[case]))
    assert r["arithmetic"] is None and why in r["arithmetic_why"]
    g = cxl.geometry(r, BASE)
    assert g["devices"] is None and "spans 2 host bridge(s)" in g["why"] and why in g["why"]
    with pytest.raises(ValueError, match="interleave arithmetic is unknown"):
        cxl.locate(r, BASE, 0)


def test_unreadable_cedt_says_so(tmp_path: Path) -> None:
    sysd = make_region(tmp_path / "sys", ways=2, gran=256, start=BASE, size=256 * MiB, positions=XOR2, cedt=b"")
    (sysd / cxl.CEDT).unlink()
    (sysd / cxl.CEDT).mkdir()  # reading it fails as an unreadable file does (EISDIR here, EACCES for users)
    cedt, why = cxl.read_cedt(sysd)
    assert cedt is None and why is not None and "unreadable" in why


def test_normalized_addressing_is_refused(tmp_path: Path) -> None:
    """AMD's PRM translation (Linux 7.0 atl.c): endpoint decoders programmed passthrough (their HPA
    start is their DPA start, 1 way) under a 2-way region: no arithmetic of ours names the device,
    even below one host bridge."""
    sysd = make_region(tmp_path / "sys", ways=2, gran=256, start=BASE, size=256 * MiB,
                       positions=[("memA", 7), ("memB", 7)], cedt=None)
    for dec in sorted((sysd / "bus/cxl/devices").glob("decoder1*")):
        (dec / "start").write_text(hex(DPA) + "\n")
        (dec / "interleave_ways").write_text("1\n")
    r = region(sysd)
    assert r["arithmetic"] is None and "ACPI PRM" in r["arithmetic_why"]
    g = cxl.geometry(r, BASE)
    assert g["devices"] is None and "normalized addressing" in g["why"]
    # a decoder that decodes its share of the region itself (4 KiB-interleaved HPA) is not that
    (sysd / "bus/cxl/devices/decoder10.0/start").write_text(hex(BASE) + "\n")
    (sysd / "bus/cxl/devices/decoder10.0/interleave_ways").write_text("2\n")
    assert region(sysd)["arithmetic"] == "modulo"


def test_one_bridge_needs_no_cedt(tmp_path: Path) -> None:
    """Two devices below one host bridge: the bridge's own decoder interleaves by modulo."""
    r = region(make_region(tmp_path / "sys", ways=2, gran=256, start=BASE, size=256 * MiB,
                           positions=[("memA", 7), ("memB", 7)], cedt=None))
    assert r["arithmetic"] == "modulo" and cxl.geometry(r, BASE)["devices"] == ["memA", "memB"]


# ---------------------------------------------------------------- info and the parameter check
def test_info_and_check_refuse_per_device_placement(tmp_path: Path) -> None:
    from fake_pmemlab import make_fake

    sysd = xor2(tmp_path, 256 * MiB, [0x10100])
    (sysd / "devices/system/cpu").mkdir(parents=True)
    (sysd / "devices/system/cpu/online").write_text("0-1\n")
    proc = tmp_path / "proc"
    proc.mkdir()
    (proc / "cpuinfo").write_text("processor\t: 0\nflags\t\t: sse2\n")
    host = probe.HostPaths(proc=proc, sys=sysd, dev=tmp_path / "dev")
    fake = make_fake(tmp_path, target="/dev/pmem3")
    (fake.root / "target_phys").write_text(f"{BASE:#x}\n")
    info = machine.gather_info(fake.module(), host, runner=lambda argv: probe.ToolResult(127, "", "none"))
    t = info["target"]
    assert t["devices"] is None and "XOR interleave" in t["devices_why"]
    text = machine.format_info(info)
    assert "placement=per-dimm is refused here: XOR interleave" in text and "arithmetic xor" in text
    facts = P.TargetFacts(per_device_why=t["devices_why"])
    point = {**P.defaults(), "placement": "per-dimm"}
    (problem,) = P.check_point(point, facts)
    assert problem.key == "placement" and problem.kind == "unsupported" and "XOR interleave" in problem.reason
    assert P.check_point({**point, "placement": "per-thread"}, facts) == []


def test_the_bed_fixture_is_unchanged(tmp_path: Path) -> None:
    """The bed's region (two devices below one bridge, no CEDT in the fixture) keeps its order."""
    r = cxl.region_at(make_cxl_sysfs(tmp_path / "sys"), 0x370000000 + GiB)
    assert r is not None and r["arithmetic"] == "modulo" and r["window"] is None


def xor_hpa_to_spa(maps: list[int], hpa: int) -> int:
    """Linux's cxl_xor_hpa_to_spa (6.11+): for each XORMAP, its lowest set bit is replaced by the
    parity of hpa & XORMAP, in order."""
    for m in maps:
        if m:
            low = (m & -m).bit_length() - 1
            hpa = (hpa & ~(1 << low)) | ((bin(hpa & m).count("1") & 1) << low)
    return hpa


@pytest.mark.parametrize("ways,maps", [
    (2, [0x100 | 1 << 16 | 1 << 23]),
    (4, [0x100 | 1 << 14 | 1 << 21, 0x200 | 1 << 15 | 1 << 30]),
])
def test_xor_agrees_with_the_kernels_dpa_to_spa(tmp_path: Path, ways: int, maps: list[int]) -> None:
    """The other half of Linux's XOR arithmetic: the device at region position p holds the modulo
    address of its DPA (region start + (chunk * ways + p) * gran) with the XOR maps applied
    (cxl_dpa_to_hpa, then hpa_to_spa). Where such an address lands by `hb_index` is p again."""
    table = acpi_table(b"CEDT", cfmws(BASE, 16 * GiB, EIW[ways], 1, EIG[256], [20 + i for i in range(ways)])
                       + cxims(EIG[256], maps))
    r = region(make_region(tmp_path / "sys", ways=ways, gran=256, start=BASE, size=GiB,
                           positions=_bridges(ways), cedt=table))
    for chunk in [0, 1, 7, 255, 256, 4097, (1 << 19) + 3, (GiB // 256 // ways) - 1]:
        for p in range(ways):
            spa = xor_hpa_to_spa(maps, BASE + (chunk * ways + p) * 256 + 40)
            assert cxl.position_at(r, spa) == (p, None), (chunk, p, hex(spa))
            got = cxl.locate(r, BASE, spa - BASE)
            assert got["memdev"] == f"mem{p}" and got["dpa"] == DPA + chunk * 256 + 40
