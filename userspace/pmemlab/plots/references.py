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
category), "x" a vertical line."""

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

    @property
    def citation(self) -> str:
        return f"{self.source}: {self.label}"


REFERENCES: tuple[Reference, ...] = (
    # idle-latency (FAST'20 fig 2, REPORT fig 7): the REPORT's summary states the values
    Reference("idle-latency", "pmem", "Read (rand)", 305.0, "y", "Optane rand read 305 ns", "REPORT summary of §3",
              "On average, random loads take 305 ns compared to 81 ns for DRAM accesses on the same platform.",
              "305 ns"),
    Reference("idle-latency", "dram", "Read (rand)", 81.0, "y", "DRAM rand read 81 ns", "REPORT summary of §3",
              "On average, random loads take 305 ns compared to 81 ns for DRAM accesses on the same platform.",
              "81 ns"),
    Reference("idle-latency", "pmem", "Read (seq)", 169.0, "y", "Optane seq read 169 ns", "REPORT summary of §3",
              "For sequential loads, latencies are 169 ns, suggesting some buffering or caching inside the "
              "Optane DC PMM.", "169 ns"),
    Reference("idle-latency", "pmem", "Write (clwb)", 94.0, "y", "Optane store+flush+fence 94 ns",
              "REPORT summary of §3",
              "To measure that latency, we issue a store followed by a cache flush instruction and a fence. "
              "That latency is 94 ns for Optane DC compared to 86 ns for DRAM.", "94 ns"),
    Reference("idle-latency", "dram", "Write (clwb)", 86.0, "y", "DRAM store+flush+fence 86 ns",
              "REPORT summary of §3",
              "To measure that latency, we issue a store followed by a cache flush instruction and a fence. "
              "That latency is 94 ns for Optane DC compared to 86 ns for DRAM.", "86 ns"),
    # tail-latency (FAST'20 fig 3)
    Reference("tail-latency", "pmem", "max", 50_000.0, "y", "Optane outliers up to 50 µs", f"{FAST} Fig. 3",
              "Optane memory has rare “outliers” where a small number of writes take up to 50 µs to complete "
              "(an increase of 100× over the usual latency).", "50 µs"),
    Reference("tail-latency", "pmem", "ccdf", 0.006 / 100, "y", "outliers are 0.006 % of accesses", f"{FAST} §3.3",
              "These spikes are rare (0.006% of the accesses), but their latency are 2 orders of magnitude higher "
              "than a common case Optane access.", "0.006%"),
    # bw-threads (FAST'20 fig 4, REPORT figs 9-10)
    Reference("bw-threads", "pmem", "load", 6.6, "y", "1 DIMM max read 6.6 GB/s", "REPORT summary of §3",
              "For a single Optane DC PMM, its max read bandwidth is 6.6 GB/s, whereas its max write bandwidth "
              "is 2.3 GB/s.", "6.6 GB/s", dimms=1),
    Reference("bw-threads", "pmem", "ntstore", 2.3, "y", "1 DIMM max write 2.3 GB/s", "REPORT summary of §3",
              "For a single Optane DC PMM, its max read bandwidth is 6.6 GB/s, whereas its max write bandwidth "
              "is 2.3 GB/s.", "2.3 GB/s", dimms=1),
    Reference("bw-threads", "pmem", "load", 39.4, "y", "6 DIMMs max read 39.4 GB/s", "REPORT §3.2.1 Obs. 4",
              "Our six interleaved Optane DC PMMs’ maximum read bandwidth is 39.4 GB/sec, and their maximum "
              "write bandwidth is 13.9 GB/sec.", "39.4 GB/sec", dimms=6),
    Reference("bw-threads", "pmem", "ntstore", 13.9, "y", "6 DIMMs max write (ntstore) 13.9 GB/s",
              "REPORT §3.2.1 Obs. 4",
              "Our six interleaved Optane DC PMMs’ maximum read bandwidth is 39.4 GB/sec, and their maximum "
              "write bandwidth is 13.9 GB/sec.", "13.9 GB/sec", dimms=6),
    # bw-size (FAST'20 fig 5, REPORT fig 11; the REPORT's summary fig 2: one thread, one DIMM)
    Reference("bw-size", "pmem", "load", 2.8, "y", "1 thread, 1 DIMM: read peak 2.8 GB/s", "REPORT summary Fig. 2",
              "Performance for read and write rises quickly until access size reaches 256 B and slowly climbs "
              "to a peak of 1.5 GB/s for stores and 2.8 GB/s for loads.", "2.8 GB/s", dimms=1),
    Reference("bw-size", "pmem", "store", 1.5, "y", "1 thread, 1 DIMM: write peak 1.5 GB/s", "REPORT summary Fig. 2",
              "Performance for read and write rises quickly until access size reaches 256 B and slowly climbs "
              "to a peak of 1.5 GB/s for stores and 2.8 GB/s for loads.", "1.5 GB/s", dimms=1),
    # flush-instr (FAST'20 fig 12): where the curves cross
    Reference("flush-instr", "pmem", "bandwidth", 256.0, "x", "ntstore fastest above 256 B", f"{FAST} §5.2",
              "Nontemporal stores also have highest bandwidth for accesses over 256 B.", "256 B"),
    Reference("flush-instr", "pmem", "latency", 512.0, "x", "ntstore below store+clwb above 512 B", f"{FAST} §5.2",
              "The data also shows that non-temporal stores have lower latency than store + clwb for accesses "
              "over 512 B.", "512 B"),
    # sfence-interval (FAST'20 fig 13)
    Reference("sfence-interval", "pmem", "peak", 256.0, "x", "bandwidth peaks at 256 B", f"{FAST} §5.2",
              "The result shows the bandwidth peaks when the write size is 256 B.", "256 B"),
    Reference("sfence-interval", "pmem", "degradation", 8.0 * 2**20, "x", "clwb after the write degrades over 8 MB",
              f"{FAST} §5.2",
              "Flushing during or after a medium sized write (beyond 1 kB) does not affect the bandwidth, but when "
              "the write size is over 8 MB, flushing after the write causes performance degradation",
              "8 MB"),
    # imc-contention (FAST'20 fig 15 and fig 5 right): six DIMMs, 4 KiB interleave
    Reference("imc-contention", "pmem", "dip", 4096.0, "x", "dip at 4 kB", f"{FAST} §5.3",
              "Thread starvation occurs more often as the access size grows, reaching maximum degradation at the "
              "interleaving size (4 kB).", "4 kB", dimms=6),
    Reference("imc-contention", "pmem", "peak", 24.0 * 1024, "x", "write peak at 24 kB", f"{FAST} §5.3",
              "The write data also show small peaks at 24 kB and 48 kB where accesses are perfectly distributed "
              "across the six DIMMs.", "24 kB", dimms=6),
    Reference("imc-contention", "pmem", "peak", 48.0 * 1024, "x", "write peak at 48 kB", f"{FAST} §5.3",
              "The write data also show small peaks at 24 kB and 48 kB where accesses are perfectly distributed "
              "across the six DIMMs.", "48 kB", dimms=6),
    # loaded-latency (REPORT fig 14): where the bandwidth tops out, six DIMMs
    Reference("loaded-latency", "pmem", "load seq", 38.9, "x", "Optane seq read tops out at 38.9 GB/s",
              "REPORT §3.2.5",
              "In particular, the Optane DC PMM’s read bandwidth tops out much lower limits than DRAM: 38.9 GB/sec "
              "for Optane DC vs 105.9 GB/sec for DRAM on sequential accesses, and 10.3 GB/sec for Optane DC vs "
              "70.4 GB/sec for DRAM on random accesses.", "38.9 GB/sec", dimms=6),
    Reference("loaded-latency", "dram", "load seq", 105.9, "x", "DRAM seq read tops out at 105.9 GB/s",
              "REPORT §3.2.5",
              "In particular, the Optane DC PMM’s read bandwidth tops out much lower limits than DRAM: 38.9 GB/sec "
              "for Optane DC vs 105.9 GB/sec for DRAM on sequential accesses, and 10.3 GB/sec for Optane DC vs "
              "70.4 GB/sec for DRAM on random accesses.", "105.9 GB/sec"),
    Reference("loaded-latency", "pmem", "load rand", 10.3, "x", "Optane rand read tops out at 10.3 GB/s",
              "REPORT §3.2.5",
              "In particular, the Optane DC PMM’s read bandwidth tops out much lower limits than DRAM: 38.9 GB/sec "
              "for Optane DC vs 105.9 GB/sec for DRAM on sequential accesses, and 10.3 GB/sec for Optane DC vs "
              "70.4 GB/sec for DRAM on random accesses.", "10.3 GB/sec", dimms=6),
    Reference("loaded-latency", "dram", "load rand", 70.4, "x", "DRAM rand read tops out at 70.4 GB/s",
              "REPORT §3.2.5",
              "In particular, the Optane DC PMM’s read bandwidth tops out much lower limits than DRAM: 38.9 GB/sec "
              "for Optane DC vs 105.9 GB/sec for DRAM on sequential accesses, and 10.3 GB/sec for Optane DC vs "
              "70.4 GB/sec for DRAM on random accesses.", "70.4 GB/sec"),
    Reference("loaded-latency", "pmem", "ntstore seq", 11.5, "x", "Optane seq write tops out at 11.5 GB/s",
              "REPORT §3.2.5",
              "We observe a similar effect on sequential writes: Optane DC PMM’s write bandwidth tops out around "
              "11.5 GB/sec while the DRAM achieves 52.3GB/sec when fully loaded.", "11.5 GB/sec", dimms=6),
    Reference("loaded-latency", "dram", "ntstore seq", 52.3, "x", "DRAM seq write tops out at 52.3 GB/s",
              "REPORT §3.2.5",
              "We observe a similar effect on sequential writes: Optane DC PMM’s write bandwidth tops out around "
              "11.5 GB/sec while the DRAM achieves 52.3GB/sec when fully loaded.", "52.3GB/sec"),
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
