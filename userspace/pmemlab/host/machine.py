"""`pmemlab info`: facts about the target and the machine, and the run conditions
every result row carries (docs/method.md, "Run conditions": target kind and device, NUMA node,
interleave geometry, page size, CPU model, frequency source, prefetchers, kernel,
toolkit version, interrupts off during timing).
"""

from __future__ import annotations

import functools
import json
import os
import platform
import socket
import struct
import subprocess
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from pmemlab import __version__
from pmemlab.host import cxl
from pmemlab import params as P
from pmemlab.backends.facts import PLACEMENT_FACTS
from pmemlab.backends.module import load_hint
from pmemlab.backends.protocol import Backend
from pmemlab.host.cxl import numbered
from pmemlab.host import ipmctl, probe, runcond, safety
from pmemlab.host.probe import HostPaths, ToolRunner
from pmemlab.params import parse_cpulist

TSC_FLAGS: tuple[str, ...] = ("constant_tsc", "nonstop_tsc")  # the timer's, not an op's: method.md
# what `pmemlab info` reports of /proc/cpuinfo's flags: the features an op may need (core/features.def,
# the one table) and the TSC's
CPU_FEATURES_OF_INTEREST: tuple[str, ...] = (*P.CPU_FEATURES, *TSC_FLAGS)
MSR_MISC_FEATURE_CONTROL = 0x1A4



def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@functools.cache
def toolkit_revision() -> str:
    """`git describe` of the tree this package runs from, else the package version. Once per
    process: the code running is the code imported at its start, whatever later writes to the
    tree (a sweep recording into tracked files) do; and in the emulated guest, which cannot write
    the host's git index, every call re-reads the tree (measured under TCG: 6-19 s each)."""
    here = Path(__file__).resolve().parent
    try:
        cp = subprocess.run(["git", "-C", str(here), "describe", "--always", "--dirty", "--tags"],
                            capture_output=True, text=True, timeout=120, check=False)
        if cp.returncode == 0 and cp.stdout.strip():
            return cp.stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return f"v{__version__}"


def git_head(top: Path | None = None) -> tuple[str, bool] | None:
    """(full commit of the tree this package runs from, whether the tree is clean), or None
    outside a git checkout."""
    here = top or Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=60, check=False)
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if head.returncode != 0 or dirty.returncode != 0:
        return None
    return head.stdout.strip(), not dirty.stdout.strip()


# --------------------------------------------------------------------------
def cpu_info(host: HostPaths) -> dict[str, Any]:
    text = _read(host.proc / "cpuinfo") or ""
    model = vendor = ""
    flags: set[str] = set()
    mhz: list[float] = []
    sockets: set[str] = set()
    for line in text.splitlines():
        if ":" not in line:
            continue
        key, _, val = line.partition(":")
        key, val = key.strip(), val.strip()
        if key == "model name" and not model:
            model = val
        elif key == "vendor_id" and not vendor:
            vendor = val
        elif key == "flags" and not flags:
            flags = set(val.split())
        elif key == "cpu MHz":
            try:
                mhz.append(float(val))
            except ValueError:
                pass
        elif key == "physical id":
            sockets.add(val)
    online_text = _read(host.sys / "devices/system/cpu/online")
    try:
        online = len(parse_cpulist(online_text)) if online_text else (os.cpu_count() or 1)
    except ValueError:
        online = os.cpu_count() or 1
    possible_text = _read(host.sys / "devices/system/cpu/possible")
    try:
        possible = max(parse_cpulist(possible_text)) + 1 if possible_text else None
    except ValueError:
        possible = None
    return {
        "model": model or platform.processor() or "unknown",
        "vendor": vendor,
        "online_cpus": online,
        "possible_cpus": possible,
        "sockets": len(sockets) or None,
        "features": {f: (f in flags) for f in CPU_FEATURES_OF_INTEREST},
        "mhz_reported": round(sum(mhz) / len(mhz), 1) if mhz else None,
        "hypervisor": "hypervisor" in flags,
    }


def numa_info(host: HostPaths) -> dict[str, Any]:
    base = host.sys / "devices/system/node"
    nodes: list[dict[str, Any]] = []
    for number, p in numbered(base, "node"):
        node: dict[str, Any] = {"node": number, "cpus": (_read(p / "cpulist") or "").strip()}
        meminfo = _read(p / "meminfo") or ""
        for line in meminfo.splitlines():
            if "MemTotal:" in line:
                try:
                    node["mem_total_kib"] = int(line.split("MemTotal:")[1].split()[0])
                except (IndexError, ValueError):
                    pass
        dist = (_read(p / "distance") or "").split()
        node["distances"] = [int(d) for d in dist if d.isdigit()]
        nodes.append(node)
    return {"nodes": nodes, "source": str(base) if nodes else "none"}


