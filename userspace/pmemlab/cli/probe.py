"""`pmemlab probe`: plan and run the measurements a device card rests on (pointer-chase latency
vs region size, refined where a knee is suspected; random-read bandwidth vs access size), save
them, infer the card (analysis/card.py) and draw a figure per inference. `--from DIR` infers
again from a probe's saved measurements without running anything. docs/card.md."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence


from pmemlab import exitcodes
from pmemlab import params as P
from pmemlab.analysis import CARD_NAME as _CARD_NAME, PROBE_CSV as _PROBE_CSV
from pmemlab.lazy import lazy_module
from pmemlab.backends.spec import BackendSpec
from pmemlab.cli import backend as backends
from pmemlab.cli.args import positive_seconds
from pmemlab.cli.parser import command_parser
from pmemlab.config import one_point
from pmemlab.errors import BadInput, OutputError, ParamRefused, PmemlabError, UsageError
from pmemlab.output import print_json, text_table
from pmemlab.sweep import Bench, Sweep

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from pmemlab.analysis import card as C
    from pmemlab.analysis.inference import Inference
else:  # imported on first use: `pmemlab --help` and the commands without tables stay light
    np = lazy_module("numpy")
    pd = lazy_module("pandas")
    C = lazy_module("pmemlab.analysis.card")

CSV_NAME = _PROBE_CSV
CARD_NAME = _CARD_NAME
CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")
MIN_SIZE = 4096
BEYOND = 8  # the chase reaches this factor beyond the largest cache (capped by the target's size)
CHASE_MS = 60
RANDREAD_MS = 100
RANDREAD_SIZES = tuple(2 ** k for k in range(3, 17))  # 8 B .. 64 KiB
RANDREAD_REPEATS = 3  # the median of each size enters the fits
STABLE = 1.1  # knees within this factor of the previous round: stable
TCG = "qemu"  # systemd-detect-virt names TCG 'qemu' (KVM: 'kvm'); machine.hypervisor_info
CSV_COLUMNS = ("curve", "round", "size", "value", "lat_ns_p50", "lat_ns_mean", "bw_gbps", "status", "error")


class NoChase(PmemlabError):
    """The backend cannot pointer-chase (a module without op=chase): exit 1."""


def add_parser(sub: Any, name: str) -> None:
    p = command_parser(sub, name, "measure and infer a device card: cache levels, access granularity, interleave",
                       ["pmemlab probe --target dram --budget 2m -o card-dram",
                        "pmemlab probe --backend kernel --budget 5m -o card-pmem",
                        "pmemlab probe --from card-dram --json"],
                       description="Plans its own measurements (chase latency vs region size, refined where a "
                                   "knee is suspected; random-read bandwidth vs access size), saves them in DIR, "
                                   "and prints the card: every inference with its confidence, evidence and "
                                   "method, or 'uncertain'. docs/card.md.")
    p.add_argument("--backend", choices=("user", "kernel"), default="user",
                   help="user (pmemlab-run, default) or kernel (pmemlab.ko: needs its op=chase)")
    p.add_argument("--target", help="user backend: dram[:NODE] (default dram), a DAX file or /dev/daxX.Y; "
                                    "kernel: refuse unless the module's target is this")
    p.add_argument("--budget", type=positive_seconds, default=300.0, metavar="T",
                   help="time to spend measuring (90s, 5m, 1h; default 5m): stops earlier when stable")
    p.add_argument("--json", action="store_true", help="print the card as one JSON document")
    p.add_argument("-o", "--output", metavar="DIR", help="where the measurements, card.json and figures go "
                                                         "(default probe-TARGET; with --from: not written)")
    p.add_argument("--from", dest="source", metavar="DIR", help="infer again from DIR's saved measurements; no run")


# --------------------------------------------------------------------------
# the plan
# --------------------------------------------------------------------------
def _size_text(text: str) -> int | None:
    m = re.fullmatch(r"(\d+)([KMG]?)", text.strip())
    return int(m.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m.group(2)] if m else None


def cpu_caches(root: Path = CACHE_DIR) -> list[dict[str, Any]]:
    """The data and unified caches cpu0 reports: level, type, size in bytes."""
    out = []
    for d in sorted(root.glob("index*")):
        try:
            kind = (d / "type").read_text().strip()
            size = _size_text((d / "size").read_text())
            level = int((d / "level").read_text())
        except (OSError, ValueError):
            continue
        if kind != "Instruction" and size:
            out.append({"level": level, "type": kind, "size_bytes": size})
    return out


def initial_grid(lo: int, hi: int, per_octave: int = 2) -> list[int]:
    """Region sizes lo..hi, `per_octave` a octave, rounded to 64 B lines."""
    n = int(math.floor(math.log2(hi / lo) * per_octave))
    return sorted({int(round(lo * 2 ** (i / per_octave) / 64)) * 64 for i in range(n + 1)} | {hi // 64 * 64})


def refine(sizes: Sequence[int], fit_knees: Sequence[Mapping[str, Any]], per_octave: int = 8) -> list[int]:
    """New sizes between each knee's last size below and first above (and half an octave beyond
    each), `per_octave` a octave, not yet measured."""
    have = set(sizes)
    new: set[int] = set()
    for k in fit_knees:
        lo, hi = k["last_below"] / 2 ** 0.5, k["first_above"] * 2 ** 0.5
        x = math.log2(lo)
        while x <= math.log2(hi):
            s = int(round(2 ** x / 64)) * 64
            if s not in have and s >= 64:
                new.add(s)
            x += 1 / per_octave
    return sorted(new)


# --------------------------------------------------------------------------
# measuring
# --------------------------------------------------------------------------
class Prober:
    """Runs one point at a time on the backend and keeps the rows."""

    def __init__(self, bench: Bench, deadline: float, out: Any) -> None:
        self.bench = bench
        self.deadline = deadline
        self.rows: list[dict[str, Any]] = []
        self.out = out

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def run(self, curve: str, rnd: int, size: int, raw: dict[str, str]) -> dict[str, Any]:
        values, problems = P.normalize(raw)
        if problems:
            raise BadInput(f"probe: the planned point {raw} is refused: {problems}", "report this as a bug")
        pt = one_point(values, raw, self.bench.facts, self.bench.discovered)
        sweep, rec = Sweep.one_point(pt, self.bench, timeout_s=60.0, run_conditions=False)
        try:
            sweep.run()
        except ParamRefused as exc:
            raise NoChase(f"probe: the backend refused {curve} ({exc.cause})",
                          "use --backend user, or a pmemlab.ko that has op=chase") from None
        row = dict(rec.rows[-1])
        if str(row.get("status")) == "refused":
            raise NoChase(f"probe: the backend refused {curve} ({row.get('error')})",
                          "use --backend user, or a pmemlab.ko that has op=chase")
        lat = row.get("lat_ns_p50")
        bw = row.get("bw_gbps")
        value = lat if curve == "chase" else bw
        out = {"curve": curve, "round": rnd, "size": size, "value": value, **row}
        self.rows.append(out)
        return out

    def chase(self, rnd: int, size: int) -> dict[str, Any]:
        return self.run("chase", rnd, size, {"mode": "latency", "op": "chase", "working_set": str(size),
                                             "duration_ms": str(CHASE_MS)})

    def randread(self, size: int, ws: int) -> dict[str, Any]:
        return self.run("randread", 0, size, {"mode": "bandwidth", "op": "load", "pattern": "rand",
                                              "access_size": str(size), "working_set": str(ws), "threads": "1",
                                              "duration_ms": str(RANDREAD_MS)})


def _points(rows: Sequence[Mapping[str, Any]], curve: str) -> list[tuple[float, float]]:
    out = []
    for r in rows:
        v = r.get("value")
        if r.get("curve") == curve and str(r.get("status")) == "ok" and v is not None and not pd.isna(v):
            out.append((float(r["size"]), float(v)))
    return out


def measure(prober: Prober, target_size: int, caches: Sequence[Mapping[str, Any]], budget_s: float) -> str:
    """The plan: random reads first (a fixed set, a fifth of the budget at most), then the chase
    on a 2-a-octave grid, then rounds refining around each knee until two rounds agree or the
    budget is spent. Returns why it stopped: stable | budget."""
    largest = max((int(c["size_bytes"]) for c in caches), default=32 << 20)
    top = max(MIN_SIZE * 4, min(largest * BEYOND, target_size // 2))
    ws = top
    rr_deadline = time.monotonic() + budget_s / 5
    for _ in range(RANDREAD_REPEATS):  # rounds over every size: a burst of noise hits one repeat of several
        for a in RANDREAD_SIZES:
            if time.monotonic() > rr_deadline or prober.left() <= 0:
                break
            prober.randread(a, ws)
    grid = initial_grid(MIN_SIZE, top)
    for s in grid:
        if prober.left() <= 0:
            return "budget"
        prober.chase(0, s)
    prev: list[float] | None = None
    rnd = 0
    while prober.left() > 0:
        rnd += 1
        inf = C.infer(_points(prober.rows, "chase"), [])[0]
        knees = inf.detail.get("knees", [])
        caps = [k["capacity_bytes"] for k in knees]
        if prev is not None and len(prev) == len(caps) and all(
                1 / STABLE <= a / b <= STABLE for a, b in zip(caps, prev)):
            return "stable"
        prev = caps
        sizes = sorted({int(s) for s, _ in _points(prober.rows, "chase")})
        new = refine(sizes, knees) if knees else initial_grid(MIN_SIZE, top, 4)
        new = [s for s in new if s not in sizes and s <= top]
        if not new:  # nothing left to add: repeat every point once more
            new = sizes
        for s in new:
            if prober.left() <= 0:
                return "budget"
            prober.chase(rnd, s)
    return "budget"


# --------------------------------------------------------------------------
# files, figures, the card
# --------------------------------------------------------------------------
def save_rows(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    frame = pd.DataFrame(list(rows))
    first = [c for c in CSV_COLUMNS if c in frame.columns]
    frame = frame[first + [c for c in frame.columns if c not in first]]
    frame.to_csv(path, index=False)


def load_rows(directory: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    csv, card = directory / CSV_NAME, directory / CARD_NAME
    if not csv.is_file():
        raise BadInput(f"probe --from {directory}: no {CSV_NAME} there",
                       "give the directory a `pmemlab probe -o DIR` wrote")
    try:
        frame = pd.read_csv(csv, float_precision="round_trip")
    except (ValueError, pd.errors.ParserError) as exc:
        raise BadInput(f"probe --from {csv}: not a CSV ({exc})", "give the directory a `pmemlab probe -o DIR` wrote") from None
    missing = [c for c in ("curve", "size", "value", "status") if c not in frame.columns]
    if missing:
        raise BadInput(f"probe --from {csv}: not a probe's measurements (no {', '.join(missing)} column)",
                       "give the directory a `pmemlab probe -o DIR` wrote")
    meta: dict[str, Any] = {}
    if card.is_file():
        try:
            meta = json.loads(card.read_text())
        except ValueError:
            meta = {}
    rows = [{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in r.items()}
            for r in frame.to_dict("records")]
    return rows, meta


def _declared(cond: Mapping[str, Any]) -> tuple[int | None, int | None]:
    def num(v: Any) -> int | None:
        try:
            return int(v) if v is not None and not (isinstance(v, float) and math.isnan(v)) else None
        except (TypeError, ValueError):
            return None
    return num(cond.get("target_interleave_gran")), num(cond.get("target_interleave_ways"))


def is_emulated(cond: Mapping[str, Any]) -> bool:
    return str(cond.get("hypervisor") or "").lower() == TCG


def build_card(rows: Sequence[Mapping[str, Any]], cond: Mapping[str, Any], *, target: str, backend: str,
               caches: Sequence[Mapping[str, Any]], budget_s: float | None, wall_s: float | None,
               stopped: str) -> tuple[dict[str, Any], list[Inference]]:
    emulated = is_emulated(cond)
    gran, ways = _declared(cond)
    infs = C.infer(_points(rows, "chase"), _points(rows, "randread"), gran, ways, emulated)
    doc = C.card_doc(infs, cond, target=target, backend=backend, emulated=emulated, cpu_caches=caches,
                     budget_s=budget_s, wall_s=wall_s, stopped=stopped,
                     not_measured=("write_granularity", "write_tail", "loaded_latency", "tlb_reach"))
    return doc, infs


def draw(doc: Mapping[str, Any], rows: Sequence[Mapping[str, Any]], directory: Path) -> list[Path]:
    """A figure per inference: every measured point, the points the inference rests on, the
    knees / break found, the CPU's caches for the levels."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pmemlab.analysis.resultset import Results
    from pmemlab.plots.style import finish

    frame = pd.DataFrame([r for r in rows if r.get("curve") == "chase"] or list(rows))
    frame["source_csv"] = CSV_NAME
    results = Results("probe", frame, paths=[directory / CSV_NAME])
    paths = []
    for inf in doc["inferences"]:
        fig, ax = plt.subplots(figsize=(7, 4.2))
        curve = "chase" if inf["name"] == "levels" else "randread"
        pts = _points(rows, curve)
        ykey = "latency_ns" if curve == "chase" else ("ops_per_s" if inf["name"] == "read_granularity" else "bw_gbps")
        if inf["name"] == "read_granularity":
            pts = [(a, b * 1e9 / a) for a, b in pts]
        if pts:
            ax.scatter([p[0] for p in pts], [p[1] for p in pts], s=10, color="0.6", label="measured (every repeat)")
        ev = inf["evidence"]
        xk = "size_bytes" if curve == "chase" else "access_size"
        ax.plot([e[xk] for e in ev], [e[ykey] for e in ev], "o-", ms=4, color="C0", label="points used (medians)")
        if inf["name"] == "levels":
            for k in inf.get("detail", {}).get("knees", []):
                ax.axvline(k["capacity_bytes"], color="C3", lw=1.2)
                ax.annotate(f"{k['capacity_bytes'] / 1024:.0f} KiB\n(conf {k['confidence']:.2f})",
                            (k["capacity_bytes"], ax.get_ylim()[1]), fontsize=7, color="C3", va="top")
            for lv in inf.get("detail", {}).get("levels", []):
                ax.hlines(lv["latency_ns"], lv["from_bytes"], lv["to_bytes"], color="C2", lw=2)
            for c in doc.get("cpu_caches", []):
                ax.axvline(c["size_bytes"], color="0.3", ls=":", lw=1)
            ax.set_xlabel("region size (B); dotted: caches the CPU reports")
            ax.set_ylabel("chase latency p50 (ns)")
        else:
            brk = inf.get("detail", {}).get("break_bytes") or inf.get("detail", {}).get("saturation_bytes")
            if brk:
                ax.axvline(brk, color="C3", lw=1.2, label=f"break {brk:.0f} B")
            ax.set_xlabel("random access size (B)")
            ax.set_ylabel("operations/s" if ykey == "ops_per_s" else "bandwidth (GB/s)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.legend(fontsize=7)
        verdict = "uncertain: " + inf["reason"] if inf["uncertain"] else C.value_text(inf)
        extra = [f"{inf['name']}: {verdict}", f"method: {inf['method']}"]
        if inf.get("emulated"):
            extra.append("EMULATED (TCG): the timing means nothing")
        finish(fig, results, f"probe {doc['target']}: {inf['name']}", extra)
        path = directory / f"{inf['name']}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        paths.append(path)
    return paths


def print_card(doc: Mapping[str, Any], as_json: bool) -> None:
    if as_json:
        print_json(doc)
        return
    wall = f", {doc['wall_s']:.0f} s" if doc.get("wall_s") is not None else ""
    mark = " - EMULATED: timings mean nothing" if doc.get("emulated") else ""
    hyp = doc.get("conditions", {}).get("hypervisor")
    virt = f" (under a hypervisor: {hyp})" if hyp not in (None, "", "none") and not doc.get("emulated") else ""
    print(f"device card: {doc['target']} ({doc['backend']} backend{wall}, stopped: {doc['stopped']}){mark}{virt}")
    print("\n".join(text_table(C.TABLE_COLUMNS, C.table_rows(doc))))
    caches = ", ".join(f"L{c['level']} {c['size_bytes'] // 1024} KiB" for c in doc.get("cpu_caches", []))
    if caches:
        print(f"the CPU reports: {caches}")
    for u in doc["undecided"]:
        print(f"not decided: {u['name']}: {u['reason']}")


def _output_dir(path: str) -> Path:
    d = Path(path)
    if d.exists() and not d.is_dir():
        raise OutputError(f"probe -o {d}: not a directory", "give a directory (it is created if missing)")
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"probe -o {d}: cannot create it ({exc.strerror})", "give a directory you can write") from None
    return d


