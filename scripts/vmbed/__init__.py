"""The emulated-NVDIMM test bed behind scripts/vm, by concept: paths and small helpers (common),
the kernels a guest boots (kernels), the QEMU it runs on (qemu), the guest's NUMA, HMAT, SMT and
CXL topology (topology), the module and userspace builds on the host (build), the guest's own
script (guest.sh, rendered by guestscript), QEMU under a watchdog (runner), the kernel-log
verdict (logscan), one boot end to end (boot) and the command line (cli).
Only stdlib here: scripts/vm runs before anything else is installed in the venv."""