def read_prefetch_msr(host: HostPaths, cpu: int = 0) -> tuple[int | None, str]:
    """MSR 0x1a4 of one CPU (bits 0-3 set = prefetchers off), or why it is unknown."""
    path = host.dev / f"cpu/{cpu}/msr"
    if not path.exists():
        return None, "unknown: no /dev/cpu/N/msr (sudo modprobe msr)"
    try:
        fd = os.open(path, os.O_RDONLY)
        try:
            data = os.pread(fd, 8, MSR_MISC_FEATURE_CONTROL)
        finally:
            os.close(fd)
    except PermissionError:
        return None, "unknown: reading the MSR needs root"
    except OSError as exc:
        return None, f"unknown: MSR 0x1a4 not readable ({exc.strerror}; not an Intel CPU or a VM?)"
    if len(data) != 8:
        return None, "unknown: short MSR read"
    val = struct.unpack("<Q", data)[0]
    state = "all on" if val & 0xF == 0 else ("all off" if val & 0xF == 0xF else "partly off")
    return val, state


# --------------------------------------------------------------------------
# hypervisor and emulated namespaces: figures made under either carry a visible mark
# --------------------------------------------------------------------------
DMI_HYPERVISORS: dict[str, str] = {  # /sys/class/dmi/id/sys_vendor -> hypervisor
    "QEMU": "qemu", "VMware, Inc.": "vmware", "Microsoft Corporation": "microsoft", "Xen": "xen",
    "innotek GmbH": "oracle", "Parallels Software International Inc.": "parallels", "Amazon EC2": "amazon",
    "Google": "google", "Bochs": "bochs",
}


def hypervisor_info(host: HostPaths, runner: ToolRunner | None, cpuinfo_flag: bool) -> dict[str, Any]:
    """Is this machine a virtual one, and whose: systemd-detect-virt --vm, the DMI system vendor,
    /sys/hypervisor/type and the CPUID hypervisor bit (cpuinfo flag). `name` is the hypervisor,
    'unknown' when only the CPUID bit says there is one, 'none' when nothing does."""
    evidence: list[str] = []
    names: list[str] = []
    if runner is not None:
        res = runner(["systemd-detect-virt", "--vm"])
        found = res.stdout.strip()
        if res.returncode == 0 and found and found != "none":
            names.append(found)
            evidence.append(f"systemd-detect-virt: {found}")
    vendor = (_read(host.sys / "class/dmi/id/sys_vendor") or "").strip()
    if vendor in DMI_HYPERVISORS:
        names.append(DMI_HYPERVISORS[vendor])
        evidence.append(f"DMI sys_vendor: {vendor}")
    xen = (_read(host.sys / "hypervisor/type") or "").strip()
    if xen:
        names.append(xen)
        evidence.append(f"/sys/hypervisor/type: {xen}")
    if cpuinfo_flag:
        evidence.append("cpuinfo flag: hypervisor")
    name = names[0] if names else ("unknown" if evidence else "none")
    return {"name": name, "evidence": evidence}


def nd_provider(device: str | None, host: HostPaths) -> str | None:
    """The provider of the NVDIMM bus under `device` (/dev/pmemN, /dev/daxX.Y or a file on a DAX
    file system): 'ACPI.NFIT' (firmware NVDIMMs), 'e820' (memmap= legacy pmem: DRAM), 'nfit_test.N'
    (the kernel's test bus); None when the device is not on an NVDIMM bus or cannot be found."""
    if not device or not device.startswith("/"):
        return None
    name = os.path.basename(device)
    candidates = [host.sys / "class/block" / name / "device", host.sys / "bus/dax/devices" / name]
    if not device.startswith("/dev/"):
        try:
            st = os.stat(device)
            candidates.append(host.sys / f"dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}")
        except OSError:
            pass
    for start in candidates:
        try:
            path = start.resolve(strict=True)
        except OSError:
            continue
        for parent in (path, *path.parents):
            if parent.name.startswith("ndbus"):
                provider = _read(parent / "provider")
                return provider.strip() if provider else None
    return None


def target_emulation(kind: str | None, provider: str | None, hypervisor: str | None,
                     region_has_dimms: bool | None = None) -> str:
    """Whether the target is real persistent memory: 'no' (an NVDIMM on bare metal), 'dram' (a DRAM
    target: the papers' DRAM baseline, not an emulation), 'memmap' (DRAM reserved with memmap=,
    seen as legacy pmem), 'nfit_test' (the kernel's emulated test bus), 'virtual-nvdimm' (an
    NVDIMM that a hypervisor provides), or 'unknown'. Without the provider (results recorded
    before it was read), a region without DIMM mappings counts as memmap= (e820 regions have none)."""
    kind = str(kind or "")
    if kind in ("dram", "user-dram"):
        return "dram"
    virtual = hypervisor not in (None, "", "none")
    if provider:
        if provider == "e820":
            return "memmap"
        if provider.startswith("nfit_test"):
            return "nfit_test"
        return "virtual-nvdimm" if virtual else "no"
    if region_has_dimms is False:
        return "memmap"
    if region_has_dimms and hypervisor is not None:
        return "virtual-nvdimm" if virtual else "no"
    return "unknown"


