# The core's sources, headers and build flags, listed once for its three clients: the module
# (Kbuild; the module's build tree and the DKMS tree are copied by this list: Makefile
# module-tree), and the user backend's runner and the controller's library libplcore.so
# (userspace/runner/Makefile). A file added to the core is added here and nowhere else.
PL_CORE_SRC := ops.c gen.c hist.c engine.c chase.c place.c params.c apply.c check.c worker.c resultfmt.c facts.c ceil.c \
	       sig.c badrange.c tier.c
PL_CORE_HDR := pl_core.h pl_params.h pl_run.h pl_safe.h pl_tier.h shim.h walk.h ops.def params.def features.def

# Compiler flags of the generated loops (core/engine.c), for the module (Kbuild) and the user
# backend's runner (userspace/runner/Makefile) alike.
# -falign-loops=64: the loops GCC expects to iterate start a 64-byte line (method.md, Loop
# alignment; test_engine_code checks the per-access loops). The kernel packs loops tightly
# (-falign-loops=1), so where an inner loop fell across instruction-fetch lines moved with any edit
# to the code before it: the same loop, shifted by an unrelated change, gave 185 instead of
# 205 GB/s on a cache-resident buffer (256-B loads, Zen 4). Executed only as padding before a loop.
PL_ENGINE_CFLAGS := -falign-loops=64
