"""make bench's verdicts (scripts/bench): the median of the pair ratios, its distribution-free
interval, and the yes / parity / short rule. The bench itself prints numbers and fails nothing;
what it concludes from them is checked here."""
from __future__ import annotations

import math
import random
from types import ModuleType

import pytest

from testlib import load_script


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return load_script("bench")


def coverage(n: int, k: int) -> float:
    """P(k-th smallest <= median <= k-th largest) for n draws of a continuous distribution."""
    return 1 - 2 * sum(math.comb(n, j) for j in range(k)) / 2 ** n


@pytest.mark.parametrize("n,k", [(3, 1), (5, 1), (6, 1), (9, 2), (11, 2), (20, 6), (40, 14)])
def test_interval_is_the_widest_order_statistics_at_95(bench: ModuleType, n: int, k: int) -> None:
    values = random.Random(n).sample(range(1000), n)
    med, lo, hi = bench.median_ci(values)
    v = sorted(values)
    assert (lo, hi) == (v[k - 1], v[n - k])
    assert med == pytest.approx((v[(n - 1) // 2] + v[n // 2]) / 2)
    assert bench.interval_level(n, k) == pytest.approx(coverage(n, k))
    if n >= 6:  # the interval reaches 95 %, the next narrower one would not
        assert coverage(n, k) >= 0.95 > coverage(n, k + 1)


def test_the_interval_holds_the_median_as_often_as_it_says(bench: ModuleType) -> None:
    rng = random.Random(7)
    trials = 4000
    held = sum(lo <= 0.0 <= hi for _, lo, hi in (bench.median_ci([rng.gauss(0, 1) for _ in range(9)])
                                                  for _ in range(trials)))
    assert abs(held / trials - coverage(9, 2)) < 0.015


@pytest.mark.parametrize("ratios,verdict", [
    ([1.01, 1.02, 0.99, 1.03, 1.00, 1.01, 1.02, 0.98, 1.04], "yes"),        # median 1.01
    ([0.99, 1.01, 0.98, 1.02, 0.995, 1.00, 0.97, 1.03, 0.99], "parity"),    # median 0.99, interval to 1.02
    ([0.90, 0.92, 0.91, 0.93, 0.94, 0.92, 0.95, 0.96, 0.90], "short"),      # 2nd largest 0.95 < 1
    ([1.00] * 9, "yes"),
])
def test_verdicts(bench: ModuleType, ratios: list[float], verdict: str) -> None:
    bench.SUMMARY.clear()
    value, mark = bench.judge("row", ratios, ">= 1.00", 1.0)
    assert bench.SUMMARY == [("row", value, ">= 1.00", verdict)]
    med, lo, hi = bench.median_ci(ratios)
    assert value == f"{med:.3f} [{lo:.3f}, {hi:.3f}]"
    assert ("short" in mark) == (verdict == "short")


def test_pairs_are_taken_by_round(bench: ModuleType) -> None:
    """Value i of each side comes from round i, run alternately: the ratio of a round's two runs."""
    order: list[str] = []
    seq = iter(range(1, 100))

    def side(name: str):
        def run() -> float:
            order.append(name)
            return float(next(seq))
        return run
    bench.SAMPLES.clear()
    got = bench.best_of(4, {"a": side("a"), "b": side("b")})
    assert order == ["a", "b", "b", "a", "a", "b", "b", "a"]
    assert got == {"a": [1.0, 4.0, 5.0, 8.0], "b": [2.0, 3.0, 6.0, 7.0]}
    assert bench.pair_ratios(got["a"], got["b"]) == [0.5, 4 / 3, 5 / 6, 8 / 7]


def test_the_curves_section_judges_the_family_as_it_says(bench: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Section 8 runs the documented curves command and holds, per mix, the lightest load over the
    chase alone within 3 %, no monotonicity violation, and the chase's drift within 3 %."""
    import json
    from types import SimpleNamespace

    doc = {"probe_op": "chase", "threads": 2, "working_set": 256 << 20, "unloaded_ns": {"chase": 100.0},
           "unloaded_drift": {"chase": 1.04}, "notes": ["the probe alone drifted"],
           "summaries": [{"mix": 100, "points": 12, "peak_gbps": 9.5}, {"mix": 0, "points": 12, "peak_gbps": 7.0}],
           "checks": {"100": {"lightest_over_unloaded": 1.01, "monotone_violations": []},
                      "0": {"lightest_over_unloaded": 0.95, "monotone_violations": [[1, 2], [3, 4]]}}}
    seen: list[list[str]] = []

    def run(argv: list[str], **_: object) -> SimpleNamespace:
        seen.append(argv)
        return SimpleNamespace(stdout=json.dumps(doc))

    monkeypatch.setattr(bench.subprocess, "run", run)
    monkeypatch.setattr(bench, "SUMMARY", [])
    monkeypatch.setattr(bench, "say", lambda line="": None)
    bench.curves_dram(quick=False)
    (argv,) = seen
    assert argv[3:] == ["curves", "--backend", "user", "--target", "dram", "--mixes", "100,50,0", "--points", "12",
                        "--json"]
    verdicts = {row: v for row, _, _, v in bench.SUMMARY}
    assert verdicts == {"curves: lightest load over the chase alone, 100 % reads": "yes",
                        "curves: monotonicity violations, 100 % reads": "yes",
                        "curves: lightest load over the chase alone, 0 % reads": "short",
                        "curves: monotonicity violations, 0 % reads": "short",
                        "curves: the chase alone (chase) after the family over before": "short"}
