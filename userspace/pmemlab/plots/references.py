"""The seed papers' own numbers, drawn on our figures as reference markers with their citation.

Only values a paper states in its text are here (none read off a plot), each with the sentence
that states it, quoted as the paper's text has it (tests check that the quote holds the value).
REPORT = Izraelevitz et al., "Basic Performance Measurements of the Intel Optane DC Persistent
Memory Module", arXiv:1903.05714 (2019); FAST'20 = Yang et al., "An Empirical Guide to the
Behavior and Use of Scalable Persistent Memory", USENIX FAST 2020. Both measured a 2-socket
Cascade Lake with six 256 GB Optane DIMMs per socket; a value holds for that machine only.

`target` says which of our targets a value belongs to: "pmem" (any non-DRAM target) or "dram".
`dimms` limits a pmem value to a namespace of that many interleaved DIMMs (the papers' single
DIMM or six-DIMM set); None: any. `series` names the series it belongs to in the recipe's own
terms (an op, an access kind, a statistic); `axis` "y" draws a horizontal line (or a marker at a
category), "x" a vertical line; `at` makes it a point (a y value at x = at).

A value is drawn on a series of ours only where it was measured the same way: the same series
(op or access), the same statistic (`statistic`: mean, median, max, fraction, crossover), the
same thread count where the series has one (`threads`) and the same prefetcher state where both
are known (`prefetch`). Anywhere else its legend entry carries its own conditions (`conditions`,
e.g. "mean, prefetchers off"), so a reader never compares a mean with a median unawares.

FIGURES is the other table of this module: every paper figure the experiment catalogue
reproduces, with its claim and the conditions the paper measured it under (threads, instruction
width, DIMMs, prefetchers, statistic, samples): the report's coverage table sets this run's
conditions against them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

REPORT = "REPORT"
FAST = "FAST'20"


@dataclass(frozen=True)
class Reference:
    experiment: str
    target: str  # "pmem" or "dram"
    series: str
    value: float  # in the figure's unit (ns, GB/s, bytes, fraction)
    axis: str  # "y" or "x"
    label: str  # short text drawn beside the marker
    source: str  # paper and place: "REPORT §3.1.1"
    quote: str  # the sentence(s) stating the value, as in the paper
    stated: str  # the words of the quote that give the value, e.g. "305 ns"
    dimms: int | None = None
    statistic: str = "mean"  # what the value is: mean, median, max, fraction, crossover
    threads: int | None = None  # the paper's thread count for it (None: not stated, or the best of a sweep)
    prefetch: str | None = None  # "off": stated with the prefetchers off (MLC's idle latency, REPORT §3.1.1)
    conditions: str = ""  # its own conditions, said where no series of ours matches them
    at: float | None = None  # a point: the value at this other coordinate (x of a y value)

    @property
    def citation(self) -> str:
        return f"{self.source}: {self.label}"

    def matches(self, series: dict[str, object]) -> bool:
        """Whether a series measured under `series` conditions (series, statistic, threads,
        prefetch: what the recipe drew it from) is where this value belongs."""
        if series.get("series") != self.series or series.get("statistic") != self.statistic:
            return False
        if "threads" in series and self.threads is not None and series["threads"] != self.threads:
            return False
        if "threads" in series and self.threads is None:
            return False  # the best of a thread sweep (or unstated threads) is no fixed thread count's
        if series.get("prefetch") is not None and self.prefetch is not None and series["prefetch"] != self.prefetch:
            return False
        return True




def _idle(target: str, series: str, value: float, label: str, quote: str, stated: str) -> Reference:
    """An idle-latency value of the REPORT's summary: the mean of one thread's loads or stores
    with the prefetchers off (MLC, REPORT §3.1.1)."""
    return Reference("idle-latency", target, series, value, "y", label, "REPORT summary of §3", quote, stated,
                     statistic="mean", threads=1, prefetch="off", conditions="mean, prefetchers off")


_RANDOM_1DIMM = "1 thread, 1 DIMM, peak over access sizes"
_TOPS_OUT = "peak bandwidth of the load sweep"
_MAX_READ = ("For a single Optane DC PMM, its max read bandwidth is 6.6 GB/s, whereas its max write bandwidth "
             "is 2.3 GB/s.")
_SIX_MAX = ("Our six interleaved Optane DC PMMs’ maximum read bandwidth is 39.4 GB/sec, and their maximum "
            "write bandwidth is 13.9 GB/sec.")
_RANDOM_PEAK = ("Performance for read and write rises quickly until access size reaches 256 B and slowly climbs "
                "to a peak of 1.5 GB/s for stores and 2.8 GB/s for loads.")
_TOPS = ("In particular, the Optane DC PMM’s read bandwidth tops out much lower limits than DRAM: 38.9 GB/sec "
         "for Optane DC vs 105.9 GB/sec for DRAM on sequential accesses, and 10.3 GB/sec for Optane DC vs "
         "70.4 GB/sec for DRAM on random accesses.")
_WRITES_TOP = ("We observe a similar effect on sequential writes: Optane DC PMM’s write bandwidth tops out around "
               "11.5 GB/sec while the DRAM achieves 52.3GB/sec when fully loaded.")
_STORE_FENCE = ("To measure that latency, we issue a store followed by a cache flush instruction and a fence. "
                "That latency is 94 ns for Optane DC compared to 86 ns for DRAM.")
_RAND_LOADS = "On average, random loads take 305 ns compared to 81 ns for DRAM accesses on the same platform."

REFERENCES: tuple[Reference, ...] = (
    # idle-latency (FAST'20 fig 2, REPORT fig 7): the REPORT's summary states the values: means
    # ("on average") of single-thread latencies with prefetching off (MLC, REPORT §3.1.1)
    _idle("pmem", "Read (rand)", 305.0, "Optane rand read 305 ns", _RAND_LOADS, "305 ns"),
    _idle("dram", "Read (rand)", 81.0, "DRAM rand read 81 ns", _RAND_LOADS, "81 ns"),
    _idle("pmem", "Read (seq)", 169.0, "Optane seq read 169 ns",
          "For sequential loads, latencies are 169 ns, suggesting some buffering or caching inside the "
          "Optane DC PMM.", "169 ns"),
    _idle("pmem", "Write (clwb)", 94.0, "Optane store+flush+fence 94 ns", _STORE_FENCE, "94 ns"),
    _idle("dram", "Write (clwb)", 86.0, "DRAM store+flush+fence 86 ns", _STORE_FENCE, "86 ns"),
    # tail-latency (FAST'20 fig 3): one thread, 20 M 64 B writes per hotspot size
    Reference("tail-latency", "pmem", "max", 50_000.0, "y", "Optane outliers up to 50 µs", f"{FAST} Fig. 3",
              "Optane memory has rare “outliers” where a small number of writes take up to 50 µs to complete "
              "(an increase of 100× over the usual latency).", "50 µs", statistic="max", threads=1,
              conditions="max of 20 M writes"),
    Reference("tail-latency", "pmem", "ccdf", 0.006 / 100, "y", "outliers are 0.006 % of accesses, about 50 µs",
              f"{FAST} §3.3",
              "These spikes are rare (0.006% of the accesses), but their latency are 2 orders of magnitude higher "
              "than a common case Optane access.", "0.006%", statistic="fraction", threads=1, at=50_000.0,
              conditions="share of 20 M writes, at the outliers' latency"),
    # bw-threads (FAST'20 fig 4, REPORT figs 9-10): the maxima over the thread sweep
    Reference("bw-threads", "pmem", "load", 6.6, "y", "1 DIMM max read 6.6 GB/s", "REPORT summary of §3",
              _MAX_READ, "6.6 GB/s", dimms=1, conditions="the best thread count"),
    Reference("bw-threads", "pmem", "ntstore", 2.3, "y", "1 DIMM max write 2.3 GB/s", "REPORT summary of §3",
              _MAX_READ, "2.3 GB/s", dimms=1, conditions="the best thread count"),
    Reference("bw-threads", "pmem", "load", 39.4, "y", "6 DIMMs max read 39.4 GB/s", "REPORT §3.2.1 Obs. 4",
              _SIX_MAX, "39.4 GB/sec", dimms=6, conditions="the best of 1-23 threads"),
    Reference("bw-threads", "pmem", "ntstore", 13.9, "y", "6 DIMMs max write (ntstore) 13.9 GB/s",
              "REPORT §3.2.1 Obs. 4", _SIX_MAX, "13.9 GB/sec", dimms=6, conditions="the best of 1-23 threads"),
    # bw-size (FAST'20 fig 5, REPORT fig 11; the REPORT's summary fig 2: one thread, one DIMM)
    Reference("bw-size", "pmem", "load", 2.8, "y", "read peak 2.8 GB/s", "REPORT summary Fig. 2",
              _RANDOM_PEAK, "2.8 GB/s", dimms=1, threads=1, conditions=_RANDOM_1DIMM),
    Reference("bw-size", "pmem", "store", 1.5, "y", "write peak 1.5 GB/s", "REPORT summary Fig. 2",
              _RANDOM_PEAK, "1.5 GB/s", dimms=1, threads=1,
              conditions=_RANDOM_1DIMM + "; 'stores', the instruction not stated"),
    # flush-instr (FAST'20 fig 12): where the curves cross
    Reference("flush-instr", "pmem", "bandwidth", 256.0, "x", "ntstore fastest above 256 B", f"{FAST} §5.2",
              "Nontemporal stores also have highest bandwidth for accesses over 256 B.", "256 B",
              statistic="crossover", threads=6, conditions="6 threads, AVX-512 stores"),
    Reference("flush-instr", "pmem", "latency", 512.0, "x", "ntstore below store+clwb above 512 B", f"{FAST} §5.2",
              "The data also shows that non-temporal stores have lower latency than store + clwb for accesses "
              "over 512 B.", "512 B", statistic="crossover", threads=1, conditions="1 thread, AVX-512 stores"),
    # sfence-interval (FAST'20 fig 13)
    Reference("sfence-interval", "pmem", "peak", 256.0, "x", "bandwidth peaks at 256 B", f"{FAST} §5.2",
              "The result shows the bandwidth peaks when the write size is 256 B.", "256 B", statistic="crossover",
              threads=1, conditions="1 thread"),
    Reference("sfence-interval", "pmem", "degradation", 8.0 * 2**20, "x", "clwb after the write degrades over 8 MB",
              f"{FAST} §5.2",
              "Flushing during or after a medium sized write (beyond 1 kB) does not affect the bandwidth, but when "
              "the write size is over 8 MB, flushing after the write causes performance degradation",
              "8 MB", statistic="crossover", threads=1, conditions="1 thread"),
    # imc-contention (FAST'20 fig 15 and fig 5 right): six DIMMs, 4 KiB interleave
    Reference("imc-contention", "pmem", "dip", 4096.0, "x", "dip at 4 kB", f"{FAST} §5.3",
              "Thread starvation occurs more often as the access size grows, reaching maximum degradation at the "
              "interleaving size (4 kB).", "4 kB", dimms=6, statistic="crossover", conditions="6 DIMMs, 4 kB interleave"),
    Reference("imc-contention", "pmem", "peak", 24.0 * 1024, "x", "write peak at 24 kB", f"{FAST} §5.3",
              "The write data also show small peaks at 24 kB and 48 kB where accesses are perfectly distributed "
              "across the six DIMMs.", "24 kB", dimms=6, statistic="crossover", conditions="6 DIMMs, 4 kB interleave"),
    Reference("imc-contention", "pmem", "peak", 48.0 * 1024, "x", "write peak at 48 kB", f"{FAST} §5.3",
              "The write data also show small peaks at 24 kB and 48 kB where accesses are perfectly distributed "
              "across the six DIMMs.", "48 kB", dimms=6, statistic="crossover", conditions="6 DIMMs, 4 kB interleave"),
    # loaded-latency (REPORT fig 14): where the bandwidth tops out, six DIMMs
    Reference("loaded-latency", "pmem", "load seq", 38.9, "x", "Optane seq read tops out at 38.9 GB/s",
              "REPORT §3.2.5", _TOPS, "38.9 GB/sec", dimms=6, statistic="max", conditions=_TOPS_OUT),
    Reference("loaded-latency", "dram", "load seq", 105.9, "x", "DRAM seq read tops out at 105.9 GB/s",
              "REPORT §3.2.5", _TOPS, "105.9 GB/sec", statistic="max", conditions=_TOPS_OUT),
    Reference("loaded-latency", "pmem", "load rand", 10.3, "x", "Optane rand read tops out at 10.3 GB/s",
              "REPORT §3.2.5", _TOPS, "10.3 GB/sec", dimms=6, statistic="max", conditions=_TOPS_OUT),
    Reference("loaded-latency", "dram", "load rand", 70.4, "x", "DRAM rand read tops out at 70.4 GB/s",
              "REPORT §3.2.5", _TOPS, "70.4 GB/sec", statistic="max", conditions=_TOPS_OUT),
    Reference("loaded-latency", "pmem", "ntstore seq", 11.5, "x", "Optane seq write tops out at 11.5 GB/s",
              "REPORT §3.2.5", _WRITES_TOP, "11.5 GB/sec", dimms=6, statistic="max", conditions=_TOPS_OUT),
    Reference("loaded-latency", "dram", "ntstore seq", 52.3, "x", "DRAM seq write tops out at 52.3 GB/s",
              "REPORT §3.2.5", _WRITES_TOP, "52.3GB/sec", statistic="max", conditions=_TOPS_OUT),
)


def references(experiment: str, target: str, dimms: int | None = None) -> list[Reference]:
    """The values of `experiment` for a target ("pmem" or "dram") of `dimms` interleaved DIMMs
    (None: unknown, which keeps only the values that hold for any DIMM count)."""
    return [r for r in REFERENCES if r.experiment == experiment and r.target == target
            and (r.dimms is None or r.dimms == dimms)]


def withheld(experiment: str, target: str, dimms: int | None) -> list[Reference]:
    """The values of `experiment` for `target` that are not drawn because the target's DIMM count
    differs from the paper's (the caption says so)."""
    drawn = set(references(experiment, target, dimms))
    return [r for r in REFERENCES if r.experiment == experiment and r.target == target and r not in drawn]


