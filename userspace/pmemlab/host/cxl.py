"""CXL memory as the kernel's CXL stack describes it, and what the firmware advertises for a node.

- `region_at(sys, phys)`: the CXL region holding a physical address (an fsdax namespace or devdax
  device on a CXL region, the first page of a DRAM target): its mode, address range, interleave
  ways and granularity, and each target (endpoint decoder) with its position, memdev, serial,
  capacity, device addresses (DPA) and host bridge, from /sys/bus/cxl/devices (the kernel's ABI,
  Documentation/ABI/testing/sysfs-bus-cxl). Nothing is asked of the `cxl` tool.
- `geometry(region, phys)`: the region seen from a target that starts at `phys`: which memdev is
  device i of pmemlab's per-device placement (`placement=per-dimm`: device i of target offset o
  is (o / interleave_gran) mod interleave_ways), and where target offset o lands (`locate`).
  Across host bridges the platform picks the host bridge by the CXL fixed memory window's
  arithmetic, read from the firmware's CEDT (`parse_cedt`: its CFMWS and CXIMS structures):
  modulo, or XOR (`hb_index`); where it cannot be known (the CEDT unreadable, no window holding
  the region: addresses translated, HPA != SPA as AMD's PRM does) or where it makes the device of
  an offset depend on more than its position in the interleave round (XOR maps over higher
  address bits), per-device placement names no device and says why (`devices` None, `why`).
- `node_regions(sys, node)`: the CXL ram regions onlined as system RAM into a node.
- `advertised(sys, node)`: the node's access0 performance (HMAT, or for a CXL node the CDAT of
  its devices as the kernel combined it) and `memory_tier(sys, node)`.
- `inventory(sys)`: everything the machine has of CXL, with or without a target on it (`pmemlab
  info`): the memdevs, the decoders (root: the platform's windows; switch; endpoint), every region
  (pmem and ram) with its node, dax devices or nvdimm region, and the advertised values.
- `user_memory(sys)`: the CXL memory the user backend can reach by name (`target=cxl`): the node
  of a ram region onlined as system RAM, else the devdax device of one.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pmemlab.params import parse_cpulist

CXL = "bus/cxl/devices"
ADV_ATTRS = ("read_latency", "write_latency", "read_bandwidth", "write_bandwidth")


def _text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _int(path: Path) -> int | None:
    text = _text(path)
    if not text:
        return None
    try:
        return int(text, 0)
    except ValueError:
        return None


def numbered(base: Path, prefix: str) -> list[tuple[int, Path]]:
    """The entries PREFIXN of a sysfs directory (region3, node0, memory_tier4), by their number N;
    none where the directory is missing."""
    try:
        found = [(int(p.name[len(prefix):]), p) for p in base.iterdir()
                 if p.name.startswith(prefix) and p.name[len(prefix):].isdigit()]
    except OSError:
        return []
    return sorted(found, key=lambda e: e[0])


def _region_dirs(sys: Path) -> list[Path]:
    return [p for _, p in numbered(sys / CXL, "region")]


def _host_bridge(real: Path) -> str | None:
    """The PCI host bridge a device sits under: the pciDDDD:BB component of its sysfs path (a CXL
    host bridge is an ACPI0016 device with its own PCI root)."""
    for part in real.parts:
        if part.startswith("pci") and ":" in part:
            return part
    return None


def _target(sys: Path, region: Path, position: int) -> dict[str, Any] | None:
    """Position `position` of a region: its endpoint decoder and that decoder's memdev."""
    decoder = _text(region / f"target{position}")
    if not decoder:
        return None
    dec = sys / CXL / decoder
    out: dict[str, Any] = {"position": position, "decoder": decoder,
                           "dpa_resource": _int(dec / "dpa_resource"), "dpa_size": _int(dec / "dpa_size"),
                           "mode": _text(dec / "mode"), "hpa_start": _int(dec / "start"),
                           "decoder_ways": _int(dec / "interleave_ways")}
    try:
        port = dec.resolve(strict=True).parent  # endpointN
        memdev = (port / "uport").resolve(strict=True)
    except OSError:
        return out
    bridge = _host_bridge(memdev)
    out.update({"memdev": memdev.name, "serial": _int(memdev / "serial"),
                "ram_size": _int(memdev / "ram" / "size"), "pmem_size": _int(memdev / "pmem" / "size"),
                "pci": memdev.parent.name, "host_bridge": bridge,
                "host_bridge_uid": _host_bridge_uid(sys, memdev, bridge)})
    return out


