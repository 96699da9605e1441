"""[scale.NAME] overlays: which one applies, and the config with it laid over."""

from __future__ import annotations

from typing import Any, Mapping

from pmemlab.config.lines import LineIndex
from pmemlab.config.model import FULL_SCALE
from pmemlab.errors import ConfigError


def scale_names(data: Mapping[str, Any], lines: LineIndex, source: str) -> tuple[str, ...]:
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


def chosen_scale(scale: str | None, scales: tuple[str, ...], source: str) -> str:
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
