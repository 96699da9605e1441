"""[sweep.adaptive]: repeat a point until the CI of one metric is tight enough."""

from __future__ import annotations

from typing import Any

from pmemlab.config.lines import LineIndex
from pmemlab.config.model import Adaptive, SweepConfig
from pmemlab.config.problems import Problems, show
from pmemlab.host import ipmctl
from pmemlab.results import KNOWN_RESULT_COLUMNS

ADAPTIVE_KEYS = frozenset({"metric", "ci_target", "max_repeats", "min_repeats"})


def adaptive_metrics() -> tuple[str, ...]:
    """What [sweep.adaptive] metric may name: the numeric result columns of an aggregate row
    the controller knows (module fields and Optane media counters), not ids such as cpu."""
    return tuple(c for c in (*KNOWN_RESULT_COLUMNS, *ipmctl.COLUMNS) if c != "cpu" and not c.startswith("thread"))


def parse_adaptive(cfg: SweepConfig, ad: Any, lines: LineIndex, probs: Problems) -> None:
    table = "sweep.adaptive"
    if not isinstance(ad, dict):
        probs.add(lines.line("sweep", "adaptive"), "sweep.adaptive must be a table")
        return
    for key in ad:
        if key not in ADAPTIVE_KEYS:
            probs.add(lines.line(table, key), f"{table}.{key}: unknown key (allowed: {', '.join(sorted(ADAPTIVE_KEYS))})")
    metric = ad.get("metric", "bw_gbps")
    if metric not in adaptive_metrics():
        probs.add(lines.line(table, "metric"), f"{table}.metric = {show(metric)}: not a numeric result column "
                  f"(allowed: {', '.join(adaptive_metrics())})")
    target = ad.get("ci_target", 0.02)
    if not isinstance(target, (int, float)) or isinstance(target, bool) or not 0 < target < 1:
        probs.add(lines.line(table, "ci_target"), f"{table}.ci_target = {show(target)}: relative half-width, 0 < x < 1 (e.g. 0.02)")
        target = 0.02
    min_r = ad.get("min_repeats", max(cfg.repeats, 2))
    max_r = ad.get("max_repeats", 20)
    for key, val in (("min_repeats", min_r), ("max_repeats", max_r)):
        if not isinstance(val, int) or isinstance(val, bool) or not 2 <= val <= 10000:
            probs.add(lines.line(table, key), f"{table}.{key} = {show(val)}: an integer in 2..10000")
            return
    if max_r < min_r:
        probs.add(lines.line(table, "max_repeats"), f"{table}.max_repeats = {max_r}: smaller than min_repeats {min_r}")
        return
    cfg.adaptive = Adaptive(metric=str(metric), ci_target=float(target), max_repeats=max_r, min_repeats=min_r)