def emulation_conditions(info: dict[str, Any]) -> dict[str, str | None]:
    """The `hypervisor` and `target_emulated` columns from `pmemlab info` facts; results recorded
    before these were detected give what their facts allow (the CPUID bit, the ndctl region)."""
    hyp = info.get("hypervisor", {}).get("name") if isinstance(info.get("hypervisor"), dict) else None
    if hyp is None and "hypervisor" in info.get("cpu", {}):
        hyp = "unknown" if info["cpu"]["hypervisor"] else "none"
    t = info.get("target", {})
    region = t.get("region")
    has_dimms = None
    if region is not None:
        has_dimms = bool(t.get("mappings"))
    return {"hypervisor": hyp, "target_emulated": target_emulation(t.get("kind"), t.get("nd_provider"), hyp, has_dimms)}


# --------------------------------------------------------------------------
def ndctl_topology(doc: Any) -> dict[str, Any]:
    """Regions (with mappings and namespaces) and DIMMs from `ndctl list -RNDi` JSON.

    ndctl prints a list or an object depending on what matched (a bare namespace
    list, {"dimms": [...], "regions": [...]}, or buses holding those); walk it all.
    """
    regions: list[dict[str, Any]] = []
    dimms: list[dict[str, Any]] = []
    loose_namespaces: list[dict[str, Any]] = []

    def walk(node: Any, in_region: bool = False) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, in_region)
            return
        if not isinstance(node, dict):
            return
        dev = str(node.get("dev", ""))
        if dev.startswith("region"):
            regions.append(node)
            return
        if dev.startswith("nmem"):
            dimms.append(node)
            return
        if dev.startswith("namespace") and not in_region:
            loose_namespaces.append(node)
            return
        for value in node.values():
            if isinstance(value, (list, dict)):
                walk(value, in_region)

    walk(doc)
    out_regions = []
    for r in regions:
        mappings = r.get("mappings", []) or []
        out_regions.append({
            "dev": r.get("dev"),
            "size": r.get("size"),
            "type": r.get("type"),
            "align": r.get("align"),
            "numa_node": r.get("numa_node"),
            "target_node": r.get("target_node"),
            "iset_id": r.get("iset_id"),
            "persistence_domain": r.get("persistence_domain"),
            "state": r.get("state", "enabled"),
            "interleave_ways": r.get("interleave_ways", len(mappings) or None),
            "mappings": [{"dimm": m.get("dimm"), "position": m.get("position"), "offset": m.get("offset"),
                          "length": m.get("length")} for m in mappings],
            "namespaces": [_ns(n) for n in r.get("namespaces", []) or []],
        })
    return {
        "regions": out_regions,
        "dimms": [{"dev": d.get("dev"), "id": d.get("id"), "handle": d.get("handle"), "phys_id": d.get("phys_id"),
                   "state": d.get("state", "enabled")} for d in dimms],
        "namespaces": [_ns(n) for n in loose_namespaces],
    }


def _ns(n: dict[str, Any]) -> dict[str, Any]:
    return {k: n.get(k) for k in ("dev", "mode", "map", "size", "blockdev", "chardev", "numa_node", "target_node",
                                  "align", "sector_size", "uuid", "state") if k in n}


def target_in_topology(topo: dict[str, Any], target: str | None) -> dict[str, Any]:
    """The namespace and region of `/dev/pmemN` (blockdev match)."""
    if not target or not target.startswith("/dev/"):
        return {}
    name = target[len("/dev/"):]
    for region in topo.get("regions", []):
        for ns in region.get("namespaces", []):
            if ns.get("blockdev") == name or ns.get("chardev") == name:
                return {"namespace": ns, "region": {k: v for k, v in region.items() if k != "namespaces"}}
    for ns in topo.get("namespaces", []):
        if ns.get("blockdev") == name:
            return {"namespace": ns, "region": None}
    return {}


def ndctl_info(runner: ToolRunner) -> dict[str, Any]:
    res = runner(["ndctl", "list", "-RNDi"])
    if res.returncode == 127:
        return {"available": False, "note": "ndctl not installed (apt-get install ndctl)"}
    if res.returncode != 0:
        return {"available": True, "error": (res.stderr or "").strip()[:300] or f"exit {res.returncode}"}
    text = res.stdout.strip()
    if not text:
        return {"available": True, "topology": {"regions": [], "dimms": [], "namespaces": []},
                "note": "ndctl found no NVDIMM regions"}
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        return {"available": True, "error": f"unparsable ndctl JSON: {exc}"}
    return {"available": True, "topology": ndctl_topology(doc)}


