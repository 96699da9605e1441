"""Expansion: every point of the product, filtered and validated against the target."""

from __future__ import annotations

import errno
import hashlib
import itertools
import json
import math
from typing import Any, Iterable, Mapping, Sequence

from pmemlab import params as P
from pmemlab.config.filters import compile_filter, eval_filter
from pmemlab.config.lines import LineIndex
from pmemlab.config.model import SET_ORIGIN, Point, SweepConfig
from pmemlab.config.problems import Problems, show
from pmemlab.errors import ConfigError

MAX_POINTS = 1_000_000


# Parameters after this one came into the table (core/params.def, where new ones go at the
# end) after sweeps had recorded point keys: they count in a key only where they differ from their
# default, so adding a parameter leaves the key of every existing point, and its CSV's resume, as is.
KEYED_THROUGH = "segment_ms"


def point_key(params: Mapping[str, Any]) -> str:
    later = set(P.PARAM_NAMES[P.PARAM_NAMES.index(KEYED_THROUGH) + 1:])
    keyed = {k: v for k, v in params.items() if k not in later or v != P.PARAMS[k].default}
    blob = json.dumps({k: keyed[k] for k in sorted(keyed)}, sort_keys=True, default=str)
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
                probs.add(line, f"sweep.filters: {show(expr)} fails for {_fmt_varied(varied)}: {exc}")
                keep = False
                break
        if not keep:
            continue
        skip, skip_errno = "", 0
        for prob in P.check_point(params, facts):
            table, line = _origin(cfg, lines, prob.key, prob.value)
            if prob.kind == "unsupported" and cfg.on_unsupported == "skip":
                if not skip:
                    skip, skip_errno = f"{prob.key}: {prob.reason}", prob.errno
                continue
            at = f" (at {_fmt_varied(varied)})" if varied else ""
            if table == SET_ORIGIN:
                probs.add(None, f"{prob.key} = {show(prob.value)}: {prob.reason}{at}{prob.allowed_note}",
                          SET_ORIGIN)
            else:
                probs.add(line, f"{table}.{prob.key} = {show(prob.value)}: {prob.reason}{at}{prob.allowed_note}")
        if skip:
            unsupported.append(skip)
        points.append(Point(index=len(points), params=params, varied=varied, key=point_key(params), skip_reason=skip,
                            skip_errno=skip_errno))
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


def command_line_problems(problems: Sequence[P.Problem]) -> ConfigError:
    """`pmemlab run KEY=VALUE ...` values the checks refuse, as one error."""
    unsupported = all(p.kind == "unsupported" for p in problems)
    head = "this target cannot run" if unsupported else "invalid parameters"
    fix = "change the values; nothing was sent to the module"
    if any(p.errno == errno.EPERM for p in problems):
        fix = "reload the module with allow_overwrite=1 if nothing on the target is needed; nothing was sent to it"
    if len(problems) == 1:
        return ConfigError(f"{head}: {problems[0].message()}", fix)
    return ConfigError(f"{head}: {len(problems)} problems, one per line above", fix,
                       details=[f"command line: {p.message()}" for p in problems])


def one_point(values: Mapping[str, Any], given: Iterable[str], facts: P.TargetFacts | None,
              discovered: Mapping[str, Any] | None = None) -> Point:
    """The point of `pmemlab run`: normalised `values`, with the defaults found on this machine
    where the command line (`given`) did not set the key, checked against the target as a
    sweep's points are; a point this target cannot run is an error, not a skip."""
    params = dict(values)
    given = set(given)
    for key, value in (discovered or {}).items():
        if key not in given:
            params[key] = value
    problems = P.check_point(params, facts)
    if not problems:
        try:
            P.resolve_cpus(params, facts)
        except ValueError as exc:
            problems = [P.Problem(key="cpus", value=params.get("cpus"), allowed=P.PARAMS["cpus"].allowed(),
                                  reason=str(exc), kind="unsupported")]
    if problems:
        raise command_line_problems(problems)
    return Point(index=0, params=params, varied={}, key="")
