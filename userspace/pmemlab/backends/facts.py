"""Target facts (docs/interface.md 'Target facts'): their names and how a value is read, one
rule for both backends (the module's files under /sys/kernel/pmemlab, the runner's `#fact NAME
VALUE` lines)."""

from __future__ import annotations

from typing import Any

# a DRAM target's placement (docs/interface.md): its nodes and weights, the bytes found on each node
# ("0:201326592,1:67108864"), how the pages got there; condition columns of every row
PLACEMENT_FACTS: tuple[str, ...] = ("target_nodes", "target_weights", "target_node_bytes", "target_placement")
FACT_FILES: tuple[str, ...] = (
    "version",
    "target",
    "target_kind",
    "target_size",
    "target_node",
    "target_page_size",
    *PLACEMENT_FACTS,
    "tsc_khz",
    "cpu_features",
    "widths",
    "prefetch_control",
    "fs_signature",
    "target_partitions",
    "tsc_invariant",
    "tsc_reliable",
)
# facts that are integers, from either backend (the runner's own: map_sync, target_huge_pct, dax)
INT_FACTS = frozenset({"target_size", "target_node", "target_page_size", "tsc_khz", "target_partitions",
                       "tsc_invariant", "tsc_reliable", "map_sync", "target_huge_pct", "dax"})


def fact_value(name: str, text: str) -> int | str:
    """One fact's value: an int (decimal or 0x) for an integer fact that reads as one, else the text."""
    if name in INT_FACTS:
        try:
            return int(text, 0)
        except ValueError:
            pass
    return text


def parse_fact_lines(text: str) -> dict[str, Any]:
    """`#fact NAME VALUE` lines (the runner's stdout) -> facts by name; other lines are skipped."""
    out: dict[str, Any] = {}
    for line in text.splitlines():
        if line.startswith("#fact "):
            name, _, value = line[len("#fact "):].partition(" ")
            out[name] = fact_value(name, value)
    return out
