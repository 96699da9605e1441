"""Run parameters of pmemlab.ko: the one place that mirrors docs/interface.md.

Every rule the controller checks before a value reaches the module lives here:
allowed values, ranges, multiples, and the rules that involve several parameters
or the target (CPU features, widths, target size, prefetch control).

Two kinds of problems are reported:
- `Problem(kind="invalid")`: the value is wrong on any machine (a typo, out of range).
- `Problem(kind="unsupported")`: the value is fine but this target cannot run it
  (no clwb, no AVX-512 width, more threads than CPUs, prefetch control absent, ...).
  Sweeps skip such points with a recorded reason instead of failing.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

OPS: tuple[str, ...] = (
    "load",
    "ntload",
    "store",
    "ntstore",
    "store+clwb",
    "store+clflushopt",
    "store+clflush",
)
WRITE_OPS: frozenset[str] = frozenset(op for op in OPS if op not in ("load", "ntload"))
# CPU feature (as in the module's `cpu_features`) each op needs beyond the baseline.
OP_FEATURE: dict[str, str] = {
    "store+clwb": "clwb",
    "store+clflushopt": "clflushopt",
    "store+clflush": "clflush",
}
WIDTHS: tuple[int, ...] = (0, 8, 16, 32, 64)
# Feature needed for an instruction width when the module does not list `widths`.
WIDTH_FEATURE: dict[int, str] = {16: "sse2", 32: "avx", 64: "avx512f"}
MAX_ACCESS = 64 * MiB
MAX_SAMPLES = 1024 * 1024
U64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Param:
    """One run parameter: a file under /sys/kernel/pmemlab/."""

    name: str
    kind: str  # enum | int | size | bool | ops | cpus
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()
    lo: int | None = None
    hi: int | None = None
    multiple_of: int | None = None
    unit: str = ""
    documented: bool = True  # in docs/interface.md (False: a module extension seen in kmod/)

    def allowed(self) -> str:
        """The allowed values, as shown in error messages."""
        if self.kind == "enum":
            return "one of " + ", ".join(str(c) for c in self.choices)
        if self.kind == "bool":
            return "0 or 1 (true/false)"
        if self.kind == "ops":
            return "an op or a comma list of ops, one per thread: " + ", ".join(OPS)
        if self.kind == "cpus":
            return "a CPU list such as 0-3,6, or remote (another node's CPUs; empty: automatic)"
        lo = "" if self.lo is None else fmt_size(self.lo) if self.kind == "size" else str(self.lo)
        hi = "" if self.hi is None else fmt_size(self.hi) if self.kind == "size" else str(self.hi)
        text = f"{lo}..{hi}" if hi else f">= {lo}"
        if self.kind == "size":
            text += " bytes (K/M/G suffixes allowed)"
        if self.multiple_of:
            text += f", a multiple of {self.multiple_of}"
        return text


def _p(name: str, kind: str, default: Any, doc: str, **kw: Any) -> Param:
    return Param(name=name, kind=kind, default=default, doc=doc, **kw)


# Order = order the controller writes them (coarse choices first, then sizes).
PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        _p("mode", "enum", "bandwidth", "latency or bandwidth", choices=("latency", "bandwidth")),
        _p("threads", "int", 1, "worker threads (1 .. online CPUs)", lo=1, hi=4096),
        _p("op", "ops", "load", "op for every thread, or a comma list, one per thread"),
        _p("read_pct", "int", 0, "within each thread, % of accesses that are loads (0 = no mixing)", lo=0, hi=99, unit="%"),
        _p("width", "enum", 0, "bytes per instruction (0 = widest supported)", choices=WIDTHS, unit="B"),
        _p("access_size", "size", 64, "bytes per access: 8, 16, 32 or a multiple of 64, and a multiple of width", lo=8, hi=MAX_ACCESS, unit="B"),
        _p("stride", "size", 0, "bytes between access starts (0 = access_size rounded up to 64)", lo=0, hi=None, unit="B"),
        _p("window_offset", "size", 0, "byte offset of the window in the target", lo=0, multiple_of=4096, unit="B"),
        _p("working_set", "size", 0, "bytes of the window (0 = to the end of the target)", lo=0, multiple_of=8, unit="B"),
        _p("pattern", "enum", "seq", "access pattern", choices=("seq", "rand", "stride", "hotspot")),
        _p("hotspot_size", "size", 4096, "bytes of the circular hot region (hotspot pattern)", lo=8, hi=1 << 40, multiple_of=8, unit="B"),
        _p("passes", "int", 1, "passes over the sequence before it repeats", lo=1, hi=4096),
        _p("pass_offset", "size", 0, "start offset added per pass", lo=0, hi=1 << 40, multiple_of=8, unit="B"),
        _p("fence", "enum", "none", "fence instruction", choices=("none", "sfence", "mfence")),
        _p("fence_interval", "size", 0, "bytes between fences (0 = after every access)", lo=0, hi=1 << 40, multiple_of=64, unit="B"),
        _p("flush", "enum", "line", "flush after each line or after the whole access", choices=("line", "access")),
        _p("cpus", "cpus", "", "CPU list (empty = distinct cores of the target's node first)"),
        _p("placement", "enum", "per-thread", "how threads share the window", choices=("global", "per-thread", "per-dimm")),
        _p("interleave_ways", "int", 1, "DIMMs in the interleave set (per-dimm placement)", lo=1, hi=64),
        _p("interleave_gran", "size", 4096, "interleave granularity, a power of two (per-dimm placement)", lo=64, hi=1 * GiB, multiple_of=64, unit="B"),
        _p("dimms_per_thread", "int", 1, "DIMMs each thread spreads over (per-dimm placement)", lo=1, hi=64),
        _p("duration_ms", "int", 1000, "bandwidth run length", lo=1, hi=3600 * 1000, unit="ms"),
        _p("count", "int", 0, "accesses per thread (latency: samples; bandwidth: 0 = run for duration_ms)", lo=0, hi=1 << 40),
        _p("delay_ticks", "int", 0, "busy wait between accesses, TSC ticks", lo=0, hi=1 << 36, unit="ticks"),
        _p("probe", "bool", 0, "1 = thread 0 measures latency while the others stream"),
        _p("seed", "int", 1, "seed of the random patterns", lo=0, hi=U64_MAX),
        _p("prefetch", "enum", "on", "hardware prefetchers on/off (off needs prefetch_control)", choices=("on", "off")),
        _p("cold", "bool", 0, "latency mode: flush each line before it is measured"),
        _p("samples", "int", 0, "raw latency samples kept per thread", lo=0, hi=MAX_SAMPLES),
        _p("warm", "bool", 0, "latency mode: load each line (then mfence) before it is measured; excludes cold"),
        _p("segment_ms", "int", 5, "length of one IRQ-off timed segment", lo=1, hi=200, unit="ms"),
    )
}

PARAM_NAMES: tuple[str, ...] = tuple(PARAMS)


@dataclass(frozen=True)
class Problem:
    """A parameter value the controller will not send to the module."""

    key: str
    value: Any
    allowed: str
    reason: str
    kind: str = "invalid"  # or "unsupported"

    def message(self) -> str:
        return f"{self.key} = {self.value!r}: {self.reason} (allowed: {self.allowed})"


@dataclass
class TargetFacts:
    """What the loaded module says about its target and CPU (None: unknown)."""

    target_size: int | None = None
    cpu_features: frozenset[str] | None = None
    widths: tuple[int, ...] | None = None
    prefetch_control: str | None = None
    online_cpus: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # NUMA: the target's node, each node's online CPUs and its distances (node -> distance)
    target_node: int | None = None
    node_cpus: dict[int, tuple[int, ...]] | None = None
    node_distance: dict[int, dict[int, int]] | None = None

    def widest(self) -> int | None:
        if self.widths:
            return max(self.widths)
        return None


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGkmg])?(?:i?[Bb])?\s*$")
_SUFFIX = {"": 1, "K": KiB, "M": MiB, "G": GiB}


def parse_size(value: Any) -> int:
    """`4096`, `"4K"`, `"64M"`, `"1G"`, `"2MiB"` -> bytes (powers of two)."""
    if isinstance(value, bool):
        raise ValueError("a boolean is not a size")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        m = _SIZE_RE.match(value)
        if m:
            return int(m.group(1)) * _SUFFIX[(m.group(2) or "").upper()]
    raise ValueError(f"not a size: {value!r}")


def fmt_size(n: int) -> str:
    """Bytes as the shortest exact K/M/G form: 65536 -> '64K'."""
    for suffix, mult in (("G", GiB), ("M", MiB), ("K", KiB)):
        if n and n % mult == 0:
            return f"{n // mult}{suffix}"
    return str(n)


def parse_int(value: Any) -> int:
    if isinstance(value, bool):  # TOML true/false is not a count
        raise ValueError("a boolean is not an integer")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return int(text, 0)
        except ValueError:
            pass
    raise ValueError(f"not an integer: {value!r}")


REMOTE = "remote"


def remote_cpus(threads: int, f: TargetFacts) -> list[int] | str:
    """CPUs for cpus = "remote": `threads` CPUs of the node nearest to the target's node among
    the other nodes with that many online CPUs (ties: the lower node), or why there are none."""
    if f.target_node is None or f.target_node < 0 or f.node_cpus is None:
        return "the target's NUMA node or the machine's nodes are unknown"
    dist = (f.node_distance or {}).get(f.target_node, {})
    others = sorted((n for n, cpus in f.node_cpus.items() if n != f.target_node and cpus),
                    key=lambda n: (dist.get(n, 1 << 30), n))
    if not others:
        return f"no NUMA node other than the target's node {f.target_node} has online CPUs"
    for node in others:
        if len(f.node_cpus[node]) >= threads:
            return list(f.node_cpus[node][:threads])
    most = max(others, key=lambda n: len(f.node_cpus[n]))
    return f"no other node has {threads} online CPUs (node {most} has {len(f.node_cpus[most])})"


def resolve_cpus(params: Mapping[str, Any], facts: TargetFacts | None) -> dict[str, Any]:
    """The parameters as the backend gets them: cpus = "remote" becomes a CPU list."""
    out = dict(params)
    if out.get("cpus") == REMOTE:
        cpus = remote_cpus(int(out.get("threads", 1)), facts or TargetFacts())
        if isinstance(cpus, str):
            raise ValueError(f"cpus = remote: {cpus}")
        out["cpus"] = fmt_cpulist(cpus)
    return out


def parse_cpulist(text: str) -> list[int]:
    """`"0-3,6"` -> [0, 1, 2, 3, 6]."""
    cpus: list[int] = []
    text = text.strip()
    if not text:
        return cpus
    for part in text.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            lo, hi = int(a), int(b)
            if hi < lo:
                raise ValueError(f"bad range {part!r}")
            cpus.extend(range(lo, hi + 1))
        else:
            cpus.append(int(part))
    return cpus


def fmt_cpulist(cpus: Iterable[int]) -> str:
    out: list[str] = []
    seq = sorted(set(cpus))
    i = 0
    while i < len(seq):
        j = i
        while j + 1 < len(seq) and seq[j + 1] == seq[j] + 1:
            j += 1
        out.append(str(seq[i]) if i == j else f"{seq[i]}-{seq[j]}")
        i = j + 1
    return ",".join(out)


def canonical(key: str, value: Any) -> Any:
    """Canonical Python value of one parameter; raises ConfigValueError on a bad value."""
    p = PARAMS[key]
    try:
        if p.kind == "size":
            v: Any = parse_size(value)
        elif p.kind == "int":
            v = parse_int(value)
        elif p.kind == "bool":
            if isinstance(value, bool):
                v = int(value)
            elif isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no", "on", "off"):
                v = int(value.strip().lower() in ("true", "yes", "on"))
            else:
                v = parse_int(value)
            if v not in (0, 1):
                raise ValueError("not 0 or 1")
        elif p.kind == "enum":
            if p.choices and isinstance(p.choices[0], int):
                v = parse_int(value)
            else:
                v = str(value).strip()
            if v not in p.choices:
                raise ValueError("not an allowed value")
        elif p.kind == "ops":
            if isinstance(value, (list, tuple)):
                ops = [str(x).strip() for x in value]
            else:
                ops = [x.strip() for x in str(value).split(",")]
            bad = [o for o in ops if o not in OPS]
            if bad or not ops:
                raise ValueError(f"unknown op {bad[0]!r}" if bad else "empty")
            v = ",".join(ops)
        elif p.kind == "cpus":
            if isinstance(value, str) and value.strip().lower() == REMOTE:
                v = REMOTE
            elif isinstance(value, (list, tuple)):
                v = fmt_cpulist(parse_int(x) for x in value)
            elif isinstance(value, int) and not isinstance(value, bool):
                v = str(value)
            else:
                v = fmt_cpulist(parse_cpulist(str(value)))
        else:  # pragma: no cover - schema error
            raise AssertionError(p.kind)
    except ValueError as exc:
        raise ConfigValueError(Problem(key, value, p.allowed(), str(exc))) from None
    if p.kind in ("int", "size"):
        if p.lo is not None and v < p.lo:
            raise ConfigValueError(Problem(key, value, p.allowed(), f"below the minimum {p.lo}"))
        if p.hi is not None and v > p.hi:
            raise ConfigValueError(Problem(key, value, p.allowed(), f"above the maximum {p.hi}"))
        if p.multiple_of and v % p.multiple_of:
            raise ConfigValueError(Problem(key, value, p.allowed(), f"not a multiple of {p.multiple_of}"))
    return v


class ConfigValueError(ValueError):
    """A single bad value (carries the Problem)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message())
        self.problem = problem


