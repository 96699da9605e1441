"""[axes] and [[zip]]: one Axis per key or zip group, every value canonical."""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from pmemlab import params as P
from pmemlab.config.lines import LineIndex
from pmemlab.config.model import Axis
from pmemlab.config.problems import Problems, show
from pmemlab.config.ranges import axis_values


def parse_axis(kind: tuple[str, ...], group: Mapping[str, Any], table: str, lines: LineIndex,
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
            probs.add(line, f"{table.split('#')[0]}.{key} = {show(raw)}: {exc} (allowed: {p.allowed()}; "
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
