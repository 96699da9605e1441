"""The bandwidth-latency family per read/write mix (`pmemlab curves`, docs/method.md): which
throttles to measure, and what each curve says.

A curve is the points of one read share (mix): load threads throttled by a delay between their
accesses (TSC ticks), a probe thread measuring latency beside them. Each point has the load
threads' achieved bandwidth and read share and the probe's latency percentiles.

- The grid: a coarse geometric ladder of delays from 0 (flat out) to near idle, then points
  added one at a time inside the longest stretch of the curve measured in normalised units
  (bandwidth over the peak, latency over the unloaded latency): the points spread evenly along
  the curve, and more go where latency rises fast (`next_delays`).
- Per curve (`summarize_curve`): the unloaded latency (the lightest load's median, or one
  measured on its own), the peak bandwidth, the knee (the bandwidth where the median has
  doubled over the unloaded latency, interpolated), and the tail rise (p99.9 over the median at
  80 % of the peak bandwidth, interpolated).
- Over the family (`best_mix`): the read share with the highest peak.
- What memory saw (`memory_factor`): a plain store (cached, with or without a flush after it)
  reads each line before writing it (read for ownership), so the memory moves twice the bytes
  of such a write; a non-temporal store writes the line without reading it.
"""

from __future__ import annotations

import csv
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from pmemlab.errors import NotPmemlabFile

CSV_COLUMNS = (  # the tidy CSV of `pmemlab curves -o`, a row per point (docs/curves.md)
    "mix_pct", "write_op", "probe_op", "delay_ticks", "delay_ns", "repeats", "bw_gbps", "bw_gbps_std",
    "bw_memory_gbps", "read_pct_actual", "lat_p50_ns", "lat_p50_std_ns", "lat_p90_ns", "lat_p99_ns",
    "lat_p999_ns", "lat_max_ns", "lat_mean_ns", "lat_samples", "threads", "target", "load_target", "backend",
    "emulated",
)
KNEE_FACTOR = 2.0  # the knee: the median latency this many times the unloaded one
TAIL_AT = 0.8  # the tail rise is read at this share of the peak bandwidth
MAX_DELAY_TICKS = 1 << 20  # near idle: ~0.4 ms between accesses at 2.5 GHz
MIN_DELAY_TICKS = 16  # the first throttle above flat out


@dataclass(frozen=True)
class CurvePoint:
    """One point of a curve: the load threads' throttle and what it gave (means over the
    repeats; *_std: the repeats' standard deviation, 0 for one repeat)."""

    mix: int  # the read share asked, %
    delay_ticks: int
    bw_gbps: float
    bw_std: float
    read_share: float  # achieved, % of the load threads' accesses that were reads
    p50_ns: float
    p90_ns: float
    p99_ns: float
    p999_ns: float
    max_ns: float
    p50_std: float = 0.0
    repeats: int = 1


@dataclass(frozen=True)
class CurveSummary:
    """What one curve says (NaN: the curve does not reach it)."""

    mix: int
    points: int
    unloaded_ns: float
    peak_gbps: float
    knee_gbps: float  # the bandwidth where the median reaches KNEE_FACTOR x unloaded_ns
    knee_ns: float
    tail_rise: float  # p99.9 / median at TAIL_AT x peak
    tail_at_gbps: float
    memory_factor: float  # bytes the memory moved per byte issued at the peak (read for ownership)

    def record(self) -> dict[str, Any]:
        return asdict(self)


# --------------------------------------------------------------------------
# the grid
# --------------------------------------------------------------------------
def initial_delays(n: int, lo: int = MIN_DELAY_TICKS, hi: int = MAX_DELAY_TICKS) -> list[int]:
    """n delays: 0 (flat out), then a geometric ladder from lo to hi ticks (whole, distinct)."""
    if n < 2:
        raise ValueError(f"{n} delays: at least 2 (flat out and near idle)")
    if not 0 < lo < hi:
        raise ValueError(f"delays {lo}..{hi}: need 0 < lo < hi")
    if n == 2:
        return [0, hi]
    ladder: list[int] = []
    for i in range(n - 1):  # geometric, each at least one above the last while room is left for the rest
        d = max(round(lo * (hi / lo) ** (i / (n - 2))), ladder[-1] + 1 if ladder else lo)
        ladder.append(min(d, hi - (n - 2 - i)) if hi - lo >= n - 2 else min(d, hi))
    return sorted({0, *ladder})


