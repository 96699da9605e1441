"""The guest's machine: NUMA nodes (virtme-ng's --numa), the HMAT, QEMU's -smp (a socket per node,
SMT siblings) and the CXL host bridge with its two type-3 devices."""
from __future__ import annotations

import json
from pathlib import Path


def numa_options(nodes: int, mem_mb: int, cpus: int, cpuless_mb: int = 0, explicit: bool = False,
                 generic_port: bool = False) -> list[str]:
    """virtme-ng's --numa: `nodes` nodes that share the guest's RAM (less cpuless_mb) and vCPUs
    evenly (the last takes what does not divide), then, with cpuless_mb, one more node with that
    much memory and no CPUs (how CXL memory appears), then with generic_port an empty node that
    stands for a CXL host bridge in the HMAT (its generic port); none for one node without them
    unless explicit (an HMAT names every node). Nodes without CPUs name node 0 as their initiator."""
    if nodes <= 1 and not cpuless_mb and not explicit and not generic_port:
        return []
    ram = mem_mb - cpuless_mb
    out = []
    for i in range(nodes):
        first, last = i * (cpus // nodes), (i + 1) * (cpus // nodes) - 1 if i < nodes - 1 else cpus - 1
        size = ram // nodes if i < nodes - 1 else ram - (nodes - 1) * (ram // nodes)
        out += ["--numa", f"{size}M,cpus={first}" + (f"-{last}" if last > first else "")]
    initiator = ",initiator=0" if explicit or generic_port else ""
    if cpuless_mb:
        out += ["--numa", f"{cpuless_mb}M{initiator}"]
    if generic_port:
        out += ["--numa", f"0{initiator}"]
    return out


# The HMAT the bed gives (--hmat): access latency (ns) and bandwidth (MiB/s) from each node with
# CPUs to every memory, known values the guest's tests compare with what the kernel exposes
# (PMEMLAB_HMAT). Ordered so that every memory has one best initiator: its own node, else node 0.
HMAT_LOCAL = (80, 20480)
HMAT_REMOTE = (130, 12288)
HMAT_CPULESS = ((250, 8192), (300, 6144))  # from node 0, from the others
HMAT_GENERIC_PORT = ((100, 16384), (150, 12288))  # to the CXL host bridge: the kernel adds the devices' CDAT


def hmat_entries(cpu_nodes: int, cpuless: bool, generic_port: bool) -> list[tuple[int, int, int, int]]:
    """(initiator, target, latency ns, bandwidth MiB/s) for every node with CPUs to every node."""
    out = []
    for i in range(cpu_nodes):
        for t in range(cpu_nodes):
            out.append((i, t, *(HMAT_LOCAL if i == t else HMAT_REMOTE)))
        extra = cpu_nodes
        if cpuless:
            out.append((i, extra, *HMAT_CPULESS[0 if i == 0 else 1]))
            extra += 1
        if generic_port:
            out.append((i, extra, *HMAT_GENERIC_PORT[0 if i == 0 else 1]))
    return out


def hmat_options(entries: list[tuple[int, int, int, int]]) -> list[str]:
    out = []
    for i, t, lat, bw in entries:
        out.append(f"-numa hmat-lb,initiator={i},target={t},hierarchy=memory,data-type=access-latency,latency={lat}")
        out.append(f"-numa hmat-lb,initiator={i},target={t},hierarchy=memory,data-type=access-bandwidth,"
                   f"bandwidth={bw}M")
    return out


CXL_SERIAL = 0x1000  # device i has serial CXL_SERIAL + i (cxl list -M: "serial")
CXL_BUS = 12  # the pxb-cxl's bus number: the host bridge's ACPI _UID and its name, \_SB.CL0C


def cxl_devices(cxl_dir: Path, pmem: int, ram: int, gran: int, qemu_ver: tuple[int, int],
                gp_node: int | None) -> list[str]:
    """QEMU options of a CXL host bridge with two root ports, a type-3 device on each (its own
    persistent and volatile backing files, and label storage), one fixed memory window over the
    bridge, and the bridge's generic port (gp_node); writes devices.json beside the files, for
    tests that read the files after the guest: each device's serial, files and partition sizes."""
    out = []
    devices = []
    for i in range(2):
        files = {"pmem": cxl_dir / f"cxl{i}-pmem.raw", "ram": cxl_dir / f"cxl{i}-ram.raw",
                 "lsa": cxl_dir / f"cxl{i}-lsa.raw"}
        sizes = {"pmem": pmem, "ram": ram, "lsa": 128 << 10}
        for kind, path in files.items():
            path.unlink(missing_ok=True)  # a fresh device: the files read as zeros
            if sizes[kind]:
                with open(path, "wb") as fh:
                    fh.truncate(sizes[kind])
                out.append(f"-object memory-backend-file,id=cxl-{kind}{i},share=on,mem-path={path},size={sizes[kind]}")
        memdevs = f"lsa=cxl-lsa{i},"
        if qemu_ver >= (8, 0):
            memdevs += f"persistent-memdev=cxl-pmem{i}," + (f"volatile-memdev=cxl-ram{i}," if ram else "")
        else:
            memdevs += f"memdev=cxl-pmem{i},"
        out.append(f"-device cxl-rp,port={i},bus=cxl.1,id=rp{i},chassis=0,slot={2 + i}")
        out.append(f"-device cxl-type3,bus=rp{i},{memdevs}id=cxl-dev{i},sn={CXL_SERIAL + i}")
        devices.append({"serial": CXL_SERIAL + i, "pmem_file": files["pmem"].name, "pmem_size": pmem,
                        "ram_file": files["ram"].name if ram else None, "ram_size": ram})
    window = max(4 << 30, 1 << (4 * (pmem + ram)).bit_length())
    out.insert(0, f"-device pxb-cxl,bus_nr={CXL_BUS},bus=pcie.0,id=cxl.1")
    out.append(f"-M cxl-fmw.0.targets.0=cxl.1,cxl-fmw.0.size={window >> 20}M,cxl-fmw.0.interleave-granularity={gran}")
    if gp_node is not None:
        out.append(f"-object acpi-generic-port,id=gp0,pci-bus=cxl.1,node={gp_node}")
    (cxl_dir / "devices.json").write_text(json.dumps(
        {"devices": devices, "interleave_granularity": gran, "window_size": window,
         "qemu": ".".join(map(str, qemu_ver)),
         "note": "QEMU maps a device's addresses (DPA) 0 .. ram_size to its ram file and ram_size .. "
                 "ram_size + pmem_size to its pmem file"}, indent=1) + "\n")
    return out


def socket_per_node(nodes: int, cpus: int) -> list[str]:
    """QEMU's -smp with a socket per NUMA node: as one socket, the nodes' vCPUs would share a
    last-level cache across nodes and the kernel WARNs at boot (topology_sane: llc-sibling not on
    the same node), which the bed counts as a failure. Nothing for one node, or vCPUs that do not
    divide (virtme-ng's -smp stays)."""
    if nodes <= 1 or cpus % nodes:
        return []
    return [f"-smp {cpus},sockets={nodes},cores={cpus // nodes},threads=1"]


def smp_options(nodes: int, cpus: int, smt: bool) -> list[str]:
    """QEMU's -smp: with smt two threads per core (QEMU numbers a core's threads next to each
    other: CPUs 2k and 2k+1 are siblings), a socket per NUMA node; else socket_per_node."""
    if not smt:
        return socket_per_node(nodes, cpus)
    return [f"-smp {cpus},sockets={nodes},cores={cpus // nodes // 2},threads=2"]
