# pmemlab top-level Makefile.
#   make                  build the module (against KDIR) and the userspace parts
#   make KDIR=/lib/modules/<ver>/build   build the module against those headers (FRESH=1: from scratch)
#   make module-tree DEST=DIR   the module's source tree (Kbuild, kmod/, core/ as core/core.mk lists it) into DIR
#   make check-build      build against every installed headers tree with W=1; fail on warnings
#   make check            quick: build, one guest boot, load, every op and pattern, unload, clean log
#   make docs             write userspace/pmemlab/schema.json and docs/interface.md's run-parameter table from core/params.def
#   make test             install what is missing, then host tests, then guest tests in the VM
#   make soak [SOAK_MINUTES=30]   the long soak: back-to-back runs in one guest (make test runs 2 min)
#   make test-kasan       fuzz and teardown guest tests on a KASAN/lockdep/kmemleak kernel (not in make test)
#   make demo             five headline experiments at the quick scale on pmem and DRAM, one CSV each,
#                         plotted here with a report (the sweeps in the emulated-NVDIMM guest without
#                         pmem; TARGET=/dev/pmemN on a machine with pmem); in the guest it also renders
#                         docs/gallery at the commit the tree is at (GALLERY= to leave it)
#   make sweep CONFIG=configs/x.toml [TARGET=/dev/pmemN | VM=1] [SCALE=quick] [PMEM_DRAM=/dev/pmemM]
#                         [TARGETS=pmem,dram]   one sweep over its targets into results/NAME.csv
#   make sweep-all [TARGET=... | VM=1] [SCALE=quick] [TARGETS=...]   every experiment of configs/
#   make plots            render every CSV under results/ into plots/
#   make bench [BENCH_ARGS="--quick"]   user backend vs likwid-bench, latency sweep, callgrind Ir/line

SHELL := /bin/bash
TOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
VENV := $(TOP)/.venv
PYTHON := $(VENV)/bin/python

