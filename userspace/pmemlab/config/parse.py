"""Loading a config: TOML, the chosen scale, --set, [sweep], [base], [axes], [[zip]]."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Mapping

from pmemlab import params as P
from pmemlab.config.adaptive import parse_adaptive
from pmemlab.config.axes import parse_axis
from pmemlab.config.filters import compile_filter
from pmemlab.config.lines import LineIndex
from pmemlab.config.model import FULL_SCALE, SET_ORIGIN, SweepConfig
from pmemlab.config.problems import Problems, show
from pmemlab.config.scales import apply_scale, chosen_scale, scale_names
from pmemlab.errors import ConfigError

SWEEP_KEYS = frozenset({"name", "description", "repeats", "filters", "target", "timeout_s", "on_unsupported", "adaptive",
                        "targets"})
TOP_KEYS = frozenset({"sweep", "base", "axes", "zip", "scale"})


def load_config(path: str | Path, overrides: Mapping[str, Any] | None = None,
                scale: str | None = None) -> SweepConfig:
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read config {p}: {exc.strerror}", "check the path") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(f"{p}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column})",
                          "save the config as UTF-8 (TOML configs must be)") from None
    return parse_config(text, source=str(p), path=p, overrides=overrides, scale=scale)


def parse_config(text: str, source: str = "<config>", path: Path | None = None,
                 overrides: Mapping[str, Any] | None = None, scale: str | None = None) -> SweepConfig:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{source}: not valid TOML: {exc}", "fix the TOML syntax") from None
    lines = LineIndex(text)
    scales = scale_names(data, lines, source)
    applied = chosen_scale(scale, scales, source)
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
    parse_base(cfg, base, lines, probs)

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
        ax = parse_axis(("axes",), {key: raw}, "axes", lines, probs, seen, cfg.base)
        if ax:
            cfg.axes.append(ax)
    zips = _listed(data.get("zip", []), dict, probs, lines.line("", "zip"), "zip must be an array of tables [[zip]]")
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
        ax = parse_axis(("zip",), group, table, lines, probs, seen, cfg.base, pinned)
        if ax:
            cfg.axes.append(ax)

    probs.raise_if_any()
    return cfg


def parse_base(cfg: SweepConfig, base: Mapping[str, Any], lines: LineIndex, probs: Problems) -> None:
    """[base] into cfg.base, every value canonical (a --set value, in cfg.overrides, is reported as
    such, not at the config's line for the key)."""
    for key, value in base.items():
        line = lines.line("base", key)
        table, where = ("", SET_ORIGIN) if key in cfg.overrides else ("base", None)
        if key not in P.PARAMS:
            probs.add_problem(line, table, P.unknown_key_problem(key, value), where)
            continue
        if isinstance(value, (list, dict)) and P.PARAMS[key].kind not in ("ops", "cpus"):
            probs.add(line, f"base.{key} = {show(value)}: [base] takes one value; put lists under [axes]")
            continue
        try:
            cfg.base[key] = P.canonical(key, value)
        except P.ConfigValueError as exc:
            probs.add_problem(line, table, exc.problem, where)


def _parse_targets(cfg: SweepConfig, targets: Any, lines: LineIndex, probs: Problems) -> None:
    """[sweep.targets]: label = "load" per target the experiment compares (pmemlab.targets reads them)."""
    line = lines.line("sweep.targets") or lines.line("sweep", "targets")
    if not isinstance(targets, dict) or not targets:
        probs.add(line, 'sweep.targets must be a table of label = "load" (e.g. dram-4k = "target=dram dram_pages=4k")')
        return
    for label, args in targets.items():
        where = lines.line("sweep.targets", label) or line
        if not re.fullmatch(r"[A-Za-z0-9_.\-]+", label):
            probs.add(where, f"sweep.targets.{label}: a label takes letters, digits, _ . - only")
        elif not isinstance(args, str) or not re.search(r"(^|\s)target=\S", args):
            probs.add(where, f"sweep.targets.{label} = {show(args)}: must hold target=/dev/pmemN, target=@PMEM@ "
                      "or target=dram")
        else:
            cfg.targets[label] = args


def _parse_sweep_section(cfg: SweepConfig, sweep: dict[str, Any], lines: LineIndex, probs: Problems) -> None:
    for key in sweep:
        if key not in SWEEP_KEYS:
            probs.add(lines.line("sweep", key), f"sweep.{key}: unknown key (allowed: {', '.join(sorted(SWEEP_KEYS))})")
    if "name" in sweep:
        if isinstance(sweep["name"], str) and re.fullmatch(r"[A-Za-z0-9_.\-]+", sweep["name"]):
            cfg.name = sweep["name"]
        else:
            probs.add(lines.line("sweep", "name"), f"sweep.name = {show(sweep['name'])}: letters, digits, _ . - only")
    cfg.description = str(sweep.get("description", ""))
    if "targets" in sweep:
        _parse_targets(cfg, sweep["targets"], lines, probs)
    if "repeats" in sweep:
        r = sweep["repeats"]
        if isinstance(r, int) and not isinstance(r, bool) and 1 <= r <= 10000:
            cfg.repeats = r
        else:
            probs.add(lines.line("sweep", "repeats"), f"sweep.repeats = {show(r)}: not an integer in 1..10000")
    if "target" in sweep:
        t = sweep["target"]
        if isinstance(t, str) and (t == "dram" or t.startswith("/dev/")):
            cfg.target = t
        else:
            probs.add(lines.line("sweep", "target"), f"sweep.target = {show(t)}: must be /dev/pmemN or dram")
    if "timeout_s" in sweep:
        t = sweep["timeout_s"]
        if isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0:
            cfg.timeout_s = float(t)
        else:
            probs.add(lines.line("sweep", "timeout_s"), f"sweep.timeout_s = {show(t)}: must be a number > 0")
    if "on_unsupported" in sweep:
        v = sweep["on_unsupported"]
        if v in ("skip", "error"):
            cfg.on_unsupported = v
        else:
            probs.add(lines.line("sweep", "on_unsupported"), f"sweep.on_unsupported = {show(v)}: one of skip, error")
    filters = _listed(sweep.get("filters", []), str, probs, lines.line("sweep", "filters"),
                      "sweep.filters must be a list of expressions")
    fline = lines.line("sweep", "filters")
    after = fline
    for expr in filters:
        line = lines.item_line("sweep", "filters", expr, after)
        after = line or after
        if not isinstance(expr, str):
            probs.add(line, f"sweep.filters: {show(expr)} is not a string expression")
            continue
        try:
            compile_filter(expr)
            cfg.filters.append((expr, line))
        except ValueError as exc:
            probs.add(line, f"sweep.filters: {show(expr)}: {exc}")
    if "adaptive" in sweep:
        parse_adaptive(cfg, sweep["adaptive"], lines, probs)


def _listed(value: Any, one: type, probs: Problems, line: int | None, problem: str) -> list[Any]:
    """A list as it is, a single `one` as a list of it; anything else is `problem` (at `line`) and
    no items."""
    if isinstance(value, one):
        return [value]
    if isinstance(value, list):
        return value
    probs.add(line, problem)
    return []