def _split(lo: int, hi: int) -> int | None:
    """A delay strictly between lo < hi: their geometric mean (half of hi above 0), None when
    they are neighbours."""
    mid = hi // 2 if lo == 0 else round(math.sqrt(lo * hi))
    mid = min(max(mid, lo + 1), hi - 1)
    return mid if lo < mid < hi else None


def stretches(points: Sequence[tuple[int, float, float]]) -> list[tuple[float, int, int]]:
    """The curve's pieces between neighbouring delays, longest first: (length, lower delay,
    higher delay), the length in bandwidth over the peak and latency over the unloaded latency
    (the lightest load's, the highest delay)."""
    pts = sorted(points)
    if len(pts) < 2:
        return []
    peak = max(bw for _, bw, _ in pts) or 1.0
    base = pts[-1][2] if pts[-1][2] > 0 else (min(lat for _, _, lat in pts if lat > 0) if any(lat > 0 for _, _, lat in pts) else 1.0)
    out = []
    for (d0, bw0, l0), (d1, bw1, l1) in zip(pts, pts[1:]):
        out.append((math.hypot((bw1 - bw0) / peak, (l1 - l0) / base), d0, d1))
    return sorted(out, key=lambda s: (-s[0], s[1]))


def next_delays(points: Sequence[tuple[int, float, float]], want: int) -> list[int]:
    """Up to `want` new delays for a curve measured at `points` (delay, bandwidth, median
    latency): each splits the longest piece still open (a piece split once in this call is
    counted as two halves of its length), so the points spread evenly along the curve."""
    pieces = [(length, lo, hi) for length, lo, hi in stretches(points)]
    new: list[int] = []
    while len(new) < want and pieces:
        pieces.sort(key=lambda s: (-s[0], s[1]))
        length, lo, hi = pieces.pop(0)
        mid = _split(lo, hi)
        if mid is None:
            continue
        new.append(mid)
        pieces += [(length / 2, lo, mid), (length / 2, mid, hi)]
    return sorted(new)


# --------------------------------------------------------------------------
# a curve's summary
# --------------------------------------------------------------------------
def by_load(points: Iterable[CurvePoint]) -> list[CurvePoint]:
    """The points from the lightest load (highest delay) to flat out."""
    return sorted(points, key=lambda p: -p.delay_ticks)


def _crossing(xs: Sequence[float], ys: Sequence[float], level: float) -> float:
    """Where ys first reaches level along xs (linear between neighbours); NaN if never."""
    for i, y in enumerate(ys):
        if y >= level:
            if i == 0:
                return xs[0]
            x0, y0, x1 = xs[i - 1], ys[i - 1], xs[i]
            return x0 + (x1 - x0) * (level - y0) / (y - y0) if y != y0 else x1
    return math.nan


def _at(xs: Sequence[float], ys: Sequence[float], x: float) -> float:
    """ys at the first point where xs reaches x (linear between neighbours); NaN if never."""
    for i, xi in enumerate(xs):
        if xi >= x:
            if i == 0:
                return ys[0]
            x0, y0 = xs[i - 1], ys[i - 1]
            return y0 + (ys[i] - y0) * (x - x0) / (xi - x0) if xi != x0 else ys[i]
    return math.nan


def memory_factor(write_op: str, non_temporal: bool) -> float:
    """Bytes the memory moves per byte a write of `write_op` issues: 2 for a cached store (the
    line is read for ownership first, then written back), 1 for a non-temporal store."""
    del write_op  # named for the caller's note; the rule is the store's kind
    return 1.0 if non_temporal else 2.0


def memory_gbps(bw_gbps: float, read_share_pct: float, factor: float) -> float:
    """What memory saw of `bw_gbps` issued with read_share_pct % reads: reads once, writes x factor."""
    r = read_share_pct / 100.0
    return bw_gbps * (r + factor * (1.0 - r))


