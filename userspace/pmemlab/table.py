"""The tidy CSV: its columns, the rows of one run, and an append-only writer that
keeps the file valid at every moment (whole rows per write, header rewritten
atomically when a new result field appears)."""

from __future__ import annotations

import csv
import io
import math
import os
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, cast

from pmemlab.host import ipmctl
from pmemlab.errors import NotPmemlabFile
from pmemlab.params import PARAM_NAMES, PARAMS
from pmemlab.results import KNOWN_RESULT_COLUMNS, parse_result
from pmemlab.backends.protocol import RunOutcome
from pmemlab.backends.facts import PLACEMENT_FACTS

if TYPE_CHECKING:  # pandas is imported where a table is read: `pmemlab run` never needs it
    import pandas as pd

ID_COLUMNS: tuple[str, ...] = ("sweep", "target_label", "point", "point_key", "repeat", "thread", "status", "error")
CONDITION_COLUMNS: tuple[str, ...] = (
    "target", "target_kind", "target_size", "target_node", "target_page_size", "target_pages", "map_sync",
    *PLACEMENT_FACTS, "target_region",
    "target_interleave_ways", "cpu_model", "tsc_khz", "freq_source", "tsc_invariant", "tsc_reliable", "clocksource",
    "prefetch_control", "prefetch_msr", "kernel",
    "hostname", "module_version", "toolkit_version", "hypervisor", "target_emulated", "mitigations",
    "mitigations_cmdline", "target_interleave_gran", "target_devices", "target_device_kind", "target_cxl_region",
    "adv_node", "adv_initiators", "adv_source", "adv_read_latency_ns", "adv_write_latency_ns", "adv_read_bw_mbps",
    "adv_write_bw_mbps", "memory_tier", "memory_tier_nodes",
)
# the state of the machine when each run ended (runcond.py), then what was measured around it
RUN_STATE_COLUMNS: tuple[str, ...] = ("governor", "cpufreq_driver", "turbo", "smt_active", "thp_enabled",
                                      "thp_defrag")
NOISE_COLUMNS: tuple[str, ...] = ("steal_pct", "smt_sibling_busy_pct", "ctx_voluntary", "ctx_involuntary")
TIME_COLUMNS: tuple[str, ...] = ("started_at", "run_s", "run_id")
HIST_COLUMNS: tuple[str, ...] = ("sweep", "target_label", "point", "point_key", "repeat", "thread", "lo_ticks", "hi_ticks",
                                 "lo_ns", "hi_ns", "count")
STATUSES: tuple[str, ...] = ("ok", "error", "timeout", "refused", "skipped")

BASE_COLUMNS: tuple[str, ...] = (
    *ID_COLUMNS, *PARAM_NAMES, *KNOWN_RESULT_COLUMNS, *ipmctl.COLUMNS, *CONDITION_COLUMNS, *RUN_STATE_COLUMNS,
    *NOISE_COLUMNS, *TIME_COLUMNS,
)
RESERVED: frozenset[str] = frozenset(set(ID_COLUMNS) | set(PARAM_NAMES) | set(CONDITION_COLUMNS)
                                     | set(RUN_STATE_COLUMNS) | set(NOISE_COLUMNS) | set(TIME_COLUMNS))

# the run parameters that are sizes in bytes (the parameter table's kind "size")
SIZE_PARAMS: tuple[str, ...] = tuple(p.name for p in PARAMS.values() if p.kind == "size")

