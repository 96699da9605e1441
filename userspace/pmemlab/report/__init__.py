"""`pmemlab report RESULTS_DIR`: one self-contained HTML page (every figure inlined as a PNG data
URI, the style inline, no script, nothing fetched) and its Markdown twin (figures as PNG files
beside it), in the order a reviewer reads:

1. **Coverage**: each paper figure the results reproduce, its claim, the experiment, what this
   run deviates in (threads, instruction width, DIMMs and interleave, prefetchers, statistic,
   samples, scale) and the figures not run (plots/references.FIGURES holds the papers' side);
2. **Run conditions**, timing validity first: one row per target with the TSC's invariance and
   reliability, the clocksource, the timer step measured from the samples, the share of the run
   with interrupts off, the instruction widths against the papers', the CPU frequency source;
   then one row per target with its device, what it is (real, emulated, DRAM), its node and the
   threads' nodes and CPUs, interleave, page size and prefetchers; then the machine;
3. **Warnings**, timing validity first, each saying what it means for the figures; repeat-count
   notes collapsed into one line for a quick-scale run; a coefficient of variation that is the
   timer's step said as such;
4. the experiments in the papers' order, each with its claim, what ran (from the rows, at the
   scale actually run), the figure with one caption, and its per-point tables folded, in the
   figure's own statistic (plots/tables.py), with a link to the CSV.
5. the bandwidth-latency families (`pmemlab curves` CSVs), then a section per device card (every
   `card.json` of `pmemlab probe` under the directory, docs/card.md): its table, figures, each
   inference's evidence folded, what it did not decide and its run conditions; a card that does
   not read is one line of warning. A probe's probe.csv is not a sweep's results; a directory of
   cards or families and no sweep reports them alone.

The EMULATED mark is said once, at the top (the figures keep their faint watermark).

Noise rules (pmemlab.analysis.noise): a point whose coefficient of variation over repeats exceeds 5 %;
points with fewer than 3 repeats; steal time above 1 % of a run; points that failed or were
skipped; loop-bound points (the engine's column).

The page is assembled by report/page.py (pandas and matplotlib: the command imports it when it runs), a
module per part: coverage.py, conditions.py, validity.py (the warnings), experiments.py and noise.py (an
experiment's warnings), curves.py, cards.py; markup.py holds the helpers they share."""
