"""What the two matrices share (latency-matrix, bw-matrix): a row per NUMA node's CPUs, a column
per memory (their own target axis: the DRAM of each node with memory and, on the module, each
fsdax namespace), the firmware's advertised values beside the measured ones."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pmemlab import params as P
from pmemlab.analysis.advertised import advertised_of, ratio
from pmemlab.backends.protocol import BackendKind
from pmemlab.cli.oneliners.bed import Bed, Sizing
from pmemlab.cli.oneliners.spec import DEFAULT_DRAM_SIZE
from pmemlab.cli.oneliners.tables import (
    Table, advertised_note, bandwidth_of, emulation_note, headline, latency_of, not_run, reasons_note, target_names,
)
from pmemlab.host import machine, probe
from pmemlab.targets.spec import TargetLoad, derived_label

if TYPE_CHECKING:  # pandas is imported by the functions that use it: `pmemlab run` never needs it
    import pandas as pd


def cpu_rows(size: Sizing) -> list[tuple[int, tuple[int, ...]]]:
    return sorted(size.node_cpus.items())



def matrix_table(what: str) -> Callable[[argparse.Namespace, pd.DataFrame, pd.DataFrame, Bed], Table]:
    def table(args: argparse.Namespace, rows: pd.DataFrame, hist: pd.DataFrame, bed: Bed) -> Table:
        size = bed.sizing()
        names = target_names(rows, bed)
        targets = [t.label for t in bed.targets or []]
        value: dict[tuple[Any, ...], float] = {}
        if what == "latency":
            stats = latency_of(rows, hist, ["target_label", "cpus"])
            value = {(r["target_label"], r["cpus"]): float(r["p50"]) for _, r in stats.iterrows()}
        else:
            value = {k: v[0] for k, v in bandwidth_of(rows, ["target_label", "cpus"]).items()}
        out, reasons, records = [], {}, []
        key = "latency_median_ns" if what == "latency" else "bw_gbps_mean"
        for node, cpus in cpu_rows(size):
            picked = str(cpus[0]) if what == "latency" else P.fmt_cpulist(cpus[: args.threads] if args.threads else cpus)
            cells: list[Any] = [f"node {node} (CPU {picked})"]
            for target in targets:
                v = value.get((target, picked), math.nan)
                cells.append(v)
                records.append({"cpu_node": node, "cpus": picked, "memory": target, key: v})
                if isinstance(v, float) and math.isnan(v):
                    why = not_run(rows, {"target_label": target, "cpus": picked})
                    if why:
                        reasons[f"node {node} -> {names.get(target, target)}"] = why
            out.append(cells)
        # the firmware's view of each memory: access0 (from its best initiators), and the
        # measurement from the first of those nodes against it
        adv_cells: list[Any] = ["advertised (access0)"]
        ratio_cells: list[Any] = ["measured / advertised"]
        advertised: list[dict[str, Any]] = []
        for target in targets:
            adv = advertised_of(rows, target)
            a = adv["read_ns"] if what == "latency" else adv["read_gbps"]
            inits = _initiators(rows, target)
            row_of = {node: (str(cpus[0]) if what == "latency" else
                             P.fmt_cpulist(cpus[: args.threads] if args.threads else cpus)) for node, cpus in cpu_rows(size)}
            # a CXL node's access0 names no initiator (the kernel computed it from the CPUs' side of
            # the host bridge's generic port): held against the first node with CPUs then
            from_node = next((n for n in inits if n in row_of), None) if inits else next(iter(row_of), None)
            m = value.get((target, row_of[from_node]), math.nan) if from_node is not None else math.nan
            adv_cells.append(a)
            ratio_cells.append(ratio(m, a))
            advertised.append({"memory": target, "initiators": inits, "from_cpu_node": from_node,
                               ("advertised_ns" if what == "latency" else "advertised_gbps"): a,
                               "measured_over_advertised": ratio(m, a)})
        out += [adv_cells, ratio_cells]
        unit = "median ns" if what == "latency" else "GB/s"
        stat = (f"idle latency, ns: median of {args.count} samples x {args.repeats} run(s) of single 8 B loads of cold "
                f"lines at random in the window, one thread on the row's first CPU" if what == "latency" else
                f"read bandwidth, GB/s (1e9 B/s): mean over {args.repeats} run(s) of {args.duration_ms} ms of "
                f"sequential 256 B loads, a thread on each of the row's CPUs")
        return Table(title=headline(f"{what if what == 'latency' else 'bw'}-matrix", rows, bed),
                     statistic=stat + "; rows: the CPUs of each NUMA node; columns: the memory measured",
                     columns=["CPUs \\ memory", *(f"{names.get(t, t)} {unit}" for t in targets)],
                     rows=out, notes=reasons_note(reasons) + advertised_note(rows) + [
                         "measured / advertised: the measurement from the first node access0 names as the "
                         "memory's best initiator (none named, as for a CXL node: the first node with CPUs)"] + emulation_note(rows), records=records,
                     extra={"advertised": advertised})
    return table


def _initiators(rows: pd.DataFrame, target: str) -> list[int]:
    agg = rows[(rows["thread"].astype(str) == "all") & (rows["target_label"] == target)]
    if "adv_initiators" not in agg:
        return []
    for text in agg["adv_initiators"].dropna().astype(str):
        try:
            return list(P.parse_cpulist(text))
        except ValueError:
            return []
    return []


def matrix_loads(args: argparse.Namespace, kind: BackendKind) -> list[TargetLoad]:
    """The columns of a matrix: the DRAM of each node with memory, and each fsdax namespace (the
    module only: the user backend takes a DAX file, given with --targets)."""
    host = probe.HostPaths()
    nodes = machine.numa_info(host)["nodes"]
    loads = []
    for n in nodes:
        if (n.get("mem_total_kib") or 0) > 0:
            params = (("target", "dram"), ("dram_node", str(n["node"])), ("dram_size", args.dram_size))
            loads.append(TargetLoad(derived_label(params[:2]), params))
    if kind == "kernel":
        loads += [TargetLoad(Path(dev).name, (("target", dev),)) for dev in fsdax_namespaces(host)]
    return loads


def fsdax_namespaces(host: probe.HostPaths) -> list[str]:
    """The block devices of fsdax namespaces (DAX-capable pmem disks), pmem0 first."""
    out = []
    for dev in sorted(host.sys.glob("block/pmem*"), key=lambda p: (len(p.name), p.name)):
        dax = dev / "queue" / "dax"
        if dax.exists() and dax.read_text().strip() == "1":
            out.append(str(host.dev / dev.name))
    return out


def dram_size_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dram-size", default=DEFAULT_DRAM_SIZE, metavar="SIZE",
                   help=f"size of each node's DRAM target ({DEFAULT_DRAM_SIZE})")