def _host_bridge_uid(sys: Path, memdev: Path, bridge: str | None) -> int | None:
    """The ACPI _UID of a memdev's host bridge, the number the CEDT's windows list their targets by:
    the host bridge's firmware node (ACPI0016), else the CXL root port's dport<UID> link to it."""
    if bridge is None:
        return None
    for parent in memdev.parents:
        if parent.name == bridge:
            uid = _int(parent / "firmware_node" / "uid")
            if uid is not None:
                return uid
            break
    for root in sorted((sys / CXL).glob("root*")):
        for link in root.glob("dport*"):
            try:
                if link.resolve(strict=True).name == bridge and link.name[5:].isdigit():
                    return int(link.name[5:])
            except OSError:
                continue
    return None


def _region_node(sys: Path, region: Path, mode: str | None, resource: int | None) -> int | None:
    """The NUMA node of a region's memory: its dax device's target_node (ram), or the target_node
    of the nvdimm region it became (pmem)."""
    for dax in sorted(region.glob("dax_region*/dax*.*")):
        node = _int(dax / "target_node")
        if node is not None and node >= 0:
            return node
    if resource is not None:
        for nd in sorted(sys.glob(f"{CXL}/nvdimm-bridge*/ndbus*/region*")):
            if _int(nd / "resource") == resource:
                node = _int(nd / "target_node")
                if node is not None and node >= 0:
                    return node
    return None


# ---- the firmware's CXL Early Discovery Table (ACPI CEDT; CXL 3.1 section 9.18) ----
CEDT = "firmware/acpi/tables/CEDT"
ARITH_MODULO, ARITH_XOR = 0, 1
ARITHMETIC = {ARITH_MODULO: "modulo", ARITH_XOR: "xor"}
_HEADER = 36  # the ACPI table header (signature, length, revision, checksum, OEM ids)
_CFMWS_FIXED = 36  # type, reserved, length, reserved, base, size, ways, arithmetic, reserved, gran, restrictions, qtg
_CXIMS_FIXED = 8  # type, reserved, length, reserved, hbig, nr_xormaps


def ways_of(eiw: int) -> int | None:
    """Interleave ways from their encoding (ENIW): 0-4 -> 1, 2, 4, 8, 16; 8-10 -> 3, 6, 12."""
    if 0 <= eiw <= 4:
        return 1 << eiw
    if 8 <= eiw <= 10:
        return 3 << (eiw - 8)
    return None


def gran_of(eig: int) -> int | None:
    """Interleave granularity in bytes from its encoding (HBIG): 0-6 -> 256 B .. 16 KiB."""
    return 256 << eig if 0 <= eig <= 6 else None