# --------------------------------------------------------------------------
def gather_info(module: Backend | None, host: HostPaths | None = None,
                runner: ToolRunner | None = None, with_tools: bool = True) -> dict[str, Any]:
    host = host or HostPaths()
    runner = runner or probe.run_tool
    uname = platform.uname()
    cpu = cpu_info(host)
    info: dict[str, Any] = {
        "toolkit": {"version": __version__, "revision": toolkit_revision()},
        "host": {"hostname": socket.gethostname(), "kernel": uname.release, "kernel_build": uname.version,
                 "arch": uname.machine},
        "cpu": cpu,
        "numa": numa_info(host),
        "hypervisor": hypervisor_info(host, runner if with_tools else None, bool(cpu.get("hypervisor"))),
    }
    mod: dict[str, Any] = {"loaded": False}
    facts: dict[str, Any] = {}
    if module is not None:
        mod["sysfs"] = str(module.root)
        if module.loaded():
            facts = module.facts()
            mod.update(loaded=True, version=facts.get("version"), facts=facts,
                       parameters=module.module_parameters(), run_params=module.current_params(),
                       state=module.state(), last_error=module.last_error())
        else:
            mod["note"] = f"module not loaded ({module.root} missing): {load_hint()}"
    info["module"] = mod

    cpu["tsc"] = tsc_info(host, cpu, facts)
    if facts.get("cpu_features"):
        cpu["module_features"] = str(facts["cpu_features"]).split()
    if facts.get("widths"):
        cpu["widths"] = [int(w) for w in str(facts["widths"]).split() if w.isdigit()]

    target: dict[str, Any] = {
        "device": facts.get("target"),
        "kind": facts.get("target_kind"),
        "size": facts.get("target_size"),
        "node": facts.get("target_node"),
        "page_size": facts.get("target_page_size"),
        **{k.removeprefix("target_"): facts.get(k) for k in PLACEMENT_FACTS},
        "fs_signature": facts.get("fs_signature"),
        "nd_provider": nd_provider(facts.get("target"), host),
        "partitions": facts.get("target_partitions"),
        "bad_ranges": safety.bad_ranges(facts.get("target"), host.sys, runner if with_tools else None),
    }
    if with_tools:
        nd = ndctl_info(runner)
        info["ndctl"] = {k: v for k, v in nd.items() if k != "topology"}
        topo = nd.get("topology")
        if topo is not None:
            info["ndctl"]["regions"] = topo["regions"]
            info["ndctl"]["dimms"] = topo["dimms"]
            found = target_in_topology(topo, target["device"])
            if found:
                target["namespace"] = found["namespace"]
                region = found.get("region") or {}
                target["region"] = region.get("dev")
                target["interleave_ways"] = region.get("interleave_ways")
                target["mappings"] = region.get("mappings", [])
                target["dimms"] = [m.get("dimm") for m in region.get("mappings", [])]
        info["ipmctl"] = ipmctl.probe(runner)
    if target["device"] is not None or target["kind"] is not None:
        add_cxl_and_advertised(target, facts, host)
    info["target"] = target
    info["cxl"] = cxl.inventory(host.sys)
    for node in info["numa"]["nodes"]:  # what the firmware advertises for each node (HMAT, CDAT)
        node["advertised"] = cxl.advertised(host.sys, node["node"])
        node["memory_tier"] = cxl.memory_tier(host.sys, node["node"])["tier"]

    vulns = runcond.vulnerabilities(host)
    info["mitigations"] = {"summary": runcond.mitigations_summary(vulns), "cmdline": runcond.mitigations_cmdline(host),
                           "vulnerabilities": vulns}
    info["run_state"] = runcond.machine_state(host, [])  # all online CPUs; each run records its own

    msr_val, msr_state = read_prefetch_msr(host)
    info["prefetch"] = {
        "control": facts.get("prefetch_control", "unknown"),
        "run_param": (mod.get("run_params") or {}).get("prefetch"),
        "msr_0x1a4": None if msr_val is None else hex(msr_val),
        "state": msr_state,
    }
    return info


def _phys(facts: Mapping[str, Any]) -> int | None:
    value = facts.get("target_phys")
    try:
        return int(str(value), 16) if value is not None else None
    except ValueError:
        return None


NVDIMM_GRAN = 4096  # the interleave granularity of Optane's App Direct sets (the platform's, not in ndctl)


def _sys_int(path: Path) -> int | None:
    text = _read(path)
    try:
        return int(text.strip(), 0) if text and text.strip() else None
    except ValueError:
        return None


