"""Axis values: lists, and ranges such as "64..65536 *2", "1..8", "0..100 +10", "4K..1G *4"."""

from __future__ import annotations

import re
from typing import Any

from pmemlab import params as P

MAX_RANGE_VALUES = 100_000
RANGE_RE = re.compile(r"^\s*(\S+?)\s*\.\.\s*(\S+?)\s*(?:([*+x])\s*(\S+))?\s*$")


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
