"""Run parameters of pmemlab.ko, as the module itself defines and judges them.

The table (core/params.def) and the validator (core/check.c) are the module's own C
code. The table reaches this module as data (the package's schema.json, written from it at build
time by `make docs`: no compiler needed to read, plot or compare results); the validator is called
in libplcore.so (pmemlab.plcore), which judging a value or a run needs. This module only adds what
is Python's: the parameters as a dict of `Param`, TOML conveniences turned into the module's text
(lists, `true`, "2MiB", cpus = "remote"), and `Problem`s that config.py reports with their line.

Two kinds of problems are reported:
- `Problem(kind="invalid")`: the value is wrong on any machine (a typo, out of range).
- `Problem(kind="unsupported")`: the verdict rests on a fact of this machine or target (no clwb,
  no AVX-512 width, more threads than CPUs, prefetch control absent, the target's size, ...).
  Sweeps skip such points with a recorded reason instead of failing.
"""

from __future__ import annotations

import difflib
import errno as _errno
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from pmemlab import plcore

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB
U64_MAX = 2**64 - 1


@dataclass(frozen=True)
class Param:
    """One run parameter: a file under /sys/kernel/pmemlab/ (a row of core/params.def)."""

    name: str
    kind: str  # enum | int | size | bool | ops | cpus
    default: Any
    doc: str
    choices: tuple[Any, ...] = ()
    lo: int | None = None
    hi: int | None = None
    multiple_of: int | None = None
    unit: str = ""
    documented: bool = True  # in docs/interface.md (generated from the same table)
    allowed_text: str = ""

    def allowed(self) -> str:
        """The allowed values, in the module's words."""
        return self.allowed_text


def _kind(row: Mapping[str, Any]) -> str:
    if row["choices"]:
        return "enum"
    return {"num": "int"}.get(row["kind"], row["kind"])


def _python_value(kind: str, text: str) -> Any:
    """The module's canonical text -> the controller's canonical value."""
    return int(text) if kind in ("int", "size", "bool") or (kind == "enum" and text.isdigit()) else text


def _load() -> dict[str, Param]:
    out: dict[str, Param] = {}
    for row in plcore.schema()["params"]:
        kind = _kind(row)
        out[row["name"]] = Param(
            name=row["name"], kind=kind, default=_python_value(kind, row["default"]), doc=row["doc"],
            choices=tuple(row["choices"]) or tuple(row["names"]),
            lo=row["lo"] if kind in ("int", "size") else None, hi=row["hi"] if kind in ("int", "size") else None,
            multiple_of=row["multiple_of"] or None, unit=row["unit"], allowed_text=row["allowed"])
    return out


# In table order, which is the order of the CSV columns and of judging.
PARAMS: dict[str, Param] = _load()
PARAM_NAMES: tuple[str, ...] = tuple(PARAMS)
_INDEX = {name: i for i, name in enumerate(PARAM_NAMES)}
_OPS = plcore.schema()["ops"]
# the access ops the sweeps and one-liners combine: one access a unit, a load or a store. Both
# backends run every op; the copies (a load of the source and a store of it: the table's ops that
# read and write) and chase (its own loop: latency mode, dependent loads) are not among these
CHASE_OPS: tuple[str, ...] = tuple(op["name"] for op in _OPS if op.get("own_loop"))
COPY_OPS: tuple[str, ...] = tuple(op["name"] for op in _OPS if op["reads"] and op["writes"] and not op.get("own_loop"))
OPS: tuple[str, ...] = tuple(op["name"] for op in _OPS if op["name"] not in CHASE_OPS + COPY_OPS)
WRITE_OPS: frozenset[str] = frozenset(op["name"] for op in _OPS if op["writes"] and op["name"] in OPS)
READ_OPS: frozenset[str] = frozenset(OPS) - WRITE_OPS  # the access ops that only read


def flush_of(op: str) -> str:
    """The flush instruction of a store+flush op (ops.def names it after the '+'), else '': a label
    only; whether an op flushes is the table's (PL_OPF_FLUSHES, the schema's "flushes")."""
    return op.partition("+")[2]