def nvdimm_data_start(sys: Path, target: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where a target's byte 0 lies in its NVDIMM interleave set, and so which position holds its
    first chunk: device 0 of per-device placement is position (data_offset / gran) mod ways, the
    set's first DIMM only when the data starts at a multiple of ways * gran (an fsdax namespace
    puts its data after its info block, a partition starts where it starts, a namespace where the
    region's labels put it). data_offset is the target's physical address (the module's
    target_phys, else the namespace's fsdax data start from its pfn device plus the partition's
    start) less the region's (/sys/bus/nd/devices/regionN/resource). None where either is unknown."""
    region, ways = target.get("region"), len(target.get("mappings") or [])
    if not region or ways < 1:
        return None
    base = _sys_int(sys / "bus/nd/devices" / str(region) / "resource")
    phys, source = _phys(facts), "target_phys"
    device = target.get("device")
    if phys is None and isinstance(device, str) and device.startswith("/dev/"):
        name = device[len("/dev/"):]
        block = sys / "class/block" / name
        part = 0
        if (block / "partition").exists():
            part = (_sys_int(block / "start") or 0) * 512  # in 512 B sectors
            try:
                block = sys / "class/block" / block.resolve(strict=True).parent.name
            except OSError:
                return None
        ns = _sys_int(block / "device" / "resource")  # a pfn device's: its data start
        phys, source = (ns + part if ns is not None else None), "namespace data start + partition start"
    if base is None or phys is None or phys < base:
        return None
    off = phys - base
    return {"data_offset": off, "gran": NVDIMM_GRAN, "rotation": (off // NVDIMM_GRAN) % ways,
            "aligned": off % (NVDIMM_GRAN * ways) == 0, "source": source}


def add_cxl_and_advertised(target: dict[str, Any], facts: Mapping[str, Any], host: HostPaths) -> None:
    """The target's CXL region (ways, granularity, each memdev's position, serial, size, host
    bridge, and which memdev is device i of per-device placement) and its memory node's advertised
    performance and tier. Interleave geometry from a CXL region replaces ndctl's view of the
    nvdimm region it became: the CXL region knows the granularity and the memdevs."""
    node = target.get("node") if isinstance(target.get("node"), int) else None
    mem = cxl.mem_node(host.sys, target.get("device"), target.get("kind"), node)
    size = target.get("size") if isinstance(target.get("size"), int) else None
    found = cxl.target_cxl(host.sys, target.get("device"), target.get("kind"), _phys(facts), mem, size)
    target["mem_node"] = mem
    if found:
        target["cxl"] = found
        if len(found["regions"]) == 1 and "devices" in found:
            region = found["regions"][0]
            target["interleave_ways"] = region["interleave_ways"]
            target["interleave_gran"] = region["interleave_gran"]
            target["devices"] = found["devices"]
            target["device_kind"] = "cxl"
            if found.get("why"):
                target["devices_why"] = found["why"]
    elif target.get("mappings"):
        ordered = sorted(target["mappings"], key=lambda m: (m.get("position") is None, m.get("position")))
        start = nvdimm_data_start(host.sys, target, facts)
        target["devices_shift"] = start
        rot = start["rotation"] if start else 0
        target["devices"] = [ordered[(rot + i) % len(ordered)].get("dimm") for i in range(len(ordered))]
        target["device_kind"] = "nvdimm"
    own = [r["region"] for r in found["regions"]] if found else None
    target["advertised"] = cxl.advertised(host.sys, mem, own)
    target["memory_tier"] = cxl.memory_tier(host.sys, mem)


def _flag(value: Any) -> int | None:
    return None if value is None else int(bool(value))


def tsc_info(host: HostPaths, cpu: Mapping[str, Any], facts: Mapping[str, Any]) -> dict[str, Any]:
    """The TSC as results depend on it: its rate, invariant (constant_tsc and nonstop_tsc) and
    reliable (the kernel has not marked it unstable), and the kernel's clocksource.

    With the module loaded both flags are the module's (tsc_invariant, tsc_reliable: the
    kernel's own view, check_tsc_unstable()). Without it (the user backend) invariant comes
    from the same CPU flags in /proc/cpuinfo, and reliable is known only when the kernel keeps
    time with the TSC (clocksource tsc: 1); otherwise it is unknown (None, an empty cell).
    """
    tsc_khz = facts.get("tsc_khz")
    clocksource = (_read(host.sys / "devices/system/clocksource/clocksource0/current_clocksource") or "").strip()
    feats = cpu.get("features", {})
    invariant: bool | None = bool(feats.get("constant_tsc") and feats.get("nonstop_tsc"))
    reliable: bool | None = True if clocksource == "tsc" else None
    if isinstance(facts.get("tsc_invariant"), int):
        invariant = bool(facts["tsc_invariant"])
    if isinstance(facts.get("tsc_reliable"), int):
        reliable = bool(facts["tsc_reliable"])
    return {
        "tsc_khz": tsc_khz,
        "source": "module (kernel-calibrated tsc_khz)" if tsc_khz else "unknown (module not loaded)",
        "invariant": invariant,
        "reliable": reliable,
        "clocksource": clocksource or None,
    }


def conditions(info: dict[str, Any]) -> dict[str, Any]:
    """The run conditions copied into every CSV row (constant for a sweep)."""
    t = info.get("target", {})
    cpu = info.get("cpu", {})
    mod = info.get("module", {})
    return {
        "target": t.get("device"),
        "target_kind": t.get("kind"),
        "target_size": t.get("size"),
        "target_node": t.get("node"),
        "target_page_size": t.get("page_size"),
        **{k: t.get(k.removeprefix("target_")) for k in PLACEMENT_FACTS},
        "target_region": t.get("region"),
        "target_interleave_ways": t.get("interleave_ways"),
        **advertised_conditions(t),
        "cpu_model": cpu.get("model"),
        "tsc_khz": cpu.get("tsc", {}).get("tsc_khz"),
        "freq_source": "tsc" + (" (invariant)" if cpu.get("tsc", {}).get("invariant") else ""),
        "tsc_invariant": _flag(cpu.get("tsc", {}).get("invariant")),
        "tsc_reliable": _flag(cpu.get("tsc", {}).get("reliable")),
        "clocksource": cpu.get("tsc", {}).get("clocksource"),
        "prefetch_control": info.get("prefetch", {}).get("control"),
        "prefetch_msr": info.get("prefetch", {}).get("msr_0x1a4"),
        "kernel": info.get("host", {}).get("kernel"),
        "hostname": info.get("host", {}).get("hostname"),
        "module_version": mod.get("version"),
        "toolkit_version": info.get("toolkit", {}).get("revision"),
        **emulation_conditions(info),
        "mitigations": info.get("mitigations", {}).get("summary"),
        "mitigations_cmdline": info.get("mitigations", {}).get("cmdline"),
    }


def advertised_conditions(t: Mapping[str, Any]) -> dict[str, Any]:
    """The columns of a target's interleave devices, CXL region, and its memory node's advertised
    performance and tier (table.COLUMN_DOC says what each holds)."""
    adv = t.get("advertised") or {}
    cxl = t.get("cxl") or {}
    regions = cxl.get("regions") or []
    tier = t.get("memory_tier") or {}
    return {
        "target_interleave_gran": t.get("interleave_gran"),
        "target_devices": " ".join(str(d) for d in t.get("devices") or []) or None,
        "target_device_kind": t.get("device_kind"),
        "target_cxl_region": " ".join(r["region"] for r in regions) or None,
        "adv_node": adv.get("node"),
        "adv_initiators": adv.get("initiators"),
        "adv_source": adv.get("source"),
        "adv_read_latency_ns": adv.get("read_latency"),
        "adv_write_latency_ns": adv.get("write_latency"),
        "adv_read_bw_mbps": adv.get("read_bandwidth"),
        "adv_write_bw_mbps": adv.get("write_bandwidth"),
        "memory_tier": tier.get("tier"),
        "memory_tier_nodes": tier.get("nodes"),
    }


def target_facts(backend: Backend, online_cpus: int, host: HostPaths | None = None) -> P.TargetFacts:
    """The backend's facts about its target and CPU, plus this machine's NUMA nodes (what
    cpus = "remote" and the placement checks need)."""
    facts = backend.target_facts(online_cpus=online_cpus)
    possible = int(cpu_info(host or HostPaths())["possible_cpus"] or 0)
    facts.possible_cpus = max(possible, online_cpus) if possible else None
    node = facts.extra.get("target_node")
    nodes = numa_info(host or HostPaths())["nodes"]
    node_cpus: dict[int, tuple[int, ...]] = {}
    for n in nodes:
        try:
            node_cpus[n["node"]] = tuple(parse_cpulist(n.get("cpus") or ""))
        except ValueError:
            node_cpus[n["node"]] = ()
    ids = [n["node"] for n in nodes]
    distance = {n["node"]: dict(zip(ids, n.get("distances") or [])) for n in nodes}
    return dataclasses.replace(facts, target_node=node if isinstance(node, int) else None,
                               node_cpus=node_cpus or None, node_distance=distance or None)


def discovered_defaults(info: dict[str, Any]) -> dict[str, Any]:
    """Parameter defaults learnt from the machine: interleave ways from ndctl (an NVDIMM interleave
    set), ways and granularity from the CXL region a target lies in."""
    target = info.get("target", {})
    out: dict[str, Any] = {}
    for name in ("interleave_ways", "interleave_gran"):
        value = target.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                out[name] = P.canonical(name, value)
            except P.ConfigValueError:
                pass  # a geometry the module cannot take: keep the parameter's default
    return out


def _advertised(adv: Mapping[str, Any]) -> str:
    """One line of advertised values (cxl.advertised): latency ns and bandwidth MB/s, and where read."""
    return (f"read {adv.get('read_latency')} ns {adv.get('read_bandwidth')} MB/s, write "
            f"{adv.get('write_latency')} ns {adv.get('write_bandwidth')} MB/s ({adv.get('source') or 'access0'}, "
            + (f"from node {adv['initiators']})" if adv.get("initiators") else "no initiator named)"))


def format_cxl(inv: Mapping[str, Any], size: Callable[[Any], str]) -> list[str]:
    """The `cxl` section of `pmemlab info` (cxl.inventory): memdevs, root decoders (the CXL
    windows), regions with what they became and their advertised values, the other decoders;
    nothing when the machine has no CXL device."""
    if not (inv.get("memdevs") or inv.get("regions") or inv.get("decoders")):
        return []
    lines = ["cxl"]

    def add(label: str, value: str) -> None:
        lines.append(f"  {label:<22} {value}")

    def hexa(n: Any) -> str:
        return hex(n) if isinstance(n, int) else "-"

    for m in inv.get("memdevs", []):
        add(m["memdev"], f"serial {hexa(m.get('serial'))}, ram {size(m.get('ram_size'))}, pmem {size(m.get('pmem_size'))}"
            f", {m.get('pci')} under host bridge {m.get('host_bridge') or '-'}, numa_node {m.get('numa_node')}")
    decs = inv.get("decoders", [])
    for d in (d for d in decs if d["kind"] == "root"):
        caps = " ".join(c for c, on in (("pmem_capable", d.get("pmem_capable")), ("volatile_capable",
                                                                                   d.get("volatile_capable"))) if on)
        add(d["decoder"], f"root decoder (CXL window) {size(d.get('size'))} at {hexa(d.get('start'))}, "
            f"ways={d.get('interleave_ways')} gran={d.get('interleave_gran')} {caps or 'no capability'}, "
            f"targets {d.get('target_list') or '-'}")
    for r in inv.get("regions", []):
        became = ", ".join(f"{x['dax']} {'system RAM' if x.get('driver') == 'kmem' else x.get('driver') or 'no driver'}"
                           for x in r.get("dax") or [])
        if r.get("nvdimm_region"):
            became = f"nvdimm {r['nvdimm_region']}"
        add(r["region"], f"{r.get('mode')} {size(r.get('size'))} at {hexa(r.get('resource'))}, "
            f"ways={r.get('interleave_ways')} gran={r.get('interleave_gran')} node={r.get('node')}"
            f"{', ' + became if became else ''}, devices "
            + (", ".join(f"{t['position']}: {t.get('memdev')}" for t in r.get("targets", [])) or "-"))
        adv = r.get("advertised") or {}
        if adv.get("source"):
            add("", f"advertised {_advertised(adv)}")
        own = r.get("access0")
        if own and own.get("read_latency") != adv.get("read_latency"):
            add("", f"region access0: read {own.get('read_latency')} ns {own.get('read_bandwidth')} MB/s, write "
                f"{own.get('write_latency')} ns {own.get('write_bandwidth')} MB/s")
        if not adv.get("source") and not own:
            add("", "advertised - (the kernel has no access0 values for it: no HMAT/CDAT)")
        tier = r.get("memory_tier") or {}
        if tier.get("tier") is not None:
            add("", f"memory tier {tier['tier']} (nodes {tier.get('nodes')})")
    for i, d in enumerate(d for d in decs if d["kind"] != "root"):
        add("decoders" if i == 0 else "", f"{d['decoder']} {d['kind']}"
            + (f" {d.get('memdev')} {d.get('mode') or '-'} dpa {hexa(d.get('dpa_resource'))}+{size(d.get('dpa_size'))}"
               if d["kind"] == "endpoint" else f" targets {d.get('target_list') or '-'}")
            + (f", {size(d.get('size'))} at {hexa(d.get('start'))}" if d.get("size") else ", not committed"))
    return lines


def format_info(info: dict[str, Any]) -> str:
    """Readable `pmemlab info`."""
    lines: list[str] = []

    def add(label: str, value: Any) -> None:
        if value is None or value == "" or value == []:
            value = "-"
        lines.append(f"  {label:<22} {value}")

    def size(n: Any) -> str:
        if not isinstance(n, int):
            return "-" if n is None else str(n)
        for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
            if n >= mult:
                return f"{n / mult:.2f} {unit} ({n} B)"
        return f"{n} B"

    t, mod, cpu = info["target"], info["module"], info["cpu"]
    lines.append("target")
    if mod.get("loaded"):
        add("device", t.get("device"))
        add("kind", t.get("kind"))
        add("size", size(t.get("size")))
        add("numa node", t.get("node"))
        if t.get("nodes") and "," in str(t.get("nodes")):  # a DRAM target over several nodes
            add("nodes (weights)", f"{t.get('nodes')} ({t.get('weights')}), placed by {t.get('placement')}")
            add("bytes per node", t.get("node_bytes"))
        add("mapping page size", size(t.get("page_size")))
        add("fs signature", t.get("fs_signature"))
        if t.get("partitions"):
            add("partitions", t.get("partitions"))
        for i, line in enumerate(safety.format_bad_ranges(t.get("bad_ranges") or {})):
            add("bad ranges" if i == 0 else "", line)
        ns = t.get("namespace") or {}
        if ns:
            add("namespace", f"{ns.get('dev')} mode={ns.get('mode')} map={ns.get('map')} size={size(ns.get('size'))}")
        add("region", t.get("region"))
        add("interleave ways", t.get("interleave_ways"))
        if t.get("interleave_gran"):
            add("interleave gran", size(t.get("interleave_gran")))
        if t.get("mappings"):
            add("mappings", ", ".join(f"{m.get('dimm')}@{m.get('position')}" for m in t["mappings"]))
        if t.get("devices"):
            add("devices", ", ".join(f"{i}: {d}" for i, d in enumerate(t["devices"]))
                + "  (device i of placement=per-dimm)")
        if t.get("devices_why"):
            add("devices", f"none: placement=per-dimm is refused here: {t['devices_why']}")
        if t.get("devices_shift"):
            add("data start", f"{t['devices_shift']['data_offset']} B into the interleave set: device 0 is at "
                f"position {t['devices_shift']['rotation']}")
        for r in (t.get("cxl") or {}).get("regions", []):
            add("cxl region", f"{r['region']} {r.get('mode')} {size(r.get('size'))} at {hex(r['resource'] or 0)}, "
                f"ways={r.get('interleave_ways')} gran={r.get('interleave_gran')} node={r.get('node')} "
                f"host bridge {','.join(r.get('host_bridges') or []) or '-'}, "
                f"arithmetic {r.get('arithmetic') or 'unknown'}")
            for tg in r.get("targets", []):
                serial = tg.get("serial")
                add("", f"position {tg['position']}: {tg.get('memdev')} serial {hex(serial) if isinstance(serial, int) else '-'}"
                    f" ram {size(tg.get('ram_size'))} pmem {size(tg.get('pmem_size'))}, {tg.get('decoder')} "
                    f"{tg.get('mode')} dpa {hex(tg.get('dpa_resource') or 0)}+{size(tg.get('dpa_size'))} ({tg.get('pci')})")
        add("memory node", t.get("mem_node"))
        adv = t.get("advertised") or {}
        if any(adv.get(k) is not None for k in ("read_latency", "read_bandwidth")):
            add("advertised", _advertised(adv))
        else:
            add("advertised", "- (the kernel has no access0 values for this node: no HMAT)")
        tier = t.get("memory_tier") or {}
        add("memory tier", f"{tier.get('tier')} (nodes {tier.get('nodes')})" if tier.get("tier") is not None else None)
    else:
        add("module", mod.get("note", "not loaded"))
    lines.append("module")
    add("sysfs", mod.get("sysfs"))
    add("version", mod.get("version"))
    add("state", mod.get("state"))
    if mod.get("parameters"):
        add("load parameters", " ".join(f"{k}={v}" for k, v in mod["parameters"].items()))
    if mod.get("run_params"):
        add("run parameters", " ".join(f"{k}={v}" for k, v in mod["run_params"].items()))
    lines.append("cpu")
    add("model", cpu.get("model"))
    add("online cpus", cpu.get("online_cpus"))
    add("features", " ".join(f for f, on in cpu.get("features", {}).items() if on))
    add("module features", " ".join(cpu.get("module_features", [])))
    add("widths", " ".join(map(str, cpu.get("widths", []))))
    tsc = cpu.get("tsc", {})
    add("tsc", f"{tsc.get('tsc_khz')} kHz, {tsc.get('source')}, invariant={tsc.get('invariant')}, "
        f"reliable={tsc.get('reliable')}, clocksource={tsc.get('clocksource')}")
    pf = info.get("prefetch", {})
    add("prefetchers", f"control={pf.get('control')} run_param={pf.get('run_param')} msr 0x1a4={pf.get('msr_0x1a4')} ({pf.get('state')})")
    hyp = info.get("hypervisor", {})
    add("hypervisor", f"{hyp.get('name')} ({'; '.join(hyp.get('evidence', [])) or 'no evidence of one'})")
    add("target emulated", emulation_conditions(info)["target_emulated"])
    state = info.get("run_state", {})
    if state:
        add("governor", f"{state.get('governor') or '- (no cpufreq)'} (driver {state.get('cpufreq_driver') or '-'})")
        add("turbo", state.get("turbo"))
        add("smt active", state.get("smt_active"))
        add("thp", f"enabled={state.get('thp_enabled')} defrag={state.get('thp_defrag')}")
    mit = info.get("mitigations", {})
    if mit:
        add("mitigations", f"{mit.get('summary') or '-'} (cmdline mitigations={mit.get('cmdline') or '?'})")
    lines.append("numa")
    for n in info["numa"]["nodes"]:
        adv = n.get("advertised") or {}
        add(f"node{n['node']}", f"cpus {n.get('cpus') or '- (none)'}, {size((n.get('mem_total_kib') or 0) * 1024)}, "
            f"distances {n.get('distances')}"
            + (f", memory tier {n['memory_tier']}" if n.get("memory_tier") is not None else "")
            + (f", advertised {_advertised(adv)}" if adv.get("source") else ""))
    lines.extend(format_cxl(info.get("cxl") or {}, size))
    lines.append("host")
    add("hostname", info["host"].get("hostname"))
    add("kernel", info["host"].get("kernel"))
    add("toolkit", f"{info['toolkit']['version']} ({info['toolkit']['revision']})")
    nd = info.get("ndctl")
    if nd is not None:
        lines.append("nvdimm")
        add("ndctl", "available" if nd.get("available") else nd.get("note"))
        if nd.get("error"):
            add("ndctl error", nd["error"])
        if nd.get("note") and nd.get("available"):
            add("note", nd["note"])
        for r in nd.get("regions", []):
            add(r.get("dev"), f"{r.get('type')} size={size(r.get('size'))} ways={r.get('interleave_ways')} "
                f"numa={r.get('numa_node')} dimms={','.join(str(m.get('dimm')) for m in r.get('mappings', []))}")
        if nd.get("dimms"):
            add("dimms", " ".join(str(d.get("dev")) for d in nd["dimms"]))
    ip = info.get("ipmctl")
    if ip is not None:
        add("ipmctl", "available" if ip.get("available") else ip.get("note"))
    return "\n".join(lines)
