"""The module's `result` file -> result columns with units in their names.

`result` has one line per thread and one `thread=all` line, each a list of
`key=value` fields. Parsing is generic: a field the controller does not know yet
becomes a column under its own name (a `*_ticks` field also gets a `*_ns` twin).

Naming (all times exist in TSC ticks, converted with the module's `tsc_khz`):
- `ticks`, `ns`           -> `elapsed_ticks`, `elapsed_ns`
- `lat_<stat>` (ticks)    -> `lat_ticks_<stat>` and `lat_ns_<stat>`   (stat: min mean stddev p50 ... max)
- `<name>_ticks`          -> kept, plus `<name>_ns`
- `node`, `op`, `role`, `mode` -> `thread_node`, `thread_op`, `thread_role`, `thread_mode`
  (what the thread did; the parameter columns keep what was asked for)
- `width`                 -> `width_used` (the instruction width the run used; the `width`
  parameter may be 0 = widest)
- `bw_mbps` (MB/s = 1e6 B/s; the aggregate is the sum over threads) -> kept, plus
  `bw_gbps` = bw_mbps / 1000 (bytes / elapsed_ns when the module gives no bw_mbps)
- `insn`, `loop`          -> kept: the instructions and the generated loop that ran
- `chain` (op chase)      -> kept: `laid` (the chain laid for this run) or `kept` (the served
  runner kept the identical chain of a run before; the `all` row: kept when every chase
  thread's was); empty for threads that do not chase
- `ceiling_mbps` (bandwidth threads: the engine's own rate with the same loop on a
  cache-resident buffer; the aggregate is the sum) -> kept, plus `engine_ceiling_gbps`
  = ceiling_mbps / 1000 and `loop_bound` = bw_gbps >= LOOP_BOUND_FRACTION x
  engine_ceiling_gbps: the number is within 2x of what the tool itself can do, so it says
  more about the loop than about the memory (docs/method.md)
- `ceiling_src` (with ceiling_mbps): `measured` by this run, `reused` from an earlier run of the
  same target whose ceiling key was this run's, or `reused-low`: reused, and this run outran it, so
  it is stale (CEILING_OUTRUN: the row keeps ceiling_mbps as the run reported it, but gets no
  engine_ceiling_gbps and no loop_bound; docs/method.md, "The ceiling, reused")
- `setup_ticks`/`_ns`, `teardown_ticks`/`_ns`, `total_ticks`/`_ns`: the run's fixed cost, from
  `run` to its first timed stamp, from its last timed stamp to done, and from `run` to done
"""

from __future__ import annotations

import re
from typing import Any

LAT_STATS: tuple[str, ...] = ("min", "mean", "stddev", "p50", "p90", "p99", "p999", "p9999", "max")

# a bandwidth at or above this fraction of the engine's ceiling is marked loop_bound
LOOP_BOUND_FRACTION = 0.5

# ceiling_src of a reused ceiling the run outran (core/ceil.c, pl_ceil_low): stale, so neither
# engine_ceiling_gbps nor loop_bound is derived from it
CEILING_OUTRUN = "reused-low"

# Known result columns in CSV order; unknown fields are appended after these.
KNOWN_RESULT_COLUMNS: tuple[str, ...] = (
    "cpu",
    "thread_node",
    "thread_role",
    "thread_op",
    "thread_mode",
    "width_used",
    "insn",
    "loop",
    "chain",
    "ops",
    "reads",
    "writes",
    "bytes",
    "elapsed_ticks",
    "elapsed_ns",
    "bw_mbps",
    "bw_gbps",
    "ceiling_mbps",
    "engine_ceiling_gbps",
    "loop_bound",
    "ceiling_src",
    "segments",
    "gap_ticks",
    "gap_ns",
    "start_lag_ticks",
    "start_lag_ns",
    "end_lag_ticks",
    "end_lag_ns",
    "setup_ticks",
    "setup_ns",
    "teardown_ticks",
    "teardown_ns",
    "total_ticks",
    "total_ns",
    "irqoff_pct",
    "irqoff_max_ticks",
    "irqoff_max_ns",
    "lat_overhead_ticks",
    "lat_overhead_ns",
    "lat_n",
    *(f"lat_ticks_{s}" for s in LAT_STATS),
    *(f"lat_ns_{s}" for s in LAT_STATS),
)

_RENAME = {"node": "thread_node", "op": "thread_op", "role": "thread_role", "mode": "thread_mode",
           "width": "width_used", "ticks": "elapsed_ticks", "ns": "elapsed_ns"}
_FIELD_RE = re.compile(r"(\S+?)=(\S*)")


_FLOAT_WORDS = frozenset({"inf", "infinity", "nan"})  # the letters-only texts float() takes