NON_TEMPORAL_OPS: frozenset[str] = frozenset(op["name"] for op in _OPS if op["non_temporal"])


def non_temporal(op: str) -> bool:
    """An op of non-temporal accesses (movnti, movntdq, movntdqa): the table's flag (PL_OPF_NT),
    not its name."""
    return op in NON_TEMPORAL_OPS


# the access ops' writes that take their data out of the cache themselves (non-temporal, or a store
# and its flush): what a persistence measurement writes with, in the table's order
DURABLE_WRITES: tuple[str, ...] = tuple(op["name"] for op in _OPS if op["name"] in OPS and op["writes"]
                                        and (op["flushes"] or non_temporal(op["name"])))
WIDTHS: tuple[int, ...] = PARAMS["width"].choices
MAX_ACCESS: int = PARAMS["access_size"].hi or 0
MAX_SAMPLES: int = PARAMS["samples"].hi or 0
# the longest value text one sysfs write carries whole (core/pl_params.h PL_TEXT_MAX)
TEXT_MAX: int = plcore.schema()["text_max"]
# the CPU features an op x width may need, in bit order (core/features.def, through schema.json)
CPU_FEATURES: tuple[str, ...] = tuple(plcore.schema()["features"])


@dataclass(frozen=True)
class Problem:
    """A parameter value the controller will not send to the module."""

    key: str
    value: Any
    allowed: str
    reason: str
    kind: str = "invalid"  # or "unsupported"
    errno: int = _errno.EINVAL  # what the module would answer

    @property
    def allowed_note(self) -> str:
        """` (allowed: ...)` after the reason, unless what refuses the value is the target's
        contents (the overwrite guard's EPERM), not the value's range."""
        return "" if self.errno == _errno.EPERM else f" (allowed: {self.allowed})"

    def message(self) -> str:
        return f"{self.key} = {self.value!r}: {self.reason}{self.allowed_note}"


@dataclass
class TargetFacts:
    """What the backend says about its target and CPU, and this machine's CPUs (None: unknown)."""

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
    # the online CPUs themselves (else 0 .. online_cpus - 1) and how many CPUs may exist
    online: tuple[int, ...] | None = None
    possible_cpus: int | None = None
    # the write protection: the target's file system signature and the module's allow_overwrite
    allow_overwrite: bool | None = None
    # why per-device placement names no device on this target (`pmemlab info`'s devices_why: a CXL
    # region whose interleave arithmetic is unknown or XOR over higher bits); None: it can
    per_device_why: str | None = None

    def widest(self) -> int | None:
        if self.widths:
            return max(self.widths)
        return None

    def core_text(self) -> str:
        """The facts as libplcore takes them (plcore.c): what is unknown is left out."""
        x = self.extra
        lines = []
        if self.target_size is not None:
            lines.append(f"target_size={self.target_size}")
        if self.cpu_features is not None:
            lines.append("features=" + " ".join(sorted(self.cpu_features)))
        if self.online is not None:
            lines.append("online=" + fmt_cpulist(self.online))
        elif self.online_cpus is not None:
            lines.append(f"online=0-{self.online_cpus - 1}" if self.online_cpus > 1 else "online=0")
        if self.possible_cpus is not None:
            lines.append(f"possible={self.possible_cpus}")
        if isinstance(x.get("tsc_khz"), int) and x["tsc_khz"] > 0:
            lines.append(f"tsc_khz={x['tsc_khz']}")
        if self.prefetch_control is not None:
            lines.append(f"prefetch={int(self.prefetch_control not in ('', 'none'))}")
        if "target_kind" in x:
            lines.append("backend=" + ("user" if str(x["target_kind"]).startswith("user-") else "kernel"))
            # a DRAM target's pages lie anywhere in physical memory: per-dimm is refused on it
            lines.append(f"scattered={int(str(x['target_kind']).removeprefix('user-') == 'dram')}")
        if self.allow_overwrite is not None and "fs_signature" in x:
            lines.append(f"fs_signature={x['fs_signature']}")
            lines.append(f"allow_overwrite={int(self.allow_overwrite)}")
        return "".join(line + "\n" for line in lines)