COLUMN_DOC: dict[str, str] = {
    "sweep": "sweep name",
    "target_label": "the target's label when one command measured several (pmem, dram, ...; the sidecar's "
                    "`targets` has each one's load); empty: the backend as it was loaded",
    "point": "index of the point in the expanded config",
    "point_key": "hash of the complete parameters (identity used by resume)",
    "repeat": "repeat number, 0-based",
    "thread": "worker thread number, or 'all' for the aggregate row",
    "status": "ok | error | timeout | refused | skipped",
    "error": "why the run failed or was skipped",
    "elapsed_ticks": "run time, TSC ticks", "elapsed_ns": "run time, ns",
    "bw_mbps": "bandwidth as the module reports it, 1e6 B/s (aggregate: sum over threads)",
    "bw_gbps": "bandwidth, 1e9 B/s (= bw_mbps / 1000)",
    "insn": "instructions one access unit executed (then its flush; ',' the read_pct load)",
    "loop": "the generated loop that ran (a symbol of the module or the runner)",
    "chain": "op chase: laid (the chain laid before this run) or kept (the user backend's served runner kept the "
             "identical chain of a run before: no lay, no write-back; aggregate: kept when every chase thread's was); "
             "empty without a chase",
    "ceiling_mbps": "the engine's ceiling as the module reports it, 1e6 B/s (bandwidth threads; aggregate: sum)",
    "engine_ceiling_gbps": "the engine's own rate: the same loop, access size, width and address family on a "
                           "cache-resident buffer (ntstore, flushes: the plain store), 1e9 B/s",
    "loop_bound": "1 when bw_gbps >= 0.5 x engine_ceiling_gbps: the number is within 2x of the tool's own "
                  "limit, so it measures the loop more than the memory",
    "width_used": "instruction width the run used, bytes", "thread_role": "load or probe (loaded latency)",
    "lat_n": "latency samples in the statistics",
    "gap_ticks": "time lost between segments, TSC ticks", "gap_ns": "the same in ns",
    "start_lag_ticks": "from the timed run's common start to the thread's first timed access, TSC ticks (a thread "
                       "that got its CPU late; aggregate: the latest thread's)",
    "start_lag_ns": "the same in ns",
    "end_lag_ticks": "from the thread's last timed access to when it left its loop, at most to the run's end, TSC "
                     "ticks (a thread off its CPU when the end came, or stopped early; aggregate: the largest)",
    "end_lag_ns": "the same in ns",
    "ceiling_src": "where ceiling_mbps came from: measured by this run, reused from an earlier run of the same "
                   "target with the same ceiling key, or reused-low: reused and outrun by this run, so stale "
                   "(no engine_ceiling_gbps, no loop_bound; docs/method.md)",
    "setup_ticks": "from `run` (the module's run write; the runner's run line) to the thread's first timed access, "
                   "TSC ticks (aggregate: to the first thread's)",
    "setup_ns": "the same in ns",
    "teardown_ticks": "from the thread's last timed access to the run's results (done), TSC ticks (aggregate: from "
                      "the last thread's)",
    "teardown_ns": "the same in ns",
    "total_ticks": "from `run` to done, TSC ticks (aggregate: setup + elapsed + teardown)",
    "total_ns": "the same in ns",
    "irqoff_pct": "% of the timed run with interrupts off",
    "irqoff_max_ticks": "the thread's longest stretch with interrupts off (one segment, warm-up included), TSC ticks "
                        "(aggregate: the longest of every thread's, the probe's too)",
    "irqoff_max_ns": "the same in ns",
    "lat_ticks_*": "latency statistics, TSC ticks (timer overhead subtracted)", "lat_ns_*": "the same in ns",
    "media_read_64b": "ipmctl MediaReads delta over the run, 64 B units (summed over the target region's DIMMs)",
    "media_write_64b": "ipmctl MediaWrites delta, 64 B units", "read_request_64b": "ipmctl ReadRequests delta",
    "write_request_64b": "ipmctl WriteRequests delta", "ewr": "effective write ratio = write_request / media_write",
    "err": "effective read ratio = read_request / media_read",
    "target_size": "bytes", "target_page_size": "bytes of the kernel mapping's pages",
    "target_pages": "user backend: how the target was mapped (4k, thp, hugetlbfs, file, devdax)",
    "map_sync": "user backend: 1 if the file/devdax mapping has MAP_SYNC",
    "target_nodes": "DRAM target: its NUMA nodes as loaded (dram_nodes, or the one dram_node), e.g. 0,1",
    "target_weights": "DRAM target: pages of each stripe on each node of target_nodes (dram_weights; 1 for one node)",
    "target_node_bytes": "DRAM target: bytes of the target found on each node after placement, NODE:BYTES comma-separated "
                         "(module: from its pages; user backend: move_pages; other:BYTES = on no node of the target)",
    "target_placement": "DRAM target: how the pages got to their nodes: node (one node, as the allocator gave), module "
                        "(the module's weighted round robin), weighted-interleave (MPOL_WEIGHTED_INTERLEAVE), "
                        "first-touch (each page faulted in under its node's policy, then mbind MPOL_BIND), any "
                        "(user backend, no node asked)",
    "tsc_khz": "TSC rate used for ticks -> ns",
    "tsc_invariant": "1 if the TSC is invariant (constant_tsc and nonstop_tsc), 0 if not: ticks -> ns is then suspect",
    "tsc_reliable": "1 if the kernel has not marked the TSC unstable (module), or keeps time with it (user backend); "
                    "0 if marked unstable; empty if unknown",
    "clocksource": "the kernel's current clocksource when the sweep started",
    "prefetch": "run parameter: hardware prefetchers on/off for the run",
    "prefetch_control": "how the module can switch prefetchers (msr-0x1a4 or none)",
    "prefetch_msr": "MSR 0x1a4 of CPU 0 when the sweep started (0xf = all four prefetchers off; empty = unreadable)", "started_at": "UTC start of the run", "run_s": "wall seconds of the run",
    "run_id": "the module's run counter for this run (when it has one)",
    "hypervisor": "hypervisor the run ran under (qemu, kvm, ...; unknown: only the CPUID bit; none)",
    "target_emulated": "no (NVDIMM on bare metal) | dram (DRAM target) | memmap (memmap= DRAM) | "
                       "virtual-nvdimm (a hypervisor's NVDIMM) | nfit_test | unknown",
    "mitigations": "CPU vulnerability mitigations (/sys/devices/system/cpu/vulnerabilities): how many are mitigated, "
                   "not affected, and the names of those the kernel reports vulnerable",
    "mitigations_cmdline": "mitigations= on the kernel command line (unset: not given)",
    "governor": "cpufreq scaling_governor of the run's CPUs (several: joined with /; empty: no cpufreq)",
    "cpufreq_driver": "cpufreq scaling_driver of the run's CPUs (intel_pstate, acpi-cpufreq, amd-pstate, ...)",
    "turbo": "on | off: intel_pstate/no_turbo, else cpufreq/boost (empty: neither exists)",
    "smt_active": "1 if SMT siblings are online (/sys/devices/system/cpu/smt/active)",
    "thp_enabled": "transparent_hugepage/enabled (always | madvise | never)",
    "thp_defrag": "transparent_hugepage/defrag",
    "steal_pct": "steal time over the run on its CPUs, % of their CPU time (/proc/stat; empty: no tick elapsed)",
    "smt_sibling_busy_pct": "busiest SMT sibling of the run's CPUs during the run, % non-idle (/proc/stat; "
                            "a sibling that is itself a run CPU counts too)",
    "ctx_voluntary": "voluntary context switches of the thread (aggregate: all threads) over its life "
                     "(taskstats at its exit; empty: not available)",
    "ctx_involuntary": "involuntary context switches (preemptions) of the thread, as ctx_voluntary",
    **{name: "bytes" for name in SIZE_PARAMS},
    "width": "bytes per instruction", "duration_ms": "ms", "delay_ticks": "TSC ticks",
    "target_interleave_ways": "devices in the target's interleave set (ndctl's region, or the CXL region)",
    "target_interleave_gran": "interleave granularity of the target's CXL region, bytes (empty: not known, "
                              "an NVDIMM set)",
    "target_devices": "the interleave set's devices in the order of placement=per-dimm: device i (a DIMM of an "
                      "NVDIMM set, nmemN; a CXL memory device, memN) holds the chunks of target offset o with "
                      "(o / interleave_gran) mod interleave_ways == i",
    "target_device_kind": "nvdimm | cxl: what a device of target_devices is",
    "target_cxl_region": "the CXL region(s) of the target: the region it lies in, or those onlined into a DRAM "
                         "target's node",
    "adv_node": "the node of the target's memory whose advertised values follow (a DRAM target's node; an fsdax "
                "or devdax target's region target_node)",
    "adv_initiators": "the nodes the advertised values are from (access0: the best initiators)",
    "adv_source": "where the advertised values were read: nodeN access0 (/sys/devices/system/node), or, for a "
                  "CXL node the kernel left without access0 (7.2), regionN access0 of its CXL region",
    "adv_read_latency_ns": "advertised read latency of adv_node, ns (/sys/devices/system/node/nodeN/access0/"
                           "initiators/read_latency: the HMAT, or for a CXL node the kernel's sum of CDAT, links "
                           "and generic port); empty: the kernel has none",
    "adv_write_latency_ns": "advertised write latency, ns (access0 write_latency)",
    "adv_read_bw_mbps": "advertised read bandwidth, MB/s as the kernel gives it (access0 read_bandwidth)",
    "adv_write_bw_mbps": "advertised write bandwidth, MB/s (access0 write_bandwidth)",
    "memory_tier": "the kernel's memory tier of adv_node (memory_tierN under /sys/devices/virtual/memory_tiering: "
                   "lower is faster)",
    "memory_tier_nodes": "the nodes of that tier",
}


