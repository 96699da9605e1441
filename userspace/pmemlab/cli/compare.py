"""`pmemlab compare A B`: two result sets point by point (pmemlab.analysis.compare does the comparing)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pmemlab.analysis import compare
from pmemlab.analysis import CARD_NAME
from pmemlab.cli import curves
from pmemlab.errors import BadInput
from pmemlab.output import check_writable, examples, print_json, text_table


def add_parser(sub: Any, name: str) -> None:
    p = sub.add_parser(name, help="two result sets point by point: ratio B/A, CI overlap, faster/slower/no difference",
                       description=compare.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=examples("pmemlab compare results/bw-threads@dram.csv results/bw-threads@pmem.csv",
                                       "pmemlab compare results/bw-threads.csv results/bw-threads.csv "
                                       "--a-target dram --b-target pmem",
                                       "pmemlab compare old-results results --json",
                                       "pmemlab compare a.csv b.csv --metric lat_ns_p99 --threshold 0.1 -o diff.csv",
                                       "pmemlab compare results/curves-dram.csv results/curves-cxl.csv  # pmemlab curves",
                                       "pmemlab compare probe-dram probe-cxl   # two device cards (pmemlab probe)"))
    p.add_argument("a", type=Path, metavar="A", help="sweep CSV or results directory (the baseline), a curves CSV, "
                   "or a device card (card.json or a `pmemlab probe` directory)")
    p.add_argument("b", type=Path, metavar="B", help="sweep CSV or results directory (compared with A), a curves CSV, "
                   "or a card")
    p.add_argument("--a-target", metavar="LABEL", help="A's rows of this target only (a CSV of several targets)")
    p.add_argument("--b-target", metavar="LABEL", help="B's rows of this target only")
    p.add_argument("--metric", help="column to compare (default: bw_gbps, lat_ns_p50 for latency points)")
    p.add_argument("--threshold", type=float, default=compare.DEFAULT_THRESHOLD, metavar="FRACTION",
                   help=f"B within this fraction of A is no difference ({compare.DEFAULT_THRESHOLD})")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print JSON")
    out.add_argument("--csv", action="store_true", help="print CSV, a row per point")
    p.add_argument("-o", "--output", type=Path, metavar="CSV", help="also write the rows to this CSV")


def card_of(path: Path) -> dict[str, Any] | None:
    """The device card at `path` (card.json, or a probe directory holding one); None: not a card."""
    from pmemlab.analysis import card as C  # numpy: only where a card is read

    f = path / CARD_NAME if path.is_dir() else path
    if f.suffix != ".json" or not f.is_file():
        return None
    try:
        doc = json.loads(f.read_text())
    except (OSError, ValueError):
        return None
    return doc if C.is_card(doc) else None


def run_cards(args: argparse.Namespace, a: dict[str, Any] | None, b: dict[str, Any] | None) -> int:
    if a is None or b is None:
        which = args.a if a is None else args.b
        raise BadInput(f"compare {which}: not a device card while the other is one",
                       "give two cards (card.json or `pmemlab probe` directories), or two result sets")
    from pmemlab.analysis import card as C

    rows = C.compare_cards(a, b)
    if args.json:
        print_json({"a": str(args.a), "b": str(args.b), "rows": rows})
        return 0
    print(f"A: {a['target']} ({a['backend']}{', EMULATED' if a['emulated'] else ''})   "
          f"B: {b['target']} ({b['backend']}{', EMULATED' if b['emulated'] else ''})")
    cols = ["inference", "a", "a_confidence", "b", "b_confidence", "verdict"]
    print("\n".join(text_table(cols, [[r[c] if not isinstance(r[c], float) else f"{r[c]:.2f}" for c in cols]
                                      for r in rows])))
    return 0


def run(args: argparse.Namespace) -> int:
    a, b = card_of(args.a), card_of(args.b)
    if a is not None or b is not None:
        return run_cards(args, a, b)
    if args.output:
        check_writable(args.output, "-o", directory=False)
    if curves.is_curves_csv(args.a) and curves.is_curves_csv(args.b):  # two bandwidth-latency families
        return curves.compare_command(args)
    c = compare.compare(args.a, args.b, args.metric, args.threshold, args.a_target, args.b_target)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        c.rows.to_csv(args.output, index=False)
    if args.json:
        print(compare.to_json(c))
    elif args.csv:
        c.rows.to_csv(sys.stdout, index=False)
    else:
        print(compare.format_table(c))
    return 0
