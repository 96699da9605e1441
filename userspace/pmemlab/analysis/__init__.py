"""Analysis: what results mean, in pure Python: result sets read into frames (resultset),
statistics (stats), noise, comparison (compare), advertised values, tier-bw's summaries (tiers),
bandwidth-latency curves, and inference from measured curves for the device card (knees,
granularity, interleave, tails).

Its modules import nothing from plots/, report/ or cli/: the layers point down
(tests/host/controller/test_imports.py)."""

CARD_NAME = "card.json"
PROBE_CSV = "probe.csv"  # a probe's measurements (docs/card.md): not a sweep's results