def parse_cedt(data: bytes) -> dict[str, list[dict[str, Any]]]:
    """The CEDT's fixed memory windows (CFMWS, type 1: base, size, ways, granularity, arithmetic,
    the host bridges' _UIDs in interleave order) and XOR maps (CXIMS, type 2: granularity and the
    XORMAP list), little-endian as ACPICA's acpi_cedt_cfmws / acpi_cedt_cxims lay them out. Other
    structures (CHBS, RDPAS) are skipped. ValueError for a table that is not a whole CEDT."""
    if len(data) < _HEADER or data[:4] != b"CEDT":
        raise ValueError("not a CEDT (no CEDT signature)")
    length = int.from_bytes(data[4:8], "little")
    if length > len(data) or length < _HEADER:
        raise ValueError(f"CEDT length {length} does not match its {len(data)} bytes")
    windows: list[dict[str, Any]] = []
    xormaps: list[dict[str, Any]] = []
    at = _HEADER
    while at + 4 <= length:
        kind, size = data[at], int.from_bytes(data[at + 2:at + 4], "little")
        if size < 4 or at + size > length:
            raise ValueError(f"CEDT structure at byte {at}: length {size} runs past the table")
        body = data[at:at + size]
        if kind == 1:
            if size < _CFMWS_FIXED:
                raise ValueError(f"CFMWS at byte {at}: {size} bytes, under its {_CFMWS_FIXED}")
            eiw, arith = body[24], body[25]
            eig = int.from_bytes(body[28:32], "little")
            ways = ways_of(eiw)
            n = ways or 0
            if size < _CFMWS_FIXED + 4 * n:
                raise ValueError(f"CFMWS at byte {at}: {size} bytes cannot hold {n} targets")
            windows.append({
                "base": int.from_bytes(body[8:16], "little"), "size": int.from_bytes(body[16:24], "little"),
                "eiw": eiw, "ways": ways, "eig": eig, "gran": gran_of(eig), "arithmetic": arith,
                "restrictions": int.from_bytes(body[32:34], "little"), "qtg_id": int.from_bytes(body[34:36], "little"),
                "targets": [int.from_bytes(body[36 + 4 * i:40 + 4 * i], "little") for i in range(n)],
            })
        elif kind == 2:
            if size < _CXIMS_FIXED:
                raise ValueError(f"CXIMS at byte {at}: {size} bytes, under its {_CXIMS_FIXED}")
            hbig, nr = body[6], body[7]
            if size < _CXIMS_FIXED + 8 * nr:
                raise ValueError(f"CXIMS at byte {at}: {size} bytes cannot hold {nr} XORMAPs")
            xormaps.append({"eig": hbig, "gran": gran_of(hbig),
                            "xormaps": [int.from_bytes(body[8 + 8 * i:16 + 8 * i], "little") for i in range(nr)]})
        at += size
    return {"windows": windows, "cxims": xormaps}


def read_cedt(sys: Path) -> tuple[dict[str, list[dict[str, Any]]] | None, str | None]:
    """The machine's CEDT parsed, or None and why not (absent, unreadable without root, malformed)."""
    path = sys / CEDT
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None, f"no CEDT ({path}): the firmware describes no CXL windows"
    except OSError as e:
        return None, f"the CEDT ({path}) is unreadable: {e.strerror} (it is root's to read)"
    try:
        return parse_cedt(data), None
    except ValueError as e:
        return None, f"the CEDT ({path}) is malformed: {e}"


