"""A sweep config built as data (the one-liners' and curves' sweeps, sized by what their targets
are): the SweepConfig a config file would give, through the same checks as [base], [axes] and
[[zip]] of a file (parse_base, parse_axis), without TOML text to write and read again."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from pmemlab.config.axes import parse_axis
from pmemlab.config.lines import LineIndex
from pmemlab.config.model import Adaptive, SweepConfig
from pmemlab.config.parse import parse_base
from pmemlab.config.problems import Problems


def sweep_config(name: str, description: str, *, source: str, repeats: int = 1, base: Mapping[str, Any],
                 axes: Mapping[str, Sequence[Any]] | None = None, zips: Sequence[Mapping[str, Sequence[Any]]] = (),
                 timeout_s: float = 600.0, adaptive: Adaptive | None = None) -> SweepConfig:
    """The config of a sweep given as values: `base` (one value a key), `axes` (a key's values,
    a product in this order) and `zips` (groups of keys whose lists are walked together), every
    value made canonical and checked as a file's would be; its problems are raised together,
    named after `source` (a command: `pmemlab peak-bw`). The sidecar's `parsed` is the same
    document a file of these values would parse to."""
    axes = dict(axes or {})
    data: dict[str, Any] = {"sweep": {"name": name, "description": description, "repeats": repeats},
                            "base": dict(base)}
    if axes:
        data["axes"] = {k: list(v) for k, v in axes.items()}
    if zips:
        data["zip"] = [{k: list(v) for k, v in group.items()} for group in zips]
    lines = LineIndex("")
    cfg = SweepConfig(path=None, text="", data=data, name=name, description=description, repeats=repeats,
                      timeout_s=timeout_s, adaptive=adaptive, lines=lines, source=source)
    probs = Problems(source)
    if not 1 <= repeats <= 10000:
        probs.add(None, f"sweep.repeats = {repeats}: not an integer in 1..10000")
    parse_base(cfg, base, lines, probs)
    seen: dict[str, str] = {}
    for key, values in axes.items():
        ax = parse_axis(("axes",), {key: list(values)}, "axes", lines, probs, seen, cfg.base)
        if ax:
            cfg.axes.append(ax)
    for i, group in enumerate(zips):
        ax = parse_axis(("zip",), {k: list(v) for k, v in group.items()}, f"zip#{i}", lines, probs, seen, cfg.base)
        if ax:
            cfg.axes.append(ax)
    probs.raise_if_any()
    return cfg
