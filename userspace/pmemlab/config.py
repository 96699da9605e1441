"""Sweep configs (TOML): parse, expand into points, validate everything before a run.

Format (see configs/README for the full description):

    [sweep]
    name = "bw-size"                 # default: the file name
    repeats = 3                      # runs per point
    filters = ["access_size <= stride or stride == 0"]   # keep points where all are true
    # target = "/dev/pmem0"          # refuse to run on another target
    # timeout_s = 600                # per run
    # on_unsupported = "skip"        # or "error": points this machine cannot run
    [sweep.adaptive]                 # optional: repeat until the CI is tight enough
    metric = "bw_gbps"
    ci_target = 0.02                 # 95 % CI half-width / mean
    max_repeats = 20

    [base]                           # parameters shared by every point
    mode = "bandwidth"
    duration_ms = 500

    [axes]                           # cartesian product, in this order (last varies fastest)
    op = ["load", "ntstore", "store+clwb"]
    access_size = "64..64K *2"       # range: START..END, then *FACTOR or +STEP (default +1)

    [[zip]]                          # zipped axis: lists of one length, walked together
    threads = [1, 2, 4]
    cpus = ["0", "0-1", "0-3"]

Every problem names the key, the value, the allowed range and the config line.
"""

from __future__ import annotations

import ast
import hashlib
import itertools
import json
import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from pmemlab import params as P
from pmemlab.errors import ConfigError

MAX_POINTS = 1_000_000
MAX_RANGE_VALUES = 100_000
SWEEP_KEYS = frozenset({"name", "description", "repeats", "filters", "target", "timeout_s", "on_unsupported", "adaptive",
                        "targets"})
ADAPTIVE_KEYS = frozenset({"metric", "ci_target", "max_repeats", "min_repeats"})
TOP_KEYS = frozenset({"sweep", "base", "axes", "zip", "scale"})
FULL_SCALE = "full"
SET_ORIGIN = "--set"  # where problems of `pmemlab sweep --set KEY=VALUE` values are reported
PMEM_PLACEHOLDER = "@PMEM@"
RANGE_RE = re.compile(r"^\s*(\S+?)\s*\.\.\s*(\S+?)\s*(?:([*+x])\s*(\S+))?\s*$")


# --------------------------------------------------------------------------
# locating keys in the TOML text (tomllib keeps no positions)
# --------------------------------------------------------------------------
_BARE_KEY = r"[A-Za-z0-9_\-]+|\"[^\"]*\"|'[^']*'"
_DOTTED_KEY = rf"(?:{_BARE_KEY})(?:\s*\.\s*(?:{_BARE_KEY}))*"


def _key_parts(text: str) -> list[str]:
    return [p.strip("\"'") for p in re.findall(_BARE_KEY, text)]


def _strip_comment(text: str) -> str:
    """The line without its `# comment` (a # inside a string stays)."""
    quote = ""
    i = 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                quote = ""
        elif c in "\"'":
            quote = c
        elif c == "#":
            return text[:i]
        i += 1
    return text