# KDIR: the running kernel's headers, else the newest installed tree (said out loud).
ifeq ($(origin KDIR),undefined)
  RUNNING_KDIR := /lib/modules/$(shell uname -r)/build
  ifneq ($(wildcard $(RUNNING_KDIR)/Makefile),)
    KDIR := $(RUNNING_KDIR)
  else
    KDIR := $(lastword $(sort $(wildcard /lib/modules/*/build)))
    KDIR_NOTE := make: no headers for the running kernel $(shell uname -r); building against $(KDIR)
  endif
endif
# The release the headers belong to (Debian's include/config/kernel.release is not it on 6.1).
KVER = $(shell sed -n 's/^\#define UTS_RELEASE "\(.*\)"/\1/p' $(KDIR)/include/generated/utsrelease.h 2>/dev/null)
# Headers in a build root (scripts/build-root: the matrix's 5.10 and 7.2) build inside that root,
# with the compiler and C library their kernel was built with; the repository is bound into it at
# its own path, so M= and every message read the same.
BUILD_ROOT = $(shell $(TOP)/scripts/build-root of $(KDIR))
KBUILD = $(if $(BUILD_ROOT),$(TOP)/scripts/build-root run $(BUILD_ROOT) -- make -C $(patsubst $(BUILD_ROOT)%,%,$(KDIR)),$(MAKE) -C $(KDIR))

.PHONY: all module module-tree userspace deps docs check-build check test soak test-host test-guest test-kasan demo sweep sweep-all plots bench clean help dkms-install dkms-remove

all: module userspace

help:
	@awk 'NR > 1 && /^#/ { sub(/^# ? ?/, ""); print; next } NR > 1 { exit }' $(TOP)/Makefile

deps:
	@$(TOP)/scripts/install-deps

# The module's source tree: Kbuild, the kernel glue and the core's files as core/core.mk lists them
# (the tree build/<release>/ builds in, and the DKMS tree; `make module-tree DEST=DIR` writes it).
include $(TOP)/core/core.mk
MODULE_TREE = Kbuild $(patsubst $(TOP)/%,%,$(wildcard $(TOP)/kmod/*.[ch])) core/core.mk $(addprefix core/,$(PL_CORE_SRC) $(PL_CORE_HDR))

module-tree:
	@test -n "$(DEST)" || { echo "make: give DEST=DIR" >&2; exit 1; }
	@mkdir -p $(DEST)
	@cd $(TOP) && cp -a --parents $(MODULE_TREE) $(abspath $(DEST))/

# Every target that runs the controller needs userspace too: pmemlab judges every run with
# libplcore.so (the module's parameter table and validator) and the guest runs the user backend.

# Out-of-tree build in build/<kernel release>/ so that trees for several kernels coexist and
# the sources stay free of build products.
module:
	@if [ -z "$(KDIR)" ] || [ ! -f "$(KDIR)/Makefile" ]; then \
		echo "make: no kernel headers found (KDIR=$(KDIR)); run scripts/install-deps" >&2; exit 1; fi
	$(if $(KDIR_NOTE),@echo "$(KDIR_NOTE)" >&2)
	$(if $(FRESH),@rm -rf $(TOP)/build/$(KVER))
	@mkdir -p $(TOP)/build/$(KVER)
	@$(MAKE) -s -C $(TOP) module-tree DEST=$(TOP)/build/$(KVER)
	+$(KBUILD) M=$(TOP)/build/$(KVER) $(if $(W),W=$(W)) modules
	@echo "make: built $(TOP)/build/$(KVER)/pmemlab.ko"

userspace:
	@if [ -f $(TOP)/userspace/Makefile ]; then $(MAKE) -C $(TOP)/userspace; fi

check-build:
	@$(TOP)/scripts/check-build

docs: userspace
	@$(PYTHON) $(TOP)/scripts/update-docs

test:
	@$(TOP)/scripts/run-tests

check:
	@$(TOP)/scripts/check

# The soak alone, long: 30 minutes show a leak of under 1 KiB per run (see test_back_to_back_runs_soak).
SOAK_MINUTES ?= 30
soak: deps userspace
	@$(TOP)/scripts/vm --timeout $$(( $(SOAK_MINUTES) * 60 + 1200 )) -- env PMEMLAB_SOAK_MINUTES=$(SOAK_MINUTES) \
		$(PYTHON) -m pytest -q -s -p no:cacheprovider -m soak tests/guest

test-host: deps userspace
	@$(PYTHON) -m pytest -q $(TOP)/tests/host

test-guest: deps userspace
	@$(TOP)/scripts/vm -- $(PYTHON) -m pytest -q tests/guest

# Builds the debug kernel once (scripts/debug-kernel), then one guest boot of it.
test-kasan: deps userspace
	@$(TOP)/scripts/debug-kernel test

# Without TARGET, demo runs in the emulated-NVDIMM guest; sweep and sweep-all run where the
# module is loaded (or on TARGET), or in the guest with VM=1.
# The demo: the papers' headline figures at the quick scale, pmem and DRAM in one CSV each (README
# states the time it takes).
DEMO_CONFIGS ?= $(addprefix configs/,idle-latency.toml bw-threads.toml bw-size.toml tail-latency.toml flush-instr.toml)
DEMO_SCALE ?= quick
DEMO_TARGETS ?= pmem,dram
# the gallery (README): make demo in the emulated guest renders it at the commit the tree is at;
# GALLERY= leaves it alone, GALLERY=DIR renders it elsewhere (or from a TARGET=/dev/pmemN run)
GALLERY ?= $(if $(TARGET),,docs/gallery)
WHERE = $(if $(TARGET),--target $(TARGET),$(if $(VM),--vm)) $(if $(PMEM_DRAM),--pmem-dram $(PMEM_DRAM)) \
	$(if $(TARGETS),--targets $(TARGETS))

demo: deps userspace
	@$(TOP)/scripts/run-configs $(if $(TARGET),--target $(TARGET),--vm) --targets $(DEMO_TARGETS) \
		--scale $(DEMO_SCALE) $(if $(GALLERY),--gallery $(GALLERY)) $(DEMO_CONFIGS)

sweep: deps userspace
	@test -n "$(CONFIG)" || { echo "make: give CONFIG=configs/<name>.toml" >&2; exit 1; }
	@$(TOP)/scripts/run-configs $(WHERE) $(if $(SCALE),--scale $(SCALE)) $(CONFIG)

sweep-all: deps userspace
	@$(TOP)/scripts/run-configs $(WHERE) $(if $(SCALE),--scale $(SCALE)) $(filter-out $(TOP)/configs/default.toml,$(wildcard $(TOP)/configs/*.toml))

plots: deps userspace
	@$(PYTHON) -m pmemlab plot-all $(TOP)/results -o $(TOP)/plots

# The user backend side by side with likwid-bench on this machine's DRAM (scripts/bench --help).
bench: deps userspace
	@$(PYTHON) $(TOP)/scripts/bench $(BENCH_ARGS)

# DKMS: the version comes from dkms.conf; the source tree is what Kbuild needs and no more (module-tree).
DKMS_VERSION = $(shell sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' $(TOP)/dkms.conf)
dkms-install:
	rm -rf /usr/src/pmemlab-$(DKMS_VERSION)
	mkdir -p /usr/src/pmemlab-$(DKMS_VERSION)
	$(MAKE) -s -C $(TOP) module-tree DEST=/usr/src/pmemlab-$(DKMS_VERSION)
	cp -a $(TOP)/dkms.conf /usr/src/pmemlab-$(DKMS_VERSION)/
	dkms add -m pmemlab -v $(DKMS_VERSION)
	dkms build -m pmemlab -v $(DKMS_VERSION)
	dkms install -m pmemlab -v $(DKMS_VERSION)

dkms-remove:
	-dkms remove -m pmemlab -v $(DKMS_VERSION) --all
	rm -rf /usr/src/pmemlab-$(DKMS_VERSION)

clean:
	rm -rf $(TOP)/build
	@if [ -f $(TOP)/userspace/Makefile ]; then $(MAKE) -C $(TOP)/userspace clean; fi