def _text_params() -> tuple[str, ...]:
    """The run parameters whose values are words or lists (op, pattern, cpus, ...), not numbers."""
    return tuple(p.name for p in PARAMS.values()
                 if p.kind in ("ops", "cpus") or (p.kind == "enum" and any(isinstance(c, str) for c in p.choices)))


# Columns that hold text even where a value looks like a number ("0" in cpus, a revision of
# digits): every reader of pmemlab's CSVs uses TEXT_DTYPES, so pandas never guesses them.
TEXT_COLUMNS: tuple[str, ...] = (
    "sweep", "point_key", "thread", "status", "error", *_text_params(),
    "thread_role", "thread_op", "thread_mode",
    "target", "target_kind", "target_region", "target_pages", *PLACEMENT_FACTS, "cpu_model", "freq_source", "prefetch_control",
    "prefetch_msr", "kernel", "hostname", "module_version", "toolkit_version", "hypervisor", "target_emulated",
    "mitigations", "mitigations_cmdline", "governor", "cpufreq_driver", "turbo", "thp_enabled", "thp_defrag",
    "started_at", "run_id", "noise", "metric", "target_label", "source_csv",
    "target_devices", "target_device_kind", "target_cxl_region", "adv_initiators", "adv_source", "memory_tier_nodes",
)
TEXT_DTYPES: dict[str, type] = {c: str for c in TEXT_COLUMNS}
SWEEP_CSV_COLUMNS: tuple[str, ...] = ("sweep", "point_key", "repeat", "thread", "status")
HIST_CSV_COLUMNS: tuple[str, ...] = ("point_key", "repeat", "thread", "lo_ns", "hi_ns", "count")