class LineIndex:
    """Maps (table, key) to the 1-based line where `key =` is written, and list items to
    their own lines (tomllib keeps no positions).

    Knows [tables], [[arrays of tables]], dotted keys (`adaptive.metric = ...` in [sweep],
    `sweep.repeats = ...` at the top), inline tables (`adaptive = { metric = ... }`) and the
    extent of a multi-line array, so an item is found on its own line.
    """

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-\"' ]+?)\s*\]\]?\s*(#.*)?$")
    _KEY = re.compile(rf"^\s*({_DOTTED_KEY})\s*=")
    _INLINE_KEY = re.compile(rf"\s*({_DOTTED_KEY})\s*=")

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.where: dict[tuple[str, str], int] = {}
        self.spans: dict[tuple[str, str], tuple[int, int]] = {}
        self.tables: dict[str, int] = {}
        table = ""
        counts: dict[str, int] = {}
        skip_until = 0
        for no, line in enumerate(self.lines, start=1):
            if no <= skip_until:
                continue  # inside a multi-line value
            m = self._HEADER.match(line)
            if m:
                name = ".".join(_key_parts(m.group(2)))
                if m.group(1) == "[[":
                    idx = counts.get(name, 0)
                    counts[name] = idx + 1
                    name = f"{name}#{idx}"
                table = name
                self.tables.setdefault(table, no)
                continue
            k = self._KEY.match(line)
            if not k:
                continue
            full = self._register(table, _key_parts(k.group(1)), no)
            end = self._value_end(no, k.end())
            self.spans.setdefault(full, (no, end))
            rest = line[k.end():].lstrip()
            if rest.startswith("{"):
                self._inline(f"{full[0]}.{full[1]}" if full[0] else full[1], rest[1:], no)
            skip_until = end

    def _register(self, table: str, parts: list[str], no: int) -> tuple[str, str]:
        """Record a (dotted) key and the tables it implies; returns its (table, key)."""
        for i in range(len(parts) - 1):
            parent = ".".join(p for p in (table, *parts[:i]) if p)
            self.where.setdefault((parent, parts[i]), no)
            self.tables.setdefault(".".join(p for p in (table, *parts[: i + 1]) if p), no)
        full = (".".join(p for p in (table, *parts[:-1]) if p), parts[-1])
        self.where.setdefault(full, no)
        return full

    def _inline(self, table: str, text: str, no: int) -> None:
        """Keys of an inline table (one line in TOML), nested ones included."""
        self.tables.setdefault(table, no)
        stack = [table]
        i, n = 0, len(text)
        expect_key = True
        while i < n and stack:
            c = text[i]
            if expect_key:
                m = self._INLINE_KEY.match(text, i)
                if m:
                    full = self._register(stack[-1], _key_parts(m.group(1)), no)
                    i = m.end()
                    expect_key = False
                    rest = text[i:].lstrip()
                    if rest.startswith("{"):
                        stack.append(f"{full[0]}.{full[1]}" if full[0] else full[1])
                        self.tables.setdefault(stack[-1], no)
                        i = n - len(rest) + 1
                        expect_key = True
                    continue
            if c in "\"'":
                close = text.find(c, i + 1)
                i = n if close < 0 else close + 1
                continue
            if c == ",":
                expect_key = True
            elif c == "}":
                stack.pop()
            i += 1

    def _value_end(self, no: int, col: int) -> int:
        """Last line of the value that starts at line `no`, column `col` (arrays may span lines)."""
        depth = 0
        started = False
        for ln in range(no, len(self.lines) + 1):
            text = self.lines[ln - 1]
            i = col if ln == no else 0
            while i < len(text):
                c = text[i]
                if c == "#":
                    break
                if c in "\"'":
                    started = True
                    triple = text.startswith(c * 3, i)
                    if triple:  # multi-line strings: find the closing triple quote
                        close = text.find(c * 3, i + 3)
                        if close < 0:
                            return self._string_end(ln, c * 3)
                        i = close + 3
                        continue
                    close = i + 1
                    while close < len(text) and text[close] != c:
                        close += 2 if c == '"' and text[close] == "\\" else 1
                    i = close + 1
                    continue
                if c in "[{":
                    depth += 1
                    started = True
                elif c in "]}":
                    depth -= 1
                elif not c.isspace():
                    started = True
                i += 1
            if started and depth <= 0:
                return ln
        return no

    def _string_end(self, no: int, quote: str) -> int:
        for ln in range(no + 1, len(self.lines) + 1):
            if quote in self.lines[ln - 1]:
                return ln
        return no

    def alias(self, prefix: str) -> None:
        """Tables under `prefix` (a scale's overlay, e.g. "scale.quick.") answer for the table
        they replace ("scale.quick.base" for "base"), so problems name the overlay's lines."""
        for (table, key), no in list(self.where.items()):
            if table.startswith(prefix):
                self.where[(table[len(prefix):], key)] = no
        for (table, key), span in list(self.spans.items()):
            if table.startswith(prefix):
                self.spans[(table[len(prefix):], key)] = span
        for table, no in list(self.tables.items()):
            if table.startswith(prefix):
                self.tables[table[len(prefix):]] = no

    def line(self, table: str, key: str | None = None) -> int | None:
        if key is None:
            return self.tables.get(table)
        return self.where.get((table, key)) or self.tables.get(table)

    def item_line(self, table: str, key: str, value: Any, after: int | None = None) -> int | None:
        """The line of one item of the value of `key` (a multi-line list), else the key's line.

        A string item is matched with its quotes, so an item that is part of another is not
        taken for it; `after` starts the search there (items in order)."""
        first = self.line(table, key)
        span = self.spans.get((table, key))
        if span is None or isinstance(value, (list, dict)):
            return first
        lo, hi = span
        if isinstance(value, str):
            pats = [re.compile(re.escape(q + value + q)) for q in ('"', "'")]
        elif isinstance(value, (bool, int, float)):
            text = str(value).lower() if isinstance(value, bool) else str(value)
            pats = [re.compile(rf"(?<![\w.\-+]){re.escape(text)}(?![\w.])")]
        else:
            return first
        for ln in range(max(lo, after or lo), hi + 1):
            text = self.lines[ln - 1]
            if ln == lo:
                eq = text.find("=")
                text = " " * (eq + 1) + text[eq + 1:]
            if any(p.search(_strip_comment(text)) for p in pats):
                return ln
        return first