_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGTkmgt])?(?:i?[Bb])?\s*$")
_SUFFIX = {"": 1, "K": KiB, "M": MiB, "G": GiB, "T": 1 << 40}


def _whole(value: Any, what: str) -> int | None:
    """A TOML or Python number that is a whole number, as an int; None for anything else (text is
    each caller's); a boolean (TOML true/false) is refused as `what`."""
    if isinstance(value, bool):
        raise ValueError(f"a boolean is not {what}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def parse_size(value: Any) -> int:
    """`4096`, `"4K"`, `"64M"`, `"1G"`, `"2MiB"` -> bytes (powers of two)."""
    whole = _whole(value, "a size")
    if whole is not None:
        return whole
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
    whole = _whole(value, "an integer")  # TOML true/false is not a count
    if whole is not None:
        return whole
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
    node_cpus = f.node_cpus
    for node in others:
        if len(node_cpus[node]) >= threads:
            return list(node_cpus[node][:threads])
    most = max(others, key=lambda n: len(node_cpus[n]))
    return f"no other node has {threads} online CPUs (node {most} has {len(node_cpus[most])})"


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


class ConfigValueError(ValueError):
    """A single bad value (carries the Problem)."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.message())
        self.problem = problem


def _reason(key: str, why: str) -> str:
    """The module's reason without the parameter's name in front (the Problem carries it)."""
    return why[len(key) + 2:] if why.startswith(key + ": ") else why


# sizes the module does not spell: "2MiB", "64KB", "4096B", "64 K"
_PY_SIZE_RE = re.compile(r"^\s*(\d+)\s*(?:([KMGTkmgt])i?[Bb]|[Bb]|\s([KMGTkmgt]))\s*$")
_TRUE = ("true", "yes", "on")
_FALSE = ("false", "no", "off")


def module_text(key: str, value: Any) -> str:
    """A config value as the text the module takes: TOML lists, booleans, floats and the
    Python-only spellings ("2MiB", "64 KB", "load, ntstore", "0, 1") become the module's form;
    any other text goes as it is, for the module's parser to judge. ValueError: no such value."""
    kind = PARAMS[key].kind
    if isinstance(value, bool):
        if kind != "bool":
            raise ValueError("a boolean is not an integer")
        return str(int(value))
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"not an integer: {value!r}")
        value = int(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, (list, tuple)):
        if kind == "ops":
            return ",".join(str(x).strip() for x in value)
        if kind == "cpus":
            if any(isinstance(x, bool) or not isinstance(x, int) for x in value):
                raise ValueError("a CPU list holds CPU numbers")
            return ",".join(str(x) for x in value)
        raise ValueError("a list is not a single value")
    text = str(value)
    if kind == "size":
        m = _PY_SIZE_RE.match(text)
        if m:
            return str(int(m.group(1)) * _SUFFIX[(m.group(2) or m.group(3) or "").upper()])
    elif kind == "bool" and text.strip().lower() in _TRUE + _FALSE:
        return "1" if text.strip().lower() in _TRUE else "0"
    elif kind in ("ops", "cpus") and "," in text:
        return ",".join(part.strip() for part in text.split(","))
    return text


def _judge_value(key: str, value: Any, facts: TargetFacts | None) -> Any:
    """The canonical value of one parameter, judged by the module's code (and, with facts,
    against this machine as a write of its file would be). Raises ConfigValueError."""
    p = PARAMS[key]
    if p.kind == "cpus" and isinstance(value, str) and value.strip().lower() == REMOTE:
        return REMOTE
    try:
        text = module_text(key, value)
    except ValueError as exc:
        raise ConfigValueError(Problem(key, value, p.allowed(), str(exc))) from None
    rc, out, _, machine = plcore.judge_value(key, text, facts.core_text() if facts else "")
    if rc:
        raise ConfigValueError(Problem(key, value, p.allowed(), _reason(key, out),
                                       "unsupported" if machine else "invalid", -rc))
    return _python_value(p.kind, out)