def summarize_curve(points: Sequence[CurvePoint], unloaded_ns: float | None = None,
                    factor: float = 1.0) -> CurveSummary:
    """The curve's unloaded latency (given, else the lightest load's median with samples), peak bandwidth,
    knee (bandwidth where the median reaches KNEE_FACTOR x unloaded, along increasing load) and
    tail rise (p99.9 over median where bandwidth first reaches TAIL_AT x peak)."""
    pts = by_load(points)
    if not pts:
        raise ValueError("a curve with no point")
    mixes = {p.mix for p in pts}
    if len(mixes) != 1:
        raise ValueError(f"one curve has one mix, not {sorted(mixes)}")
    timed = [p.p50_ns for p in pts if not math.isnan(p.p50_ns)]  # a point whose probe got no sample has none
    base = unloaded_ns if unloaded_ns is not None and unloaded_ns > 0 else timed[0] if timed else math.nan
    bws = [p.bw_gbps for p in pts]
    peak = max(bws)
    i_peak = bws.index(peak)
    rising = pts[:i_peak + 1]  # up to the peak: past it more load gives less bandwidth
    rb = [p.bw_gbps for p in rising]
    lat = [p.p50_ns for p in pts]
    knee_ns = KNEE_FACTOR * base
    knee = _crossing(bws, lat, knee_ns) if any(x >= knee_ns for x in lat) else math.nan
    at = TAIL_AT * peak
    p50 = _at(rb, [p.p50_ns for p in rising], at)
    p999 = _at(rb, [p.p999_ns for p in rising], at)
    share = pts[i_peak].read_share
    return CurveSummary(mix=pts[0].mix, points=len(pts), unloaded_ns=base, peak_gbps=peak, knee_gbps=knee,
                        knee_ns=knee_ns if not math.isnan(knee) else math.nan,
                        tail_rise=p999 / p50 if p50 and p50 > 0 else math.nan, tail_at_gbps=at,
                        memory_factor=memory_gbps(1.0, share, factor))


def best_mix(summaries: Sequence[CurveSummary]) -> CurveSummary:
    """The curve with the highest peak bandwidth (the first of equal ones)."""
    if not summaries:
        raise ValueError("no curve")
    return max(summaries, key=lambda s: s.peak_gbps)


def family(points: Iterable[CurvePoint]) -> dict[int, list[CurvePoint]]:
    """The points by mix, each curve from the lightest load to flat out; mixes high to low."""
    out: dict[int, list[CurvePoint]] = {}
    for p in points:
        out.setdefault(p.mix, []).append(p)
    return {m: by_load(out[m]) for m in sorted(out, reverse=True)}


def monotone_violations(points: Sequence[CurvePoint], k: float = 2.0) -> list[tuple[int, int]]:
    """Neighbouring points (delays, lighter then heavier load) where bandwidth falls as load
    grows by more than k x their combined spread: the curve is not monotone within it."""
    pts = by_load(points)
    out = []
    for a, b in zip(pts, pts[1:]):
        if b.bw_gbps < a.bw_gbps - k * math.hypot(a.bw_std, b.bw_std):
            out.append((a.delay_ticks, b.delay_ticks))
    return out


def memory_note(write_op: str, factor: float, mixes: Sequence[int]) -> str:
    """The note where what the load threads issued is not what the memory saw ('' where it is)."""
    if factor == 1.0 or all(m >= 100 for m in mixes):
        return ""
    return (f"bytes issued are not bytes moved: {write_op} is a cached store, which reads each line before "
            f"writing it (read for ownership), so the memory moves about {factor:g}x the bytes of the writes; "
            f"bw_memory_gbps = bw_gbps x (read share + {factor:g} x write share)")


def pooled_quantile(buckets: Iterable[tuple[float, float, int]], q: float) -> float:
    """The q-quantile (0 < q <= 1) of samples pooled from histogram buckets (lo, hi, count):
    linear inside the bucket that holds it; NaN without samples."""
    if not 0 < q <= 1:
        raise ValueError(f"quantile {q}: 0 < q <= 1")
    merged: dict[tuple[float, float], int] = {}
    for lo, hi, n in buckets:
        if n > 0:
            merged[(lo, hi)] = merged.get((lo, hi), 0) + int(n)
    total = sum(merged.values())
    if not total:
        return math.nan
    want = q * total
    seen = 0
    for (lo, hi), n in sorted(merged.items()):
        if seen + n >= want:
            return lo + (hi - lo) * (want - seen) / n
        seen += n
    return max(hi for _, hi in merged)  # not reached: the last bucket holds q = 1


