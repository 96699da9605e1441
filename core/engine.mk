# Compiler flags of the generated loops (core/engine.c), for the module (Kbuild) and the user
# backend's runner (userspace/runner/Makefile) alike.
# -falign-loops=64: the loops GCC expects to iterate start a 64-byte line (method.md, Loop
# alignment; test_engine_code checks the per-access loops). The kernel packs loops tightly
# (-falign-loops=1), so where an inner loop fell across instruction-fetch lines moved with any edit
# to the code before it: the same loop, shifted by an unrelated change, gave 185 instead of
# 205 GB/s on a cache-resident buffer (256-B loads, Zen 4). Executed only as padding before a loop.
PL_ENGINE_CFLAGS := -falign-loops=64