def sources(refs: Iterable[Reference]) -> list[str]:
    return list(dict.fromkeys(r.source for r in refs))


@dataclass(frozen=True)
class PaperFigure:
    """A figure of the seed papers, what it claims (in our words) and how the paper measured it:
    the report's coverage table sets this run's conditions against these."""

    source: str  # "FAST'20 Fig. 2, REPORT Fig. 7"
    experiment: str  # the experiment that reproduces it (configs/NAME.toml)
    claim: str
    threads: str = ""  # the thread counts it used, as the paper states them ("" : not stated)
    thread_counts: tuple[int, ...] = ()  # the same as numbers (the largest is compared with ours)
    width: int | None = None  # bytes per instruction (None: not stated)
    targets: tuple[str, ...] = ()  # what it measured: "DRAM", "1 DIMM", "6 DIMMs", ...
    prefetch: str = "off"  # LATTester and MLC turned them off
    statistic: str = ""  # what its values are
    samples: str = ""  # what a point rests on


SIX = "6 DIMMs interleaved"
FIGURES: tuple[PaperFigure, ...] = (
    PaperFigure(f"{FAST} Fig. 2, {REPORT} Fig. 7", "idle-latency",
                "Optane reads take 2-3x DRAM's latency, random ones about 80 % longer than sequential ones "
                "(DRAM: 20 %); store+clwb+mfence and ntstore+mfence cost about what they cost on DRAM.",
                "1", (1,), 8, ("DRAM", SIX), statistic="mean, error bars one standard deviation"),
    PaperFigure(f"{FAST} Fig. 3", "tail-latency",
                "64 B writes into a small hotspot meet rare outliers of up to 50 µs (0.006 % of accesses, 100x "
                "the usual latency) on Optane, fewer as the hotspot grows, none on DRAM.",
                "1", (1,), None, ("DRAM", SIX), statistic="p99.9, p99.99, max",
                samples="20 M writes per hotspot size"),
    PaperFigure(f"{FAST} Fig. 4, {REPORT} Figs. 9-10", "bw-threads",
                "DRAM bandwidth scales with threads; Optane reads scale only across interleaved DIMMs, Optane writes "
                "peak at 1-4 threads and fall after; one DIMM reads 6.6 GB/s and writes 2.3 GB/s.",
                "1-23", tuple(range(1, 24)), 64, ("DRAM", "1 DIMM", SIX), statistic="bandwidth of sequential 256 B"),
    PaperFigure(f"{FAST} Fig. 5, {REPORT} Fig. 11", "bw-size",
                "Optane's random-access bandwidth collapses below 256 B (its XPLine) where DRAM's does not; the "
                "best thread count differs per op.",
                "the best of 1-16", (1, 2, 4, 8, 16), 64, ("DRAM", "1 DIMM", SIX),
                statistic="bandwidth at each op's best thread count"),
    PaperFigure(f"{FAST} Fig. 6", "emulation",
                "DRAM, local or remote, emulates neither Optane's latency nor its bandwidth under load.",
                targets=("DRAM", "remote DRAM", "emulated pmem", SIX), statistic="latency vs bandwidth"),
    PaperFigure(f"{FAST} Fig. 8", "ewr",
                "Bandwidth follows the effective write ratio (bytes the iMC sends over bytes the media writes).",
                targets=(SIX,), statistic="EWR (media counters) vs bandwidth"),
    PaperFigure(f"{FAST} Fig. 9", "xpbuffer",
                "Half-line rewrites stay cheap (EWR near 1) up to 64 XPLines (16 kB): the XPBuffer coalesces them.",
                targets=("Optane",), statistic="EWR vs region size"),
    PaperFigure(f"{FAST} Fig. 12", "flush-instr",
                "store+clwb has the lower latency for small writes, ntstore for writes over 512 B; ntstore has "
                "the highest bandwidth above 256 B.",
                "6 (bandwidth), 1 (latency)", (6, 1), 64, (SIX,), statistic="bandwidth; latency"),
    PaperFigure(f"{FAST} Fig. 13", "sfence-interval",
                "Bandwidth peaks at 256 B between sfences; flushing only after writes over 8 MB degrades it.",
                "1", (1,), 64, ("1 DIMM",), statistic="bandwidth"),
    PaperFigure(f"{FAST} Fig. 15", "imc-contention",
                "Threads that spread their accesses over more DIMMs lose bandwidth to iMC contention; the 4 kB "
                "interleave size is the worst access size.",
                "24 read / 6 ntstore", (24, 6), 64, (SIX,), statistic="bandwidth per DIMM"),
    PaperFigure(f"{FAST} Fig. 17", "numa-mix",
                "Remote Optane loses far more bandwidth than remote DRAM, the more writes in the mix.",
                "1 and 4", (1, 4), 64, (SIX, "remote Optane"), statistic="bandwidth vs read share"),
    PaperFigure(f"{REPORT} Fig. 8", "instr-latency",
                "Loads are slower on Optane than on DRAM-emulated pmem, stores followed by flushes cost the same; "
                "clwb and clflushopt beat clflush and ntstore for small accesses.",
                "1", (1,), 32, ("DRAM", "emulated pmem", SIX), statistic="median latency",
                samples="1 M accesses per point"),
    PaperFigure(f"{REPORT} Figs. 12-13", "mixed-threads",
                "Optane's bandwidth with readers and writers mixed falls below either alone.",
                "1-23", tuple(range(1, 24)), None, (SIX,), statistic="bandwidth"),
    PaperFigure(f"{REPORT} Fig. 14", "loaded-latency",
                "Optane's latency rises at a far lower bandwidth than DRAM's and depends more on the pattern.",
                targets=("DRAM", SIX), statistic="latency vs achieved bandwidth"),
    PaperFigure("Mason et al. (seeds/001)", "page-size",
                "Mapping pmem with 4 KiB pages instead of 2 MiB ones costs latency and bandwidth (TLB misses).",
                targets=("DRAM", "pmem"), statistic="latency and bandwidth vs working set"),
)
EXPERIMENT_ORDER = tuple(dict.fromkeys(f.experiment for f in FIGURES))  # the report's sections, in the papers' order


def figure_of(experiment: str) -> PaperFigure | None:
    """The paper figure an experiment reproduces (None for a sweep of one's own)."""
    return next((f for f in FIGURES if f.experiment == experiment), None)
