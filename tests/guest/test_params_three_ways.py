"""One parameter contract: the module, the runner and the controller judge every run alike.

Thousands of random parameter sets (tests/param_sets.py: the edges of every range, junk text, the
machine's limits, the six inputs that once drifted apart), each judged three ways in this one
process:
- the module: its sysfs files written in table order (a refused write is the verdict), then
  `check`, which judges the whole run as `run` does without starting it;
- the runner: one `pmemlab-run --check-batch` process on a DRAM target of the module's size and
  the module's tsc_khz, a set per line (the ops only the runner has are left out of the sets,
  and checked apart: the module and the controller refuse them, the runner does not);
- the controller: pmemlab.params (normalize, then check_point) with the facts `pmemlab run`
  gathers from the module's sysfs directory.
The same verdict (accepted, or the same errno) naming the same parameter, every time.
"""
from __future__ import annotations

import os
import re
import subprocess
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pmemlab.host import machine as host_machine, probe
from kmod_driver import Module
from param_sets import DRIFTED, RUNNER, Machine, RunnerJudge, Verdict, controller_verdict, errno_name, param_sets
from pmemlab import params as P
from pmemlab.backends.module import Module as ControllerModule

MiB = 1 << 20
EXAMPLES = int(os.environ.get("PMEMLAB_DIFF_EXAMPLES", "3000"))  # parameter sets judged
# sets per hypothesis example: under TCG hypothesis's own cost per example was as much as
# drawing ten sets; a failing batch still shrinks to the one set that disagrees
BATCH = 10


class ModuleJudge:
    """The module's verdict on a set: its writes in table order, then `check`; the values a set
    changed are put back to their defaults before the next one."""

    def __init__(self, mod: Module) -> None:
        self.mod = mod
        self.defaults = {name: mod.read(name) for name in P.PARAM_NAMES}
        self.changed: list[str] = []

    def named(self) -> str:
        """The parameter a refusal names: the first word of last_error."""
        m = re.match(r"[a-z_]+", self.mod.last_error())
        return m.group(0) if m else "-"

    def __call__(self, raw: dict[str, str]) -> Verdict:
        for name in self.changed:
            self.mod.write_raw(name, self.defaults[name].encode() + b"\n")
        self.changed = []
        for name, text in raw.items():
            try:
                self.mod.write_raw(name, text.encode() + b"\n")
            except OSError as exc:
                assert self.named() == name, (name, text, self.mod.last_error())
                return (errno_name(exc.errno or 0), name)
            self.changed.append(name)
        try:
            self.mod.write_raw("check", b"1\n")
        except OSError as exc:
            return (errno_name(exc.errno or 0), self.named())
        return ("ok", "-")


def same_meaning(raw: dict[str, str]) -> dict[str, str]:
    """The set without a load_target that is a well-formed name: on the module it names a named
    target (none here: ENOENT), on the runner it is a target spec it opens (dram, dram:0), so their
    verdicts differ by design; each is judged against its own targets in test_targets.py and
    tests/host/runner/test_runner_load_target.py. Texts no name may be stay: all three refuse them."""
    text = raw.get("load_target", "")
    if text and text.isascii() and text.isprintable() and " " not in text and len(text) <= 255:
        return {k: v for k, v in raw.items() if k != "load_target"}
    return raw


def test_module_runner_and_controller_give_the_same_verdict(module) -> None:
    with module(target="dram", dram_size="64M", dram_pages="4k") as sysfs:
        mod = Module(sysfs)
        tsc_khz = int(mod.read("tsc_khz"))
        target = ("target=dram", f"dram_size={mod.read('target_size')}", "dram_pages=4k", f"tsc_khz={tsc_khz}")
        # the runner must see this machine as the module does
        facts = subprocess.run([str(RUNNER), "--facts", *target], capture_output=True, text=True, check=True).stdout
        assert f"#fact cpu_features {mod.read('cpu_features')}\n" in facts
        assert mod.read("prefetch_control") == "none" and mod.read("fs_signature") == "none"
        online_cpus = int(host_machine.cpu_info(probe.HostPaths())["online_cpus"])
        controller_facts = host_machine.target_facts(ControllerModule(sysfs), online_cpus)
        online = controller_facts.online_cpus or 1
        judge = ModuleJudge(mod)
        runner = RunnerJudge(*target)
        seen: Counter[Verdict] = Counter()
        state_before, run_id = mod.state(), mod.read("run_id")

        machine = Machine(target_size=int(mod.read("target_size")), online=online, tsc_khz=tsc_khz)

        @settings(max_examples=-(-EXAMPLES // BATCH), deadline=None, database=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
        @given(batch=st.lists(param_sets(machine), min_size=BATCH, max_size=BATCH))
        def agree(batch: list[dict[str, str]]) -> None:
            for raw in map(same_meaning, batch):
                verdicts = (judge(raw), runner(raw), controller_verdict(raw, controller_facts))
                assert verdicts[0] == verdicts[1] == verdicts[2], (raw, verdicts, mod.last_error())
                seen[verdicts[0]] += 1

        try:
            agree()
            for raw in DRIFTED:  # accepted everywhere (threads above the online CPUs: refused everywhere)
                verdict = judge(raw)
                assert verdict == runner(raw) == controller_verdict(raw, controller_facts)
                assert verdict == (("ERANGE", "threads") if int(raw.get("threads", 1)) > online else ("ok", "-"))
            for op in ("copy", "ntcopy"):  # both backends run the copies (issue 35): all three accept them
                raw = {"mode": "latency", "op": op}
                assert judge(raw) == runner(raw) == controller_verdict(raw, controller_facts) == ("ok", "-"), raw
        finally:
            runner.close()
        print(f"{sum(seen.values())} sets: " + ", ".join(f"{v[0]} {v[1]} x{n}" for v, n in seen.most_common(12)))
        # every set was judged, the sets reached the combination, and `check` never started a run
        assert sum(seen.values()) >= EXAMPLES
        assert seen[("ok", "-")] > EXAMPLES // 20
        assert len({param for _, param in seen}) > 20
        assert mod.state() == state_before and mod.read("run_id") == run_id