def run(args: argparse.Namespace) -> int:
    if args.source:
        src = Path(args.source)
        if not src.is_dir():
            raise BadInput(f"probe --from {src}: not a directory", "give the directory a `pmemlab probe -o DIR` wrote")
        rows, meta = load_rows(src)
        cond = meta.get("conditions", {})
        doc, _ = build_card(rows, cond, target=str(meta.get("target", "?")), backend=str(meta.get("backend", "?")),
                            caches=meta.get("cpu_caches", []), budget_s=meta.get("budget_s"),
                            wall_s=meta.get("wall_s"), stopped=str(meta.get("stopped", "?")))
        if args.output:
            out = _output_dir(args.output)
            (out / CARD_NAME).write_text(json.dumps(doc, indent=1, default=str) + "\n")
            save_rows(rows, out / CSV_NAME)
            draw(doc, rows, out)
        print_card(doc, args.json)
        return exitcodes.OK
    if args.backend == "user":
        target = args.target or "dram"
        be = BackendSpec("user", target=target, options={}).open()
    else:
        be = backends.module(args)
    be.require_loaded()
    bench = Bench.probe(be, backends.online_cpus())
    if args.backend == "kernel":
        be.check_target(args.target)
    cond = dict(bench.conditions)
    target = str(cond.get("target") or args.target or "?")
    out = _output_dir(args.output or f"probe-{re.sub(r'[^A-Za-z0-9_.-]+', '_', target)}")
    caches = cpu_caches()
    t0 = time.monotonic()
    prober = Prober(bench, t0 + args.budget, sys.stderr)
    if args.backend == "kernel":
        try:
            prober.chase(0, MIN_SIZE)
        except PmemlabError as exc:  # the parameter check or the module itself refuses op=chase
            raise NoChase(f"probe: the module has no pointer chase ({exc.cause})",
                          "use --backend user, or load a pmemlab.ko that has op=chase") from None
        prober.rows.clear()
    target_size = int(cond.get("target_size") or 256 << 20)
    stopped = measure(prober, target_size, caches, args.budget)
    wall = time.monotonic() - t0
    save_rows(prober.rows, out / CSV_NAME)
    doc, _ = build_card(prober.rows, cond, target=target, backend=args.backend, caches=caches,
                        budget_s=args.budget, wall_s=wall, stopped=stopped)
    (out / CARD_NAME).write_text(json.dumps(doc, indent=1, default=str) + "\n")
    draw(doc, prober.rows, out)
    print_card(doc, args.json)
    if not args.json:
        print(f"measurements, card and figures in {out}/")
    return exitcodes.OK