@dataclass
class Axis:
    """One axis of the product: a single key, or a zip group of keys."""

    keys: tuple[str, ...]
    values: list[tuple[Any, ...]]
    table: str  # "axes" or "zip#N"


@dataclass
class Adaptive:
    metric: str
    ci_target: float
    max_repeats: int
    min_repeats: int


@dataclass
class Point:
    index: int
    params: dict[str, Any]  # complete, canonical
    varied: dict[str, Any]  # the axis values of this point
    key: str  # stable identity for resume: hash of the complete parameters
    skip_reason: str = ""  # non-empty: this machine cannot run it


@dataclass
class SweepConfig:
    path: Path | None
    text: str
    data: dict[str, Any]
    name: str
    description: str = ""
    repeats: int = 1
    adaptive: Adaptive | None = None
    filters: list[tuple[str, int | None]] = field(default_factory=list)
    target: str | None = None
    timeout_s: float = 600.0
    on_unsupported: str = "skip"
    base: dict[str, Any] = field(default_factory=dict)
    axes: list[Axis] = field(default_factory=list)
    lines: LineIndex | None = None
    source: str = "<config>"
    overrides: dict[str, Any] = field(default_factory=dict)  # --set KEY=VALUE (raw), over [base] and axes
    pinned: dict[str, str] = field(default_factory=dict)  # --set keys that replaced an axis: key -> "axes" | "zip"
    scale: str = FULL_SCALE  # the [scale.NAME] overlay applied ("full": the config as written)
    scales: tuple[str, ...] = ()  # the overlays the config defines
    targets: dict[str, str] = field(default_factory=dict)  # label -> insmod arguments

    @property
    def axis_keys(self) -> list[str]:
        return [k for ax in self.axes for k in ax.keys]


