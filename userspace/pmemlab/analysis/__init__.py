"""Analysis: what a family of measurements means, in pure Python: bandwidth-latency curves, and
inference from measured curves for the device card (knees, granularity, interleave, tails).

Its modules import nothing from plots/, cli/ or report.py: the layers point down."""

CARD_NAME = "card.json"
PROBE_CSV = "probe.csv"  # a probe's measurements (docs/card.md): not a sweep's results
