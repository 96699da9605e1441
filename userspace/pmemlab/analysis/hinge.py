"""A broken line in log-log space (a hinge), the shared fit of the granularity and interleave
inferences: y = c + s1 min(x - g, 0) + s2 max(x - g, 0) over x = log2(size), least squares for
(c, s1, s2) at each candidate g on a 1/16-octave grid, g by least squared error; held against
the best straight line by BIC (Gaussian, residual scale floored at FLOOR)."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Arr = npt.NDArray[np.float64]

FLOOR = 0.03  # ln units


@dataclass
class Hinge:
    g: float  # log2 of the break
    c: float
    slope_below: float
    slope_above: float
    delta_bic: float  # BIC(line) - BIC(hinge): > 0 favours the break


def _bic(sse: float, n: int, k: int) -> float:
    return n * math.log(max(sse / n, FLOOR ** 2)) + k * math.log(n)


def _lstsq(a: Arr, y: Arr) -> tuple[Arr, float]:
    coef, *_ = np.linalg.lstsq(a, y, rcond=None)
    return coef, float(((a @ coef - y) ** 2).sum())


def fit_hinge(x: Arr, y: Arr, fixed_below: float | None = None) -> Hinge:
    """The best hinge; `fixed_below` pins the slope below the break (e.g. 0: flat)."""
    n = len(x)
    line, sse_line = _lstsq(np.column_stack([np.ones(n), x]), y)
    best: tuple[float, float, Arr] | None = None
    for g in np.arange(x.min(), x.max() + 1e-9, 1 / 16):
        lo, hi = np.minimum(x - g, 0), np.maximum(x - g, 0)
        if fixed_below is None:
            coef, sse = _lstsq(np.column_stack([np.ones(n), lo, hi]), y)
        else:
            c2, sse = _lstsq(np.column_stack([np.ones(n), hi]), y - fixed_below * lo)
            coef = np.array([c2[0], fixed_below, c2[1]])
        if best is None or sse < best[1] - 1e-12:
            best = (float(g), sse, coef)
    assert best is not None
    g, sse, coef = best
    k = 4 if fixed_below is None else 3
    return Hinge(g, float(coef[0]), float(coef[1]), float(coef[2]), _bic(sse_line, n, 2) - _bic(sse, n, k))