def canonical(key: str, value: Any) -> Any:
    """Canonical Python value of one parameter; raises ConfigValueError on a bad value."""
    return _judge_value(key, value, None)


def suggest(key: str) -> str:
    close = difflib.get_close_matches(key, PARAM_NAMES, n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_key_problem(key: str, value: Any) -> Problem:
    return Problem(key, value, "a run parameter: " + ", ".join(PARAM_NAMES), "unknown parameter" + suggest(key),
                   errno=_errno.ENOENT)


def defaults() -> dict[str, Any]:
    return {name: p.default for name, p in PARAMS.items()}


def to_sysfs(key: str, value: Any) -> str:
    """The text written to /sys/kernel/pmemlab/<key>."""
    if key == "cpus" and value == REMOTE:
        raise ValueError("cpus = remote reaches a backend unresolved (resolve_cpus first)")
    return str(value)


def normalize(raw: Mapping[str, Any], facts: TargetFacts | None = None) -> tuple[dict[str, Any], list[Problem]]:
    """Defaults + canonical values of `raw`; problems for unknown keys and bad values, in the
    order the module judges them (table order). With facts, each value is also judged against
    this machine, as the module judges a write of its file."""
    out = defaults()
    problems: list[Problem] = []
    for key in sorted(raw, key=lambda k: _INDEX.get(k, -1)):
        value = raw[key]
        if key not in PARAMS:
            problems.append(unknown_key_problem(key, value))
            continue
        try:
            out[key] = _judge_value(key, value, facts)
        except ConfigValueError as exc:
            problems.append(exc.problem)
    return out, problems


def check_point(params: Mapping[str, Any], facts: TargetFacts | None = None) -> list[Problem]:
    """The point judged as the module's `run` judges it (every value against the facts, their
    combination, CPU features, target, regions). `params` is canonical and complete; facts left
    unknown are not judged. At most one problem: the first the module would name."""
    f = facts or TargetFacts()
    values = dict(params)
    if values.get("cpus") == REMOTE:
        if f.node_cpus is None or f.target_node is None:
            values["cpus"] = ""  # the machine is unknown: judged as the default placement
        else:
            picked = remote_cpus(int(values.get("threads", 1)), f)
            if isinstance(picked, str):
                return [Problem("cpus", REMOTE, "remote on a machine with another node of enough CPUs", picked,
                                "unsupported")]
            values["cpus"] = fmt_cpulist(picked)
    if f.per_device_why and values.get("placement") == "per-dimm":
        return [Problem("placement", "per-dimm", "global or per-thread (no device of this target can be named)",
                        f"per-dimm: {f.per_device_why}", "unsupported", _errno.EOPNOTSUPP)]
    pairs = [(k, to_sysfs(k, values[k])) for k in PARAM_NAMES if k in values]
    rc, why, param, machine = plcore.judge_run(pairs, facts.core_text() if facts else "")
    if not rc:
        return []
    key = PARAM_NAMES[param] if param >= 0 else "target"
    return [Problem(key, params.get(key), PARAMS[key].allowed() if key in PARAMS else "a target that is there",
                    _reason(key, why), "unsupported" if machine else "invalid", -rc)]


DOC_BEGIN = "<!-- run parameters: generated from core/params.def by `make docs`; edit the table there -->"
DOC_END = "<!-- end of the generated run parameters -->"
_UNITS = {"B": "bytes", "ms": "ms", "ticks": "TSC ticks", "%": "%"}


def doc_table() -> str:
    """The run parameters as the Markdown table of docs/interface.md (between DOC_BEGIN and DOC_END)."""
    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    lines = [DOC_BEGIN, "", "| file | values | unit | default | meaning |", "| --- | --- | --- | --- | --- |"]
    for p in PARAMS.values():
        default = f"`{p.default}`" if p.default != "" else "empty"
        lines.append(f"| `{p.name}` | {cell(p.allowed())} | {_UNITS.get(p.unit, p.unit)} | {default} | {cell(p.doc)} |")
    lines += ["", DOC_END]
    return "\n".join(lines) + "\n"