def suggest(key: str) -> str:
    close = difflib.get_close_matches(key, PARAM_NAMES, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key_problem(key: str, value: Any) -> Problem:
    return Problem(key, value, "a run parameter: " + ", ".join(PARAM_NAMES), "unknown parameter" + suggest(key))


def defaults() -> dict[str, Any]:
    return {name: p.default for name, p in PARAMS.items()}


def to_sysfs(key: str, value: Any) -> str:
    """The text written to /sys/kernel/pmemlab/<key>."""
    if key == "cpus" and value == REMOTE:
        raise ValueError("cpus = remote reaches a backend unresolved (resolve_cpus first)")
    return str(value)


def normalize(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[Problem]]:
    """Defaults + canonical values of `raw`; problems for unknown keys and bad values."""
    out = defaults()
    problems: list[Problem] = []
    for key, value in raw.items():
        if key not in PARAMS:
            problems.append(unknown_key_problem(key, value))
            continue
        try:
            out[key] = canonical(key, value)
        except ConfigValueError as exc:
            problems.append(exc.problem)
    return out, problems


def check_point(params: Mapping[str, Any], facts: TargetFacts | None = None) -> list[Problem]:
    """Rules between parameters and against the target. `params` is canonical and complete."""
    f = facts or TargetFacts()
    probs: list[Problem] = []

    def bad(key: str, reason: str, allowed: str, kind: str = "invalid") -> None:
        probs.append(Problem(key, params[key], allowed, reason, kind))

    threads = params["threads"]
    ops = params["op"].split(",")
    if len(ops) > 1 and len(ops) != threads:
        bad("op", f"a list of {len(ops)} ops for threads = {threads}", "one op, or exactly one op per thread")
    width = params["width"]
    eff_width = width or f.widest() or 8
    access = params["access_size"]
    if access < 64 and access & (access - 1):
        bad("access_size", "below 64 and not 8, 16 or 32", "8, 16, 32 or a multiple of 64, up to 64M")
    elif access >= 64 and access % 64:
        bad("access_size", "not a multiple of 64", "8, 16, 32 or a multiple of 64, up to 64M")
    elif access < eff_width or access % eff_width:
        bad("access_size", f"not a multiple of width {eff_width}", f"{eff_width}..64M, a multiple of width")
    stride = params["stride"]
    if stride:
        if stride < access:
            bad("stride", f"smaller than access_size {access}", f">= access_size ({access}), a multiple of 64, or 0")
        elif stride % 64:
            bad("stride", "not a multiple of 64", f">= access_size ({access}), a multiple of 64, or 0")
    ws = params["working_set"]
    if ws and ws < access:
        bad("working_set", f"smaller than access_size {access}", f"0 or >= access_size ({access})")
    if params["pattern"] == "hotspot":
        hs = params["hotspot_size"]
        if hs < access:
            bad("hotspot_size", f"smaller than access_size {access}", f">= access_size ({access})")
        elif ws and hs > ws:
            bad("hotspot_size", f"larger than working_set {ws}", f"access_size..working_set ({ws})")
    if params["read_pct"] and any(op not in WRITE_OPS for op in ops):
        bad("read_pct", "mixing needs a write op (the rest of the accesses)", "0 with load/ntload; 0..99 with write ops")
    if params["placement"] == "per-dimm":
        ways = params["interleave_ways"]
        if params["dimms_per_thread"] > ways:
            bad("dimms_per_thread", f"more than interleave_ways {ways}", f"1..{ways}")
        gran = params["interleave_gran"]
        if gran & (gran - 1):
            bad("interleave_gran", "not a power of two", "a power of two, 64..1G")
    if params["probe"] and threads < 2:
        bad("probe", "needs at least 2 threads (thread 0 probes, the others stream)", "0, or 1 with threads >= 2")
    if params["cpus"] == REMOTE:
        if f.node_cpus is not None and f.target_node is not None:
            picked = remote_cpus(threads, f)
            if isinstance(picked, str):
                bad("cpus", picked, "remote on a machine with another node of enough CPUs", "unsupported")
    elif params["cpus"]:
        cpus = parse_cpulist(params["cpus"])
        if len(cpus) < threads:
            bad("cpus", f"{len(cpus)} CPUs for threads = {threads}", "at least one CPU per thread")
        if f.online_cpus is not None and max(cpus) >= f.online_cpus:
            bad("cpus", f"CPU {max(cpus)} is not online", f"CPUs 0..{f.online_cpus - 1}", "unsupported")

    # Against the target and this CPU.
    if f.online_cpus is not None and threads > f.online_cpus:
        bad("threads", f"more threads than the {f.online_cpus} online CPUs", f"1..{f.online_cpus}", "unsupported")
    if f.cpu_features is not None:
        for op in dict.fromkeys(ops):
            need = OP_FEATURE.get(op)
            if need and need not in f.cpu_features:
                bad("op", f"{op} needs {need}, which this CPU lacks", "ops whose instructions this CPU has", "unsupported")
    if width:
        if f.widths is not None:
            if width not in f.widths:
                bad("width", f"this CPU runs widths {' '.join(map(str, f.widths))} only", "0 or one of " + " ".join(map(str, f.widths)), "unsupported")
        elif f.cpu_features is not None:
            need = WIDTH_FEATURE.get(width)
            if need and need not in f.cpu_features:
                bad("width", f"width {width} needs {need}", "a width this CPU has", "unsupported")
    if params["prefetch"] == "off" and f.prefetch_control is not None and f.prefetch_control in ("", "none"):
        bad("prefetch", "the module cannot control prefetchers on this CPU (prefetch_control = none)", "on", "unsupported")
    if f.target_size is not None:
        off = params["window_offset"]
        if off >= f.target_size:
            bad("window_offset", f"beyond the target's {f.target_size} bytes", f"0..{f.target_size - 4096}", "unsupported")
        elif ws and off + ws > f.target_size:
            bad("working_set", f"window_offset + working_set exceeds the target's {f.target_size} bytes", f"<= {f.target_size - off}", "unsupported")
    return probs
