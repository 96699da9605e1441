"""One inference of the device card: a value with its unit, a confidence, the evidence (the
measured points it rests on) and the method that drew it; `uncertain` with the reason when the
data does not decide (docs/card.md)."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Inference:
    name: str
    value: Any  # a number, a list of levels, or None when uncertain
    unit: str
    confidence: float  # 0..1 (see each method); 0 when uncertain
    method: str
    evidence: list[dict[str, Any]] = field(default_factory=list)
    uncertain: bool = False
    reason: str = ""  # why uncertain, or what the value was held against
    detail: dict[str, Any] = field(default_factory=dict)
    emulated: bool = False  # measured under emulation (TCG): the timing means nothing

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Inference:
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


def bic_confidence(delta_bic: float) -> float:
    """The BIC approximation of the posterior probability of the richer model against the
    simpler one, equal priors: 1 / (1 + exp(-dBIC/2)) (Kass & Raftery 1995)."""
    if delta_bic > 60:
        return 1.0
    return 1.0 / (1.0 + math.exp(-delta_bic / 2.0))