def latency_at(points: Sequence[CurvePoint], bw_gbps: float, field: str = "p50_ns") -> float:
    """The curve's latency (`field` of its points) at bandwidth bw_gbps, interpolated on its part
    up to the peak; NaN outside what the curve reached."""
    pts = by_load(points)
    bws = [p.bw_gbps for p in pts]
    if not pts or bw_gbps > max(bws) or bw_gbps < bws[0]:
        return math.nan
    rising = pts[:bws.index(max(bws)) + 1]
    return _at([p.bw_gbps for p in rising], [float(getattr(p, field)) for p in rising], bw_gbps)


def _ratio(b: float, a: float) -> float:
    return b / a if a and not math.isnan(a) and not math.isnan(b) else math.nan


def compare_families(a: Sequence[CurvePoint], b: Sequence[CurvePoint]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Two families on the mixes both have: per mix A's and B's summary values and B/A; per
    point of A, B's median and p99.9 at A's bandwidth (interpolated on B's curve) and B/A."""
    fa, fb = family(a), family(b)
    mixes = [m for m in fa if m in fb]
    if not mixes:
        raise ValueError(f"no read share in both families (A: {sorted(fa)}, B: {sorted(fb)})")
    summary, points = [], []
    for m in mixes:
        sa, sb = summarize_curve(fa[m]), summarize_curve(fb[m])
        row: dict[str, Any] = {"mix": m}
        for key in ("unloaded_ns", "peak_gbps", "knee_gbps", "tail_rise"):
            va, vb = getattr(sa, key), getattr(sb, key)
            row.update({f"{key}_a": va, f"{key}_b": vb, f"{key}_b_over_a": _ratio(vb, va)})
        summary.append(row)
        for p in fa[m]:
            b50, b999 = latency_at(fb[m], p.bw_gbps), latency_at(fb[m], p.bw_gbps, "p999_ns")
            points.append({"mix": m, "bw_gbps": p.bw_gbps, "p50_ns_a": p.p50_ns, "p50_ns_b": b50,
                           "p50_b_over_a": _ratio(b50, p.p50_ns), "p999_ns_a": p.p999_ns, "p999_ns_b": b999,
                           "p999_b_over_a": _ratio(b999, p.p999_ns)})
    return summary, points


# --------------------------------------------------------------------------
# the tidy CSV read back
# --------------------------------------------------------------------------
def is_curves_csv(path: Path) -> bool:
    """A CSV `pmemlab curves -o` wrote: its header is CSV_COLUMNS."""
    if path.suffix != ".csv" or not path.is_file():
        return False
    try:  # any file may end in .csv (a figure, a binary): one that cannot be read as text is not ours
        with path.open(newline="", encoding="utf-8") as f:
            return tuple(next(csv.reader(f), [])) == CSV_COLUMNS
    except (OSError, UnicodeDecodeError, csv.Error):
        return False


def _num(text: str) -> float:
    return float(text) if text != "" else math.nan


def read_curves_csv(path: Path) -> list[CurvePoint]:
    """The points of a CSV is_curves_csv accepted; a row cut short or not a number raises
    NotPmemlabFile naming the file and the line."""
    line = 1
    try:
        with path.open(newline="", encoding="utf-8") as f:
            points = []
            for line, r in enumerate(csv.DictReader(f), start=2):
                points.append(_point(r))
            return points
    except (OSError, UnicodeDecodeError, csv.Error, ValueError, TypeError, KeyError) as exc:
        raise NotPmemlabFile(f"{path}: line {line} is not a curves row ({type(exc).__name__}: {exc})",
                             "draw the family again with pmemlab curves -o FILE") from None


def _point(r: dict[str, str]) -> CurvePoint:
    return CurvePoint(mix=int(r["mix_pct"]), delay_ticks=int(r["delay_ticks"]), bw_gbps=_num(r["bw_gbps"]),
                      bw_std=_num(r["bw_gbps_std"]), read_share=_num(r["read_pct_actual"]),
                      p50_ns=_num(r["lat_p50_ns"]), p90_ns=_num(r["lat_p90_ns"]), p99_ns=_num(r["lat_p99_ns"]),
                      p999_ns=_num(r["lat_p999_ns"]), max_ns=_num(r["lat_max_ns"]),
                      p50_std=_num(r["lat_p50_std_ns"]), repeats=int(r["repeats"]))