class Problems:
    """Collects config problems with their line; raises them together."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.items: list[str] = []
        self._seen: set[str] = set()

    def add(self, line: int | None, text: str, where: str | None = None) -> None:
        """A problem at `line` of the config, or at `where` (e.g. "--set") when it came from elsewhere."""
        where = where or (f"{self.source}:{line}" if line else self.source)
        msg = f"{where}: {text}"
        if msg not in self._seen:
            self._seen.add(msg)
            self.items.append(msg)

    def add_problem(self, line: int | None, table: str, prob: P.Problem, where: str | None = None) -> None:
        prefix = f"{table}." if table else ""
        self.add(line, f"{prefix}{prob.key} = {_show(prob.value)}: {prob.reason} (allowed: {prob.allowed})", where)

    def raise_if_any(self) -> None:
        if not self.items:
            return
        shown = self.items[:25]
        more = len(self.items) - len(shown)
        text = "\n".join(shown) + (f"\n... and {more} more" if more > 0 else "")
        n = len(self.items)
        raise ConfigError(
            f"invalid config ({n} problem{'s' if n != 1 else ''}):\n{text}",
            "correct the config; nothing was sent to the module",
        )


def _show(value: Any) -> str:
    return json.dumps(value) if isinstance(value, (str, bool)) else repr(value)  # TOML spelling


# --------------------------------------------------------------------------
# value ranges: "64..65536 *2", "1..8", "0..100 +10", "4K..1G *4"
# --------------------------------------------------------------------------
def expand_range(text: str, kind: str) -> list[int]:
    m = RANGE_RE.match(text)
    if not m:
        raise ValueError(f"not a range: {text!r}")
    conv = P.parse_size if kind == "size" else P.parse_int
    start, end = conv(m.group(1)), conv(m.group(2))
    op = m.group(3) or "+"
    step_text = m.group(4) or "1"
    step = conv(step_text) if op == "+" else P.parse_int(step_text)
    if end < start:
        raise ValueError(f"range {text!r} ends before it starts")
    values: list[int] = []
    v = start
    if op in ("*", "x"):
        if step < 2:
            raise ValueError(f"range {text!r}: factor must be >= 2")
        if start <= 0:
            raise ValueError(f"range {text!r}: a geometric range must start above 0")
        while v <= end:
            values.append(v)
            v *= step
            if len(values) > MAX_RANGE_VALUES:
                break
    else:
        if step < 1:
            raise ValueError(f"range {text!r}: step must be >= 1")
        count = (end - start) // step + 1
        if count > MAX_RANGE_VALUES:
            raise ValueError(f"range {text!r} has {count} values (at most {MAX_RANGE_VALUES})")
        values = list(range(start, end + 1, step))
    if len(values) > MAX_RANGE_VALUES:
        raise ValueError(f"range {text!r} has more than {MAX_RANGE_VALUES} values")
    return values


def axis_values(key: str, raw: Any) -> list[Any]:
    """An axis value in the config -> list of raw values (ranges expanded)."""
    items = raw if isinstance(raw, list) else [raw]
    out: list[Any] = []
    kind = P.PARAMS[key].kind if key in P.PARAMS else ""
    for item in items:
        if isinstance(item, str) and ".." in item and kind in ("int", "size"):
            out.extend(expand_range(item, kind))
        else:
            out.append(item)
    return out


# --------------------------------------------------------------------------
# filters: a safe subset of Python expressions over parameter names
# --------------------------------------------------------------------------
_ALLOWED_NODES = (
    ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd,
    ast.Compare, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
    ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.Name, ast.Load, ast.Constant, ast.List, ast.Tuple,
)


def compile_filter(expr: str) -> ast.Expression:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise ValueError(f"syntax error at column {exc.offset}") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise ValueError(f"{type(node).__name__} is not allowed (use comparisons, and/or/not, arithmetic)")
        if isinstance(node, ast.Name) and node.id not in P.PARAMS:
            raise ValueError(f"unknown name {node.id!r}{P.suggest(node.id)}")
    return tree


def eval_filter(tree: ast.AST, env: Mapping[str, Any]) -> Any:
    def ev(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, (ast.List, ast.Tuple)):
            return [ev(e) for e in node.elts]
        if isinstance(node, ast.BoolOp):
            if isinstance(node.op, ast.And):
                return all(ev(v) for v in node.values)
            return any(ev(v) for v in node.values)
        if isinstance(node, ast.UnaryOp):
            v = ev(node.operand)
            if isinstance(node.op, ast.Not):
                return not v
            return -v if isinstance(node.op, ast.USub) else +v
        if isinstance(node, ast.BinOp):
            a, b = ev(node.left), ev(node.right)
            ops = {ast.Add: lambda: a + b, ast.Sub: lambda: a - b, ast.Mult: lambda: a * b,
                   ast.Div: lambda: a / b, ast.FloorDiv: lambda: a // b, ast.Mod: lambda: a % b,
                   ast.Pow: lambda: a ** b}
            return ops[type(node.op)]()
        if isinstance(node, ast.Compare):
            left = ev(node.left)
            for op, comp in zip(node.ops, node.comparators):
                right = ev(comp)
                res = {ast.Eq: lambda: left == right, ast.NotEq: lambda: left != right,
                       ast.Lt: lambda: left < right, ast.LtE: lambda: left <= right,
                       ast.Gt: lambda: left > right, ast.GtE: lambda: left >= right,
                       ast.In: lambda: left in right, ast.NotIn: lambda: left not in right}[type(op)]()
                if not res:
                    return False
                left = right
            return True
        raise ValueError(f"cannot evaluate {type(node).__name__}")  # pragma: no cover

    return ev(tree)


# --------------------------------------------------------------------------
# loading
# --------------------------------------------------------------------------
def load_config(path: str | Path, overrides: Mapping[str, Any] | None = None,
                scale: str | None = None) -> SweepConfig:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror}", "check the path") from None
    return parse_config(text, source=str(p), path=p, overrides=overrides, scale=scale)


def parse_config(text: str, source: str = "<config>", path: Path | None = None,
                 overrides: Mapping[str, Any] | None = None, scale: str | None = None) -> SweepConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}", "fix the TOML syntax") from None
    lines = LineIndex(text)
    scales = _scale_names(data, lines, source)
    applied = _chosen_scale(scale, scales, source)
    if applied != FULL_SCALE:
        data = apply_scale(data, applied)
        lines.alias(f"scale.{applied}.")
    data.pop("scale", None)
    probs = Problems(source)
    name = path.stem if path else "sweep"
    cfg = SweepConfig(path=path, text=text, data=data, name=name, lines=lines, source=source,
                      scale=applied, scales=scales)

    for key in data:
        if key not in TOP_KEYS:
            probs.add(lines.line("", key) or lines.line(key),
                      f"unknown section or key {key!r} (allowed: [sweep], [base], [axes], [[zip]])")

    sweep = data.get("sweep", {})
    if not isinstance(sweep, dict):
        probs.add(lines.line("", "sweep"), "sweep must be a table [sweep]")
        sweep = {}
    _parse_sweep_section(cfg, sweep, lines, probs)
    if applied != FULL_SCALE:
        cfg.description = f"{cfg.description} [scale: {applied}]".strip()

    base = data.get("base", {})
    if not isinstance(base, dict):
        probs.add(lines.line("", "base"), "base must be a table [base]")
        base = {}
    base = dict(base)
    cfg.overrides = dict(overrides or {})
    for key, value in cfg.overrides.items():
        base[key] = value
    for key, value in base.items():
        line = lines.line("base", key)
        # a --set value is reported as such, not at the config's line for the key
        table, where = ("", SET_ORIGIN) if key in cfg.overrides else ("base", None)
        if key not in P.PARAMS:
            probs.add_problem(line, table, P.unknown_key_problem(key, value), where)
            continue
        if isinstance(value, (list, dict)) and P.PARAMS[key].kind not in ("ops", "cpus"):
            probs.add(line, f"base.{key} = {_show(value)}: [base] takes one value; put lists under [axes]")
            continue
        try:
            cfg.base[key] = P.canonical(key, value)
        except P.ConfigValueError as exc:
            probs.add_problem(line, table, exc.problem, where)

    seen: dict[str, str] = {}
    axes = data.get("axes", {})
    if not isinstance(axes, dict):
        probs.add(lines.line("", "axes"), "axes must be a table [axes]")
        axes = {}
    # --set KEY=VALUE on a varied key pins it: the key leaves [axes] or its [[zip]] (whose
    # other keys still vary together) and takes the one value, as a scale's [base] does.
    for key in cfg.overrides:
        if key in axes:
            cfg.pinned[key] = "axes"
    axes = {k: v for k, v in axes.items() if k not in cfg.overrides}
    for key, raw in axes.items():
        ax = _parse_axis(("axes",), {key: raw}, "axes", lines, probs, seen, cfg.base)
        if ax:
            cfg.axes.append(ax)
    zips = data.get("zip", [])
    if isinstance(zips, dict):
        zips = [zips]
    if not isinstance(zips, list):
        probs.add(lines.line("", "zip"), "zip must be an array of tables [[zip]]")
        zips = []
    for i, group in enumerate(zips):
        table = f"zip#{i}"
        if not isinstance(group, dict) or not group:
            probs.add(lines.line(table), f"[[zip]] #{i + 1} must hold one or more keys = lists")
            continue
        pinned = tuple(k for k in group if k in cfg.overrides)
        if pinned:
            cfg.pinned.update({k: "zip" for k in pinned})
            group = {k: v for k, v in group.items() if k not in cfg.overrides}
            if not group:
                continue
        ax = _parse_axis(("zip",), group, table, lines, probs, seen, cfg.base, pinned)
        if ax:
            cfg.axes.append(ax)

    probs.raise_if_any()
    return cfg


def _parse_sweep_section(cfg: SweepConfig, sweep: dict[str, Any], lines: LineIndex, probs: Problems) -> None:
    for key in sweep:
        if key not in SWEEP_KEYS:
            probs.add(lines.line("sweep", key), f"sweep.{key}: unknown key (allowed: {', '.join(sorted(SWEEP_KEYS))})")
    if "name" in sweep:
        if isinstance(sweep["name"], str) and re.fullmatch(r"[A-Za-z0-9_.\-]+", sweep["name"]):
            cfg.name = sweep["name"]
        else:
            probs.add(lines.line("sweep", "name"), f"sweep.name = {_show(sweep['name'])}: letters, digits, _ . - only")
    cfg.description = str(sweep.get("description", ""))
    if "targets" in sweep:
        _parse_targets(cfg, sweep["targets"], lines, probs)
    if "repeats" in sweep:
        r = sweep["repeats"]
        if isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= 10000:
            cfg.repeats = r
        else:
            probs.add(lines.line("sweep", "repeats"), f"sweep.repeats = {_show(r)}: not an integer in 1..10000")
    if "target" in sweep:
        t = sweep["target"]
        if isinstance(t, str) and (t == "dram" or t.startswith("/dev/")):
            cfg.target = t
        else:
            probs.add(lines.line("sweep", "target"), f"sweep.target = {_show(t)}: must be /dev/pmemN or dram")
    if "timeout_s" in sweep:
        t = sweep["timeout_s"]
        if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
            cfg.timeout_s = float(t)
        else:
            probs.add(lines.line("sweep", "timeout_s"), f"sweep.timeout_s = {_show(t)}: must be a number > 0")
    if "on_unsupported" in sweep:
        v = sweep["on_unsupported"]
        if v in ("skip", "error"):
            cfg.on_unsupported = v
        else:
            probs.add(lines.line("sweep", "on_unsupported"), f"sweep.on_unsupported = {_show(v)}: one of skip, error")
    filters = sweep.get("filters", [])
    if isinstance(filters, str):
        filters = [filters]
    if not isinstance(filters, list):
        probs.add(lines.line("sweep", "filters"), "sweep.filters must be a list of expressions")
        filters = []
    fline = lines.line("sweep", "filters")
    after = fline
    for expr in filters:
        line = lines.item_line("sweep", "filters", expr, after)
        after = line or after
        if not isinstance(expr, str):
            probs.add(line, f"sweep.filters: {_show(expr)} is not a string expression")
            continue
        try:
            compile_filter(expr)
            cfg.filters.append((expr, line))
        except ValueError as exc:
            probs.add(line, f"sweep.filters: {_show(expr)}: {exc}")
    if "adaptive" in sweep:
        _parse_adaptive(cfg, sweep["adaptive"], lines, probs)


def _scale_names(data: Mapping[str, Any], lines: LineIndex, source: str) -> tuple[str, ...]:
    scales = data.get("scale", {})
    if not isinstance(scales, dict) or not all(isinstance(v, dict) for v in scales.values()):
        raise ConfigError(f"{source}:{lines.line('scale') or lines.line('', 'scale') or ''}: "
                          "scale must hold tables [scale.NAME.base], [scale.NAME.axes], ...",
                          "see configs/README (Scale)")
    for name, overlay in scales.items():
        bad = [k for k in overlay if k not in ("sweep", "base", "axes", "zip")]
        if name == FULL_SCALE or bad:
            what = "'full' is the config as written" if name == FULL_SCALE else f"unknown keys {bad}"
            raise ConfigError(f"{source}:{lines.line(f'scale.{name}') or ''}: scale.{name}: {what}",
                              "a scale holds sweep, base, axes and zip tables only")
    return tuple(scales)


def _chosen_scale(scale: str | None, scales: tuple[str, ...], source: str) -> str:
    if scale in (None, "", FULL_SCALE):
        return FULL_SCALE
    if scale in scales:
        return scale
    if not scales:
        return FULL_SCALE  # a config without scales is run as written at every scale
    raise ConfigError(f"{source}: no scale {scale!r} (this config has: {', '.join((FULL_SCALE, *scales))})",
                      "choose one of them")


def apply_scale(data: Mapping[str, Any], scale: str) -> dict[str, Any]:
    """The config with [scale.NAME] laid over it.

    sweep/base/axes keys replace the config's keys one by one; a key set in the overlay's
    [base] leaves the axes, a key of the overlay's [axes] leaves [base] and the zips; an
    overlay [[zip]] list replaces every [[zip]] of the config.
    """
    overlay = data["scale"][scale]
    out: dict[str, Any] = {k: v for k, v in data.items() if k != "scale"}
    sweep = dict(out.get("sweep", {}))
    sweep.update(overlay.get("sweep", {}))
    base = dict(out.get("base", {}))
    axes = dict(out.get("axes", {}))
    zips = [dict(z) for z in out.get("zip", [])] if isinstance(out.get("zip", []), list) else out.get("zip")
    if "zip" in overlay:
        zips = [dict(z) for z in overlay["zip"]]
    moved = set(overlay.get("base", {})) | set(overlay.get("axes", {}))
    zip_keys = {k for z in zips or [] if isinstance(z, dict) for k in z}
    for key in moved | zip_keys:
        if key not in overlay.get("base", {}):
            base.pop(key, None)
        if key not in overlay.get("axes", {}):
            axes.pop(key, None)
    if "zip" not in overlay and isinstance(zips, list):
        zips = [{k: v for k, v in z.items() if k not in moved} for z in zips]
        zips = [z for z in zips if z]
    base.update(overlay.get("base", {}))
    axes.update(overlay.get("axes", {}))
    out["sweep"], out["base"], out["axes"] = sweep, base, axes
    out["zip"] = zips if zips is not None else []
    if not out["zip"]:
        out.pop("zip")
    return out


def _parse_targets(cfg: SweepConfig, targets: Any, lines: LineIndex, probs: Problems) -> None:
    """[sweep.targets]: label = "insmod arguments" per module load the experiment compares."""
    line = lines.line("sweep.targets") or lines.line("sweep", "targets")
    if not isinstance(targets, dict) or not targets:
        probs.add(line, 'sweep.targets must be a table of label = "insmod arguments" (e.g. dram-4k = '
                  '"target=dram dram_pages=4k")')
        return
    for label, args in targets.items():
        where = lines.line("sweep.targets", label) or line
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", label):
            probs.add(where, f"sweep.targets.{label}: a label takes letters, digits, _ . - only")
        elif not isinstance(args, str) or not re.search(r"(^|\s)target=\S", args):
            probs.add(where, f"sweep.targets.{label} = {_show(args)}: must hold target=/dev/pmemN, "
                      f"target={PMEM_PLACEHOLDER} or target=dram")
        else:
            cfg.targets[label] = args


PMEM_DRAM_PLACEHOLDER = "@PMEM_DRAM@"


def target_loads(cfg: SweepConfig, pmem: str, pmem_dram: str | None = None) -> list[tuple[str, str]]:
    """(label, insmod arguments) of every module load the config compares; @PMEM@ -> `pmem`,
    @PMEM_DRAM@ (the DRAM-emulated namespace) -> `pmem_dram` when given, else left for the caller."""
    targets = cfg.targets or {"pmem": f"target={PMEM_PLACEHOLDER}"}
    out = []
    for label, args in targets.items():
        args = args.replace(PMEM_PLACEHOLDER, pmem)
        if pmem_dram:
            args = args.replace(PMEM_DRAM_PLACEHOLDER, pmem_dram)
        out.append((label, args))
    return out


def adaptive_metrics() -> tuple[str, ...]:
    """What [sweep.adaptive] metric may name: the numeric result columns of an aggregate row
    the controller knows (module fields and Optane media counters), not ids such as cpu."""
    from pmemlab import ipmctl
    from pmemlab.results import KNOWN_RESULT_COLUMNS

    return tuple(c for c in (*KNOWN_RESULT_COLUMNS, *ipmctl.COLUMNS) if c != "cpu" and not c.startswith("thread"))


def _parse_adaptive(cfg: SweepConfig, ad: Any, lines: LineIndex, probs: Problems) -> None:
    table = "sweep.adaptive"
    if not isinstance(ad, dict):
        probs.add(lines.line("sweep", "adaptive"), "sweep.adaptive must be a table")
        return
    for key in ad:
        if key not in ADAPTIVE_KEYS:
            probs.add(lines.line(table, key), f"{table}.{key}: unknown key (allowed: {', '.join(sorted(ADAPTIVE_KEYS))})")
    metric = ad.get("metric", "bw_gbps")
    if metric not in adaptive_metrics():
        probs.add(lines.line(table, "metric"), f"{table}.metric = {_show(metric)}: not a numeric result column "
                  f"(allowed: {', '.join(adaptive_metrics())})")
    target = ad.get("ci_target", 0.02)
    if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target < 1:
        probs.add(lines.line(table, "ci_target"), f"{table}.ci_target = {_show(target)}: relative half-width, 0 < x < 1 (e.g. 0.02)")
        target = 0.02
    min_r = ad.get("min_repeats", max(cfg.repeats, 2))
    max_r = ad.get("max_repeats", 20)
    for key, val in (("min_repeats", min_r), ("max_repeats", max_r)):
        if not isinstance(val, int) or isinstance(val, bool) or not 2 <= val <= 10000:
            probs.add(lines.line(table, key), f"{table}.{key} = {_show(val)}: an integer in 2..10000")
            return
    if max_r < min_r:
        probs.add(lines.line(table, "max_repeats"), f"{table}.max_repeats = {max_r}: smaller than min_repeats {min_r}")
        return
    cfg.adaptive = Adaptive(metric=str(metric), ci_target=float(target), max_repeats=max_r, min_repeats=min_r)


def _parse_axis(kind: tuple[str, ...], group: Mapping[str, Any], table: str, lines: LineIndex,
                probs: Problems, seen: dict[str, str], base: Mapping[str, Any],
                pinned: tuple[str, ...] = ()) -> Axis | None:
    keys: list[str] = []
    columns: list[list[Any]] = []
    ok = True
    for key, raw in group.items():
        line = lines.line(table, key)
        if key not in P.PARAMS:
            probs.add_problem(line, table.split("#")[0], P.unknown_key_problem(key, raw))
            ok = False
            continue
        if key in seen:
            probs.add(line, f"{key}: already an axis in [{seen[key]}]; a parameter can vary in one place only")
            ok = False
            continue
        if key in base:
            probs.add(line, f"{key}: set in [base] and varied here; keep it in one place")
            ok = False
            continue
        seen[key] = table.split("#")[0]
        try:
            raw_values = axis_values(key, raw)
        except ValueError as exc:
            p = P.PARAMS[key]
            probs.add(line, f"{table.split('#')[0]}.{key} = {_show(raw)}: {exc} (allowed: {p.allowed()}; "
                      "ranges: START..END *FACTOR or +STEP)")
            ok = False
            continue
        if not raw_values:
            probs.add(line, f"{key}: an empty list of values")
            ok = False
            continue
        values: list[Any] = []
        for rv in raw_values:
            try:
                values.append(P.canonical(key, rv))
            except P.ConfigValueError as exc:
                probs.add_problem(lines.item_line(table, key, rv), table.split("#")[0], exc.problem)
                ok = False
        dupes = {v for v, n in Counter(values).items() if n > 1}
        if dupes and kind == ("axes",):
            probs.add(line, f"{key}: repeated values {sorted(map(str, dupes))}")
            ok = False
        keys.append(key)
        columns.append(values)
    if not ok or not keys:
        return None
    if kind == ("zip",):
        lengths = {len(c) for c in columns}
        if len(lengths) != 1:
            desc = ", ".join(f"{k} has {len(c)}" for k, c in zip(keys, columns))
            probs.add(lines.line(table), f"[[zip]] lists must have one length: {desc}")
            return None
    rows = list(zip(*columns))
    first: dict[tuple[Any, ...], int] = {}
    for i, row in enumerate(rows):
        if row in first:
            same = " ".join(f"{k}={v}" for k, v in zip(keys, row))
            after = f" once --set took out {', '.join(pinned)}" if pinned else ""
            probs.add(lines.line(table), f"[[zip]] rows {first[row] + 1} and {i + 1} are the same ({same}){after}: "
                      "every row must differ, or the point runs twice")
            ok = False
        else:
            first[row] = i
    if not ok:
        return None
    return Axis(keys=tuple(keys), values=rows, table=table)


# --------------------------------------------------------------------------
# expansion + validation of every point
# --------------------------------------------------------------------------
def point_key(params: Mapping[str, Any]) -> str:
    blob = json.dumps({k: params[k] for k in sorted(params)}, sort_keys=True, default=str)
    return hashlib.sha1(blob.encode()).hexdigest()[:12]


def count_points(cfg: SweepConfig) -> int:
    return math.prod(len(ax.values) for ax in cfg.axes) if cfg.axes else 1


def expand(cfg: SweepConfig, facts: P.TargetFacts | None = None,
           discovered: Mapping[str, Any] | None = None) -> list[Point]:
    """All points, filtered and validated. Raises ConfigError listing every problem.

    `discovered` holds defaults found on this machine (interleave geometry from
    ndctl); they apply where neither [base] nor an axis sets the key.
    """
    probs = Problems(cfg.source)
    lines = cfg.lines or LineIndex(cfg.text)
    total = count_points(cfg)
    if total > MAX_POINTS:
        sizes = " x ".join(f"{'+'.join(ax.keys)} {len(ax.values)}" for ax in cfg.axes)
        first = cfg.axes[0] if cfg.axes else None
        probs.add(lines.line(first.table, first.keys[0]) if first else None,
                  f"the axes give {total} points ({sizes}; at most {MAX_POINTS}): split the sweep or use coarser ranges")
        probs.raise_if_any()
    base = P.defaults()
    for key, value in (discovered or {}).items():
        if key in P.PARAMS and key not in cfg.base and key not in cfg.axis_keys:
            base[key] = P.canonical(key, value)
    base.update(cfg.base)
    filters = [(expr, line, compile_filter(expr)) for expr, line in cfg.filters]

    points: list[Point] = []
    unsupported: list[str] = []
    combos: Iterable[tuple[tuple[Any, ...], ...]] = itertools.product(*(ax.values for ax in cfg.axes))
    for combo in combos:
        params = dict(base)
        varied: dict[str, Any] = {}
        for ax, vals in zip(cfg.axes, combo):
            for k, v in zip(ax.keys, vals):
                params[k] = v
                varied[k] = v
        keep = True
        for expr, line, tree in filters:
            try:
                if not eval_filter(tree, params):
                    keep = False
                    break
            except Exception as exc:  # noqa: BLE001 - any evaluation error is a config error
                probs.add(line, f"sweep.filters: {_show(expr)} fails for {_fmt_varied(varied)}: {exc}")
                keep = False
                break
        if not keep:
            continue
        skip = ""
        for prob in P.check_point(params, facts):
            table, line = _origin(cfg, lines, prob.key, prob.value)
            if prob.kind == "unsupported" and cfg.on_unsupported == "skip":
                skip = skip or f"{prob.key}: {prob.reason}"
                continue
            at = f" (at {_fmt_varied(varied)})" if varied else ""
            if table == SET_ORIGIN:
                probs.add(None, f"{prob.key} = {_show(prob.value)}: {prob.reason}{at} (allowed: {prob.allowed})",
                          SET_ORIGIN)
            else:
                probs.add(line, f"{table}.{prob.key} = {_show(prob.value)}: {prob.reason}{at} (allowed: {prob.allowed})")
        if skip:
            unsupported.append(skip)
        points.append(Point(index=len(points), params=params, varied=varied, key=point_key(params), skip_reason=skip))
    probs.raise_if_any()
    if not points:
        raise ConfigError("the filters leave no point to run", "loosen sweep.filters")
    return points


def _origin(cfg: SweepConfig, lines: LineIndex, key: str, value: Any = None) -> tuple[str, int | None]:
    """Where a point's value of `key` comes from: --set, the axis item's line, [base], a default."""
    if key in cfg.overrides:
        return SET_ORIGIN, None
    for ax in cfg.axes:
        if key in ax.keys:
            return ax.table.split("#")[0], lines.item_line(ax.table, key, value)
    if key in cfg.base:
        return "base", lines.line("base", key)
    return "default", lines.line("base") or lines.line("sweep")


def _fmt_varied(varied: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={v}" for k, v in varied.items())
