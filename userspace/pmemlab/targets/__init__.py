"""Targets: what a target is, how it is named, opened and iterated (one place).

  spec   a target's load (`target=dram dram_size=1G` under a label), --targets and [sweep.targets]
         parsed, placeholders (@PMEM@, @PMEM_DRAM@, @CPULESS_NODE@) filled, the module's name for it
  open   the backend on a target: the module's named targets (/sys/kernel/pmemlab/targets/<name>,
         added with targets/add or found there, no reload), or the user backend re-pointed
  sweep  a config over several targets into one CSV (a target_label column): each target opened
         and probed once, its points run through its own backend

The command-line options of a target axis and `pmemlab sweep` over several targets are the CLI's
(pmemlab/cli/target_axis.py).

The modules are imported by name (`from pmemlab.targets.spec import TargetLoad`): this file
imports nothing, so the config package can be read without the sweep machinery.
"""