def whole_lines(text: str) -> str:
    """`text` without a torn last line: pmemlab writes whole rows ending in a newline, so a last line
    without one was cut short (a copy interrupted, a disk full)."""
    if text and not text.endswith("\n"):
        return text[: text.rfind("\n") + 1]
    return text


def csv_header(path: Path) -> list[str] | None:
    """The column names of a CSV file; None when it is unreadable, not UTF-8 or empty."""
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            first = fh.readline()
    except (OSError, UnicodeDecodeError):
        return None
    rows = list(csv.reader([first]))
    return [c.strip() for c in rows[0]] if rows and rows[0] else None


def is_pmemlab_csv(path: Path, required: Sequence[str] = SWEEP_CSV_COLUMNS) -> bool:
    header = csv_header(path)
    return header is not None and all(c in header for c in required)


def read_rows(path: Path, required: Sequence[str] = SWEEP_CSV_COLUMNS, what: str = "sweep CSV") -> pd.DataFrame:
    """A CSV pmemlab wrote, as pandas reads it with TEXT_DTYPES; NotPmemlabFile (exit code 2, one
    line) when it is unreadable, not UTF-8, empty, malformed, or lacks the `required` columns. A
    header without rows is an empty frame with its columns."""
    import pandas as pd

    fix = f"give a {what} pmemlab wrote (NAME.csv of `pmemlab sweep`)"
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise NotPmemlabFile(f"cannot read {path}: {exc.strerror}", "check the path") from None
    try:
        text = whole_lines(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise NotPmemlabFile(f"{path} is not a {what}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
                             f"{exc.start})", fix) from None
    if not text.strip():
        raise NotPmemlabFile(f"{path} is empty{' (or cut short in its first line)' if data.strip() else ''}", fix)
    header: list[str] = next(csv.reader([text.partition("\n")[0]]), [])
    missing = [c for c in required if c not in header]
    if missing:
        raise NotPmemlabFile(f"{path} is not a {what}: no column{'s' if len(missing) > 1 else ''} "
                             f"{', '.join(missing)}", fix)
    try:
        return pd.read_csv(io.StringIO(text), low_memory=False,
                           dtype={c: t for c, t in TEXT_DTYPES.items() if c in header})
    except (pd.errors.ParserError, ValueError) as exc:
        reason = " ".join(str(exc).split())[:160]
        raise NotPmemlabFile(f"{path} is not a well-formed {what}: {reason}", fix) from None


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def rows_for_outcome(ids: Mapping[str, Any], params: Mapping[str, Any], outcome: RunOutcome | None,
                     status: str, error: str, tsc_khz: float | None, cond: Mapping[str, Any],
                     media: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Rows of one (point, repeat): a row per thread then the aggregate; one row if it failed."""
    started = (datetime.fromtimestamp(outcome.started, timezone.utc).isoformat(timespec="seconds")
               if outcome and outcome.started else now_iso())
    # a backend that reports the conditions of each run (user backend) overrides the sweep's
    cond = {**cond, **(outcome.conditions if outcome else {})}
    common: dict[str, Any] = {**ids, **{k: params.get(k) for k in PARAM_NAMES}, **cond,
                              "started_at": started, "run_s": round(outcome.elapsed_s, 6) if outcome else None,
                              "run_id": outcome.run_id if outcome else None}
    if status != "ok" or outcome is None:
        return [{**common, "thread": "all", "status": status, "error": error}]
    result_rows = parse_result(outcome.result, tsc_khz, RESERVED)
    if not result_rows:
        return [{**common, "thread": "all", "status": "error", "error": "the module's result file is empty"}]
    rows = []
    for r in result_rows:
        row = {**common, **r, "status": "ok", "error": ""}
        if str(r.get("thread")) == "all" and media:
            row.update(media)
        rows.append(row)
    return rows


def _cell(value: Any) -> str:
    kind = type(value)  # the common cells first: a sweep writes ~150 of them per row
    if kind is str:
        return cast(str, value)
    if kind is int:
        return str(value)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return repr(value)
    return str(value)


# the cells the csv module writes as _cell would (a str as it is, an int by str(), None empty): passed
# to it as they are, without a call per cell (a sweep's row has ~160 cells: issue 37)
_AS_IS: frozenset[type] = frozenset({str, int, type(None)})


def _cells(row: Mapping[str, Any], columns: Sequence[str]) -> list[Any]:
    """The row's cells in `columns`, for csv.writer: each one written as _cell writes it."""
    return [v if type(v) in _AS_IS else _cell(v) for v in map(row.get, columns)]


def csv_text(columns: Sequence[str], rows: Iterable[Mapping[str, Any]], header: bool = False) -> str:
    """`rows` as CSV lines in `columns` (the header line first if asked), cells as a sweep CSV holds them."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    if header:
        w.writerow(columns)
    for row in rows:
        w.writerow(_cells(row, columns))
    return buf.getvalue()


SYNC_EVERY_S = 1.0  # appended rows reach the disk (fsync) at least this often, and at sync()


class CsvSink:
    """Append-only CSV; every append writes whole rows in one write (the file is valid whatever
    stops the process); they are synced to disk at most SYNC_EVERY_S after (an fsync per row
    cost a sweep more than its 20 ms points on a loaded host: issue 37) and at `sync()`."""

    def __init__(self, path: Path, columns: Sequence[str]) -> None:
        self.path = path
        self.columns: list[str] = list(columns)
        self._synced_at = 0.0
        self._dirty = False

    @staticmethod
    def read_existing(path: Path) -> tuple[list[str], list[dict[str, str]]]:
        """Header and rows of an existing CSV; a torn last line (no newline) is dropped."""
        text = whole_lines(path.read_text(encoding="utf-8"))
        reader = csv.DictReader(io.StringIO(text))
        rows = [dict(r) for r in reader if r and None not in r]
        return list(reader.fieldnames or []), rows

    def rewrite(self, rows: Iterable[Mapping[str, Any]]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(self.columns)
            for row in rows:
                w.writerow(_cells(row, self.columns))
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def ensure_header(self) -> None:
        if not self.path.exists() or self.path.stat().st_size == 0:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.rewrite([])

    def append(self, rows: Sequence[Mapping[str, Any]]) -> None:
        known = set(self.columns)  # a list's `in` per cell cost 150 x 150 compares a row
        new = list(dict.fromkeys(k for row in rows for k in row if k not in known))
        if new:
            header, old = self.read_existing(self.path)
            self.columns = list(dict.fromkeys([*self.columns, *header, *new]))
            self.rewrite(old)
        data = csv_text(self.columns, rows).encode("utf-8")
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            os.write(fd, data)  # one write call: a row is in the file whole or not at all
            self._dirty = True
            if time.monotonic() - self._synced_at >= SYNC_EVERY_S:
                self._sync(fd)
        finally:
            os.close(fd)

    def _sync(self, fd: int) -> None:
        os.fsync(fd)
        self._dirty = False
        self._synced_at = time.monotonic()

    def sync(self) -> None:
        """The rows appended so far on disk (the sweep's end)."""
        if self._dirty and self.path.exists():
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
            try:
                self._sync(fd)
            finally:
                os.close(fd)