def parse_value(text: str) -> Any:
    """int, float or the string itself. A word (op=load) and a decimal fraction (bw_mbps=3137.246)
    go straight to what takes them: a result line has several, and a ValueError raised and caught
    for each cost a 64-thread result a millisecond (issue 37)."""
    if text.isalpha() and text.lower() not in _FLOAT_WORDS:
        return text  # neither int() nor float() takes letters alone
    if "." not in text:  # nor does int() take a point
        try:
            return int(text, 10)
        except ValueError:
            pass
        if text.lower().startswith("0x"):
            try:
                return int(text, 16)
            except ValueError:
                pass
    try:
        return float(text)
    except ValueError:
        return text


def parse_result_text(text: str) -> list[dict[str, Any]]:
    """Raw fields per line, in file order."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = {k: parse_value(v) for k, v in _FIELD_RE.findall(line)}
        if fields:
            rows.append(fields)
    return rows


def ticks_to_ns(ticks: float, tsc_khz: float | None) -> float | None:
    if tsc_khz is None or tsc_khz <= 0 or not isinstance(ticks, (int, float)):
        return None
    return ticks * 1e6 / tsc_khz


def columns_for(raw: dict[str, Any], tsc_khz: float | None, reserved: frozenset[str] = frozenset()) -> dict[str, Any]:
    """Rename the raw fields of one line and add converted columns."""
    out: dict[str, Any] = {}
    for key, val in raw.items():
        if key == "thread":
            out["thread"] = val
            continue
        if key in _RENAME:
            out[_RENAME[key]] = val
            continue
        if key.startswith("lat_") and key[4:] in LAT_STATS:
            stat = key[4:]
            out[f"lat_ticks_{stat}"] = val
            out[f"lat_ns_{stat}"] = ticks_to_ns(val, tsc_khz)
            continue
        name = f"result_{key}" if key in reserved else key
        out[name] = val
        if key.endswith("_ticks"):
            out[name[: -len("_ticks")] + "_ns"] = ticks_to_ns(val, tsc_khz)
    if "elapsed_ticks" in out and out.get("elapsed_ns") in (None, ""):
        out["elapsed_ns"] = ticks_to_ns(out["elapsed_ticks"], tsc_khz)
    nbytes, ns = out.get("bytes"), out.get("elapsed_ns")
    if isinstance(out.get("bw_mbps"), (int, float)):
        out["bw_gbps"] = out["bw_mbps"] / 1000.0
    elif isinstance(nbytes, (int, float)) and isinstance(ns, (int, float)) and ns > 0:
        out["bw_gbps"] = nbytes / ns
    ceiling = out.get("ceiling_mbps")
    if isinstance(ceiling, (int, float)) and out.get("ceiling_src") != CEILING_OUTRUN:
        out["engine_ceiling_gbps"] = ceiling / 1000.0
        bw = out.get("bw_gbps")
        if isinstance(bw, (int, float)):
            out["loop_bound"] = ceiling > 0 and bw >= LOOP_BOUND_FRACTION * out["engine_ceiling_gbps"]
    return out


def parse_result(text: str, tsc_khz: float | None, reserved: frozenset[str] = frozenset()) -> list[dict[str, Any]]:
    """Result rows (one per thread, then the `thread=all` row last)."""
    rows = [columns_for(raw, tsc_khz, reserved) for raw in parse_result_text(text)]
    for row in rows:
        row.setdefault("thread", "all")
    rows.sort(key=lambda r: (str(r["thread"]) == "all", row_number(r["thread"])))
    return rows


def row_number(value: Any) -> int:
    """A row's thread or CPU number, -1 where it has none (the aggregate row "all", a missing value)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


HIST_FIELDS: tuple[str, ...] = ("thread", "lo_ticks", "hi_ticks", "count")


def parse_histogram(text: str, tsc_khz: float | None) -> list[dict[str, Any]]:
    """`histogram`: `thread lo_ticks hi_ticks count` per non-empty bucket (whitespace
    columns or key=value fields; a header line is skipped). Adds lo_ns / hi_ns."""
    rows: list[dict[str, Any]] = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" in line:
            fields: dict[str, Any] = {k: parse_value(v) for k, v in _FIELD_RE.findall(line)}
        else:
            parts = line.split()
            if len(parts) != len(HIST_FIELDS) or not parts[1].isdigit():
                continue  # header or unknown line
            fields = {k: parse_value(v) for k, v in zip(HIST_FIELDS, parts)}
        if not all(k in fields for k in HIST_FIELDS[1:]):
            continue
        fields.setdefault("thread", "all")
        fields["lo_ns"] = ticks_to_ns(fields["lo_ticks"], tsc_khz)
        fields["hi_ns"] = ticks_to_ns(fields["hi_ticks"], tsc_khz)
        rows.append(fields)
    return rows