def xor_maps(cedt: dict[str, list[dict[str, Any]]], window: dict[str, Any]) -> list[int] | None:
    """The XORMAPs an XOR window uses, as Linux takes them (cxl_parse_cxims): from the CXIMS of the
    window's granularity, the first log2(ways) (2, 4, 8, 16 ways) or log2(ways / 3) (6, 12 ways);
    none for 1 and 3 ways; None when no CXIMS has as many for that granularity."""
    ways = window["ways"]
    if ways in (1, 3):
        return []
    need = (ways if ways & (ways - 1) == 0 else ways // 3).bit_length() - 1
    for c in cedt["cxims"]:
        if c["gran"] == window["gran"]:
            return c["xormaps"][:need] if len(c["xormaps"]) >= need else None
    return None


def hb_index(window: dict[str, Any], maps: list[int], hpa: int) -> int:
    """Which of an XOR window's targets (host bridges, by their index in the CFMWS list) decodes
    host physical address `hpa` (CXL 3.1 Table 9-22, Linux's cxl_xor_calc_n): bit i of the index
    is the parity of hpa & XORMAP[i]; with 3, 6 or 12 ways the bits above them are
    HPA[51:eig + eiw] mod 3, the address bits above the granule and the XOR-picked bits.
    (Linux's code adds the granularity in bytes where the table has its encoding, and takes the
    masked address mod 3 without shifting it down; this follows the table the code cites.)"""
    ways = window["ways"]
    n = 0
    for i, m in enumerate(maps):
        n |= (bin(hpa & m).count("1") & 1) << i
    if ways & (ways - 1):
        low = window["eig"] + window["eiw"]
        n |= (((hpa & ((1 << 52) - 1)) >> low) % 3) << len(maps)
    return n


def window_at(cedt: dict[str, list[dict[str, Any]]], start: int, size: int) -> dict[str, Any] | None:
    """The CEDT window whose range holds [start, start + size)."""
    for w in cedt["windows"]:
        if w["base"] <= start and start + size <= w["base"] + w["size"]:
            return w
    return None


def host_interleave(sys: Path, start: int | None, size: int | None, bridges: int) -> dict[str, Any]:
    """How the platform spreads a region over its host bridges: `arithmetic` "modulo" or "xor" (and
    the window's `hb_ways`, `hb_targets`, `xormaps`), or None with `arithmetic_why` when a region
    over several host bridges has no window the CEDT describes. One host bridge needs no window:
    its own decoders interleave by modulo."""
    out: dict[str, Any] = {"arithmetic": None, "arithmetic_why": None, "window": None}
    if start is None or not size:
        return out
    if bridges <= 1:
        out["arithmetic"] = "modulo"
        return out
    cedt, why = read_cedt(sys)
    window = window_at(cedt, start, size) if cedt is not None else None
    if window is None:
        out["arithmetic_why"] = why or (f"no CXL window of the CEDT holds {start:#x}-{start + size - 1:#x}: "
                                        "the host translates its addresses (HPA != SPA, as AMD's PRM does)")
        return out
    out["window"] = {k: window[k] for k in ("base", "size", "ways", "gran", "targets")}
    arith = ARITHMETIC.get(window["arithmetic"])
    if arith is None or window["ways"] is None:
        out["arithmetic_why"] = (f"the CEDT window at {window['base']:#x} has interleave arithmetic "
                                 f"{window['arithmetic']} and ways encoding {window['eiw']}: not modulo or XOR "
                                 "of 1-16 ways")
        return out
    if arith == "xor":
        maps = xor_maps(cedt, window) if cedt is not None else None
        if maps is None:
            out["arithmetic_why"] = (f"the XOR window at {window['base']:#x} has no CXIMS with its XORMAPs "
                                     f"for granularity {window['gran']}")
            return out
        out["window"]["xormaps"] = maps
        out["window"]["eig"], out["window"]["eiw"] = window["eig"], window["eiw"]
    out["arithmetic"] = arith
    return out


def region_info(sys: Path, region: Path) -> dict[str, Any]:
    ways = _int(region / "interleave_ways")
    resource = _int(region / "resource")
    size = _int(region / "size")
    mode = _text(region / "mode")
    targets = [t for t in (_target(sys, region, i) for i in range(ways or 0)) if t is not None]
    access = {k: _int(region / "access0" / k) for k in ADV_ATTRS}
    bridges = sorted({t["host_bridge"] for t in targets if t.get("host_bridge")})
    # AMD's normalized addressing (Linux 7.0, drivers/cxl/core/atl.c): the endpoint decoders pass
    # addresses through (their HPA range is their DPA range, one way) and the platform's PRM
    # handler translates DPA to SPA, the chunk's device varying from one round to the next
    normalized = bool(ways and ways > 1 and targets) and all(
        t.get("hpa_start") is not None and t.get("hpa_start") == t.get("dpa_resource") and t.get("decoder_ways") == 1
        for t in targets)
    interleave = host_interleave(sys, resource, size, len(bridges))
    if normalized:
        interleave = {"arithmetic": None, "window": None,
                      "arithmetic_why": "the endpoint decoders pass addresses through (HPA = DPA, 1 way: normalized "
                                        "addressing) and the platform translates them through ACPI PRM (HPA != SPA): "
                                        "which device holds a chunk varies from round to round"}
    return {
        "region": region.name, "mode": mode, "resource": resource, "size": size,
        "interleave_ways": ways, "interleave_gran": _int(region / "interleave_granularity"),
        "targets": targets, "host_bridges": bridges,
        "node": _region_node(sys, region, mode, resource),
        "access0": access if any(v is not None for v in access.values()) else None,
        **interleave,
    }


def regions(sys: Path) -> list[dict[str, Any]]:
    return [region_info(sys, r) for r in _region_dirs(sys)]


def region_at(sys: Path, phys: int | None) -> dict[str, Any] | None:
    """The CXL region whose address range holds `phys`."""
    if phys is None:
        return None
    for r in _region_dirs(sys):
        start, size = _int(r / "resource"), _int(r / "size")
        if start is not None and size and start <= phys < start + size:
            return region_info(sys, r)
    return None


def position_at(region: dict[str, Any], hpa: int) -> tuple[int | None, str | None]:
    """The region position (target) whose device holds host physical address `hpa`, or None and
    why it cannot be told. Modulo (one host bridge, or a modulo window): chunk (hpa - start) / gran
    mod ways, Linux's position order. XOR window: the host bridge by `hb_index`, then below it that
    bridge's decoder by modulo over the bits above the window's interleave (Linux programs it with
    granularity gran * host-bridge ways, 3, 6, 12 ways counted as 1, 2, 4), its targets in their
    region order."""
    ways, gran, start = region["interleave_ways"], region["interleave_gran"], region["resource"]
    if not ways or not gran or start is None:
        return None, "the region has no interleave geometry"
    arith = region.get("arithmetic", "modulo")
    if arith == "modulo":
        return ((hpa - start) // gran) % ways, None
    if arith != "xor":
        return None, (f"{region['region']} spans {len(region['host_bridges'])} host bridge(s) and the platform's "
                      f"interleave arithmetic is unknown: {region.get('arithmetic_why')}")
    w = region["window"]
    n = hb_index(w, w["xormaps"], hpa)
    uid = w["targets"][n] if n < len(w["targets"]) else None
    under: list[int] = sorted(int(t["position"]) for t in region["targets"] if t.get("host_bridge_uid") == uid)
    if not under:
        return None, f"no target of {region['region']} sits below host bridge _UID {uid} (window target {n})"
    hb_ways = w["ways"] if w["ways"] & (w["ways"] - 1) == 0 else w["ways"] // 3
    return under[(hpa // (gran * hb_ways)) % len(under)], None


def _rounds(count: int) -> list[int]:
    """Interleave rounds of a target to check a device order on: the first 64, every power of two
    and its predecessor, and the last (an XOR map's bit above the round flips at a power of two)."""
    picks = set(range(min(count, 64)))
    bit = 1
    while bit < count:
        picks.update((bit - 1, bit))
        bit <<= 1
    picks.add(count - 1)
    return sorted(r for r in picks if 0 <= r < count)


def geometry(region: dict[str, Any], phys: int, size: int | None = None) -> dict[str, Any]:
    """The region as a target starting at `phys` (of `size` bytes, else to the region's end) sees
    it: `devices` lists the memdevs in the order of pmemlab's per-device placement (device i holds
    the chunks of target offset o with (o / gran) mod ways == i), `shift` is the position of device
    0 (the chunk of target offset 0). Where the platform's arithmetic is unknown, or makes the
    device of a chunk depend on more than (o / gran) mod ways (XOR maps over bits above the
    round), `devices` is None and `why` says so: per-device placement names no device there."""
    ways, gran, start = region["interleave_ways"], region["interleave_gran"], region["resource"]
    out: dict[str, Any] = {"offset_in_region": phys - start if start is not None else None, "shift": 0,
                           "aligned": (phys - start) % (gran * ways) == 0 if ways and gran and start is not None else None,
                           "devices": [], "arithmetic": region.get("arithmetic"), "why": None}
    if not ways or not gran or start is None:
        return out
    by_pos = {t["position"]: t for t in region["targets"]}
    first = [position_at(region, phys + i * gran) for i in range(ways)]
    why = next((w for _, w in first if w), None)
    if why is None and region.get("arithmetic") == "xor":
        end = start + region["size"] if size is None else phys + size
        count = max(1, (end - phys) // (gran * ways))
        for r in _rounds(count):
            got = [position_at(region, phys + (r * ways + i) * gran)[0] for i in range(ways)]
            if got != [p for p, _ in first]:
                why = (f"XOR interleave: the device of target offset o depends on address bits above the "
                       f"interleave round (xormaps {', '.join(hex(m) for m in region['window']['xormaps'])}): "
                       f"round {r} of the target puts its chunks on positions {got}, round 0 on "
                       f"{[p for p, _ in first]}, so no device i of per-device placement exists")
                break
    if why is not None:
        out.update(devices=None, why=why, shift=None)
        return out
    out["shift"] = first[0][0]
    out["devices"] = [by_pos.get(p, {}).get("memdev") for p, _ in first]
    return out


def locate(region: dict[str, Any], phys: int, offset: int) -> dict[str, Any]:
    """Where target offset `offset` of a target starting at `phys` lands: the region position (the
    platform's arithmetic: `position_at`), its memdev and serial, and the device address (DPA)
    within the endpoint decoder's range (the endpoint drops the interleave bits: chunk / ways).
    ValueError where the arithmetic is unknown."""
    ways, gran = region["interleave_ways"], region["interleave_gran"]
    rel = phys + offset - region["resource"]
    chunk, within = divmod(rel, gran)
    position, why = position_at(region, phys + offset)
    if position is None:
        raise ValueError(why)
    target = next(t for t in region["targets"] if t["position"] == position)
    dpa = (target["dpa_resource"] or 0) + (chunk // ways) * gran + within
    return {"position": position, "memdev": target.get("memdev"), "serial": target.get("serial"), "dpa": dpa}


def node_regions(sys: Path, node: int | None) -> list[dict[str, Any]]:
    """The CXL ram regions whose memory is onlined as system RAM into `node` (a dax device of the
    region bound to kmem, with that target node)."""
    if node is None:
        return []
    out = []
    for r in _region_dirs(sys):
        for dax in sorted(r.glob("dax_region*/dax*.*")):
            driver = (dax / "driver").resolve().name if (dax / "driver").exists() else ""
            if driver == "kmem" and _int(dax / "target_node") == node:
                out.append(region_info(sys, r))
                break
    return out


def device_region(sys: Path, device: str | None, phys: int | None) -> dict[str, Any] | None:
    """The CXL region of a target: by its physical address, else (a devdax device without one)
    by the dax device's own address range."""
    found = region_at(sys, phys)
    if found is not None or not device:
        return found
    name = os.path.basename(device)
    if name.startswith("dax"):
        return region_at(sys, _int(sys / "bus/dax/devices" / name / "resource"))
    return None


def mem_node(sys: Path, device: str | None, kind: str | None, node: int | None) -> int | None:
    """The NUMA node of a target's memory itself (its proximity domain): a DRAM target's node, a
    devdax device's or an fsdax namespace's region's target_node (a pmem device's numa_node is the
    nearest node with CPUs, not where the memory is)."""
    if kind in ("dram", "user-dram"):
        return node
    if device and device.startswith("/"):
        name = os.path.basename(device)
        if name.startswith("dax"):
            found = _int(sys / "bus/dax/devices" / name / "target_node")
            if found is not None and found >= 0:
                return found
        block = sys / "class/block" / name / "device"
        if not block.exists() and not device.startswith("/dev/"):
            try:
                st = os.stat(device)
                block = sys / f"dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}" / "device"
            except OSError:
                pass
        try:
            path = block.resolve(strict=True)
        except OSError:
            path = None
        for parent in (path, *(path.parents if path else ())):
            if parent is not None and parent.name.startswith("region") and (parent / "target_node").exists():
                found = _int(parent / "target_node")
                if found is not None and found >= 0:
                    return found
                break
    return node


def advertised(sys: Path, node: int | None, regions: list[str] | None = None) -> dict[str, Any]:
    """access0 of a node: the latency (ns) and bandwidth (MB/s) the firmware advertises from its
    best initiator (HMAT; for a CXL node the kernel's combination of the devices' CDAT, the links
    and the host bridge's generic port), and those initiators; `source` says where they were read.
    A CXL node the kernel gave no access0 (7.2 leaves the node without it while the region has its
    own: docs/method.md) takes the access0 of the CXL region it lies in (`regions`, the target's
    own, else the ram regions onlined into the node), with no initiator named. Empty values where
    the kernel has none (no HMAT)."""
    out: dict[str, Any] = {"node": node, "initiators": None, "source": None, **{k: None for k in ADV_ATTRS}}
    if node is None or node < 0:
        return out
    base = sys / f"devices/system/node/node{node}/access0/initiators"
    for k in ADV_ATTRS:
        out[k] = _int(base / k)
    if any(out[k] is not None for k in ADV_ATTRS):
        out["initiators"] = ",".join(str(n) for n, _ in numbered(base, "node")) or None
        out["source"] = f"node{node} access0"
        return out
    names = list(regions or []) or [r["region"] for r in node_regions(sys, node)]
    for name in names:
        vals = {k: _int(sys / CXL / name / "access0" / k) for k in ADV_ATTRS}
        if any(v is not None for v in vals.values()):
            out.update(vals)
            out["source"] = f"{name} access0 (node{node} has none)"
            break
    return out


def memory_tier(sys: Path, node: int | None) -> dict[str, Any]:
    """The memory tier of a node (/sys/devices/virtual/memory_tiering/memory_tierN/nodelist): the
    tier's number (lower: faster, the kernel's abstract distance) and its nodes."""
    if node is None or node < 0:
        return {"tier": None, "nodes": None}
    for tier, t in numbered(sys / "devices/virtual/memory_tiering", "memory_tier"):
        text = _text(t / "nodelist") or ""
        try:
            nodes = parse_cpulist(text) if text else []
        except ValueError:
            continue
        if node in nodes:
            return {"tier": tier, "nodes": text}
    return {"tier": None, "nodes": None}


def target_cxl(sys: Path, device: str | None, kind: str | None, phys: int | None, node: int | None,
               size: int | None = None) -> dict[str, Any]:
    """Everything `pmemlab info` shows about a target on CXL memory: its region (a contiguous
    target: fsdax, devdax) with the per-device geometry, or for a DRAM target the CXL ram regions
    of its node. Empty when the target is not on CXL memory."""
    if kind in ("dram", "user-dram"):
        found = node_regions(sys, node)
        return {"regions": found} if found else {}
    region = device_region(sys, device, phys)
    if region is None:
        return {}
    start = phys if phys is not None else region["resource"]
    return {"regions": [region], **geometry(region, start, size), "phys": start}


def _decoder_key(name: str) -> tuple[int, int]:
    port, _, index = name.removeprefix("decoder").partition(".")
    return (int(port), int(index)) if port.isdigit() and index.isdigit() else (1 << 30, 0)


def decoders(sys: Path) -> list[dict[str, Any]]:
    """Every CXL decoder, by port and index: `root` (a CXL window of the platform: `cap_pmem`,
    `cap_ram`, its host bridges in `target_list`), `switch` (a host bridge's or a switch's) or
    `endpoint` (a memdev's: its `mode` and device address range)."""
    try:
        names = sorted((p.name for p in (sys / CXL).iterdir() if p.name.startswith("decoder")), key=_decoder_key)
    except OSError:
        return []
    out = []
    for name in names:
        d = sys / CXL / name
        kind = "root" if (d / "cap_pmem").exists() else "endpoint" if (d / "dpa_size").exists() else "switch"
        dec: dict[str, Any] = {"decoder": name, "kind": kind, "start": _int(d / "start"), "size": _int(d / "size"),
                               "interleave_ways": _int(d / "interleave_ways"),
                               "interleave_gran": _int(d / "interleave_granularity")}
        if kind == "root":
            dec.update(pmem_capable=_int(d / "cap_pmem") == 1, volatile_capable=_int(d / "cap_ram") == 1,
                       target_list=_text(d / "target_list"), qos_class=_int(d / "qos_class"))
        elif kind == "switch":
            dec["target_list"] = _text(d / "target_list")
        else:
            dec.update(mode=_text(d / "mode"), dpa_resource=_int(d / "dpa_resource"), dpa_size=_int(d / "dpa_size"))
            try:
                dec["memdev"] = (d.resolve(strict=True).parent / "uport").resolve(strict=True).name
            except OSError:
                dec["memdev"] = None
        out.append(dec)
    return out


def memdevs(sys: Path) -> list[dict[str, Any]]:
    """Every CXL memory device (memN): serial, ram and pmem capacity, its PCI device, host bridge
    and NUMA node."""
    out = []
    for _, p in numbered(sys / CXL, "mem"):
        try:
            real = p.resolve(strict=True)
        except OSError:
            continue
        out.append({"memdev": p.name, "serial": _int(p / "serial"), "ram_size": _int(p / "ram" / "size"),
                    "pmem_size": _int(p / "pmem" / "size"), "numa_node": _int(p / "numa_node"),
                    "firmware_version": _text(p / "firmware_version"), "pci": real.parent.name,
                    "host_bridge": _host_bridge(real)})
    return out


def _driver(dev: Path) -> str | None:
    link = dev / "driver"
    return link.resolve().name if link.exists() else None


def region_daxes(region: Path) -> list[dict[str, Any]]:
    """The dax devices of a ram region: name, driver (`kmem`: onlined as system RAM; `device_dax`:
    /dev/daxN.M), target node and size."""
    return [{"dax": dax.name, "driver": _driver(dax), "target_node": _int(dax / "target_node"),
             "size": _int(dax / "size"), "device": f"/dev/{dax.name}"}
            for dax in sorted(region.glob("dax_region*/dax*.*"))]


def _nvdimm_region(sys: Path, resource: int | None) -> str | None:
    """The nvdimm region a CXL pmem region became (the one at its address)."""
    if resource is None:
        return None
    for nd in sorted(sys.glob(f"{CXL}/nvdimm-bridge*/ndbus*/region*")):
        if _int(nd / "resource") == resource:
            return nd.name
    return None


def inventory(sys: Path) -> dict[str, Any]:
    """What the machine has of CXL, with no target needed: the memdevs, the decoders, and every
    region with its geometry, node, what it became (dax devices of a ram region, the nvdimm region
    of a pmem one), the advertised values of its memory (its node's access0, else the region's own)
    and the node's memory tier. Empty lists where the kernel has no CXL bus."""
    out_regions = []
    for r in _region_dirs(sys):
        info = region_info(sys, r)
        info["dax"] = region_daxes(r)
        info["nvdimm_region"] = _nvdimm_region(sys, info["resource"]) if info["mode"] == "pmem" else None
        node = info["node"]
        info["advertised"] = advertised(sys, node, [info["region"]]) if node is not None else None
        info["memory_tier"] = memory_tier(sys, node) if node is not None else None
        out_regions.append(info)
    return {"memdevs": memdevs(sys), "decoders": decoders(sys), "regions": out_regions}


def user_memory(sys: Path) -> list[tuple[str, str]]:
    """The CXL memory the user backend reaches by name, best first: (target, what it is) for
    each ram region's dax device onlined as system RAM (`dram:N`, its node) and then each one
    kept as a devdax device (`/dev/daxN.M`)."""
    onlined, devdax = [], []
    for r in _region_dirs(sys):
        if _text(r / "mode") != "ram":
            continue
        for dax in region_daxes(r):
            node = dax["target_node"]
            if dax["driver"] == "kmem" and node is not None and node >= 0:
                onlined.append((f"dram:{node}", f"node {node}, {r.name} onlined as system RAM ({dax['dax']})"))
            elif dax["driver"] == "device_dax":
                devdax.append((dax["device"], f"{r.name} as a devdax device"))
    out: list[tuple[str, str]] = []
    for t in onlined + devdax:
        if all(t[0] != o[0] for o in out):
            out.append(t)
    return out
