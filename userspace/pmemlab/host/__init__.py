"""The host a measurement runs on: its paths and tools (probe), `pmemlab info`'s machine and
target facts (machine), the conditions of each run (runcond) and each thread's context switches
(taskstats), Optane media counters (ipmctl), the overwrite guard and bad-range listing (safety),
and a small file read whole, cheaply (readall)."""
