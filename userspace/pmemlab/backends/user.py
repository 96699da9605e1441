"""The user backend: runs the module's own kernels in userspace (userspace/runner/pmemlab-run).

`UserBackend` implements `protocol.Backend` as `module.Module` does (facts, target_facts, run ->
RunOutcome with the module's `result` and `histogram` text), so `pmemlab run` and
`pmemlab sweep` drive either backend and write the same CSV columns.

Targets: `dram` / `dram:NODE` (anonymous memory bound to NODE with libnuma), a file on a
DAX file system (mapped with MAP_SYNC where the kernel allows it), or a devdax device; `cxl`:
the machine's CXL memory (`user_target`: the node of a CXL ram region onlined as system RAM, as
the module's `cxl dram dram_node=N` of README, else the devdax device of one). Any other bare
name (no `/`) that is no file here is refused in one line: named targets are the module's.
Target options (the module's load-time parameters, given as KEY=VALUE next to the run
parameters): `dram_size`, `dram_pages` (4k | 2m = THP | hugetlb = hugetlbfs), `dram_node`, or
`dram_nodes` with `dram_weights` (pages over several nodes in weighted round robin; `dram_node_strict=0`
runs a placement that is off instead of refusing it), `size` (bytes of a file to use, created/extended for write runs), `allow_overwrite`, `allow_file`
(a file that is not on a DAX file system: page cache, refused without it), `tsc_khz`.
Runs go to one `pmemlab-run --serve` process per target (backends/served.py): it maps the
target and pre-faults it once, before anything is timed, and prints the facts of that mapping
once (`#fact` lines: page size obtained, THP/hugetlbfs/4k, MAP_SYNC); each point is a line of
parameters to it, judged by the same validator as a one-shot run. `run()` returns the facts of
the mapping the run ran on with the outcome (`RunOutcome.conditions`), so each CSV row carries
the conditions of its own run's mapping, not those of the `--facts` probe. A point the process
does not answer in time is aborted; a process that dies is reported on that point's row; either
way the next point starts a new process, as does a point that needs another mapping (another
load_target, a write run on a file mapped for reading). `persistent=False` (or
PMEMLAB_RUNNER_ONESHOT=1) runs a process per point, as `pmemlab-run`'s command line does.
`close()` ends the process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from pmemlab.host import cxl
from pmemlab import params as P
from pmemlab.errors import BadInput, Interrupted, ModuleNotLoaded, ParamRefused, PmemlabError, WrongTarget
from pmemlab.backends.protocol import BackendKind, RunOutcome, load_identity
from pmemlab.backends.facts import PLACEMENT_FACTS, parse_fact_lines
from pmemlab.backends.served import Answer, ServedRunner

# facts of a run's own mapping that go into its CSV rows (condition columns)
RUN_CONDITIONS = ("target_kind", "target_size", "target_node", "target_page_size", "target_pages", "map_sync",
                  *PLACEMENT_FACTS)
# KEY=VALUE arguments that configure the user backend's target, not a run
TARGET_KEYS = ("backend", "target", "dram_size", "dram_pages", "dram_node", "dram_nodes", "dram_weights",
               "dram_node_strict", "size", "allow_overwrite", "allow_file", "tsc_khz")


CXL_NAME = "cxl"  # the one name the user backend knows besides dram (user_target)
BARE_NAME = re.compile(r"[a-z0-9_-]{1,31}")  # a name of the module's named targets (docs/interface.md)
SYS = Path("/sys")  # where user_target reads the CXL regions (tests point it at a fixture tree)
GIVE = "dram, dram:NODE (pmemlab info lists the nodes), /dev/daxX.Y or a file's path"
START_TIMEOUT_S = 300.0  # a served runner's start: mapping and pre-faulting its target
ABORT_GRACE_S = 5.0  # a timed-out point: SIGINT, then this long for its answer, then SIGKILL


def user_target(spec: str, what: str = "target", sys: Path | None = None) -> str:
    """The user backend's target for `spec`: `cxl` -> the machine's CXL memory (`dram:N`, the node a
    CXL ram region was onlined into, else `/dev/daxN.M` of one kept as devdax: cxl.user_memory);
    dram, dram:NODE and paths as they are; any other bare name (the module's named targets look
    so) only when it is a file here, never a file to be made. BadInput otherwise, the advice in
    the cause (a sweep's target axis shows only that)."""
    if spec == "dram" or spec.startswith("dram:") or "/" in spec or not BARE_NAME.fullmatch(spec):
        return spec
    if spec == CXL_NAME:
        found = cxl.user_memory(sys or SYS)
        if not found:
            raise BadInput(f"user backend {what} cxl: no CXL ram region here, onlined as a node or kept as a devdax "
                           f"device (pmemlab info, section cxl)", f"give {GIVE}")
        return found[0][0]
    if os.path.exists(spec):
        return spec
    raise BadInput(f"user backend {what} {spec}: no file {spec} here, and named targets are the module's "
                   f"(/sys/kernel/pmemlab/targets/{spec})", f"on the user backend give {GIVE.replace(', /dev', ', cxl, /dev')}")


class UserRunOutcome(RunOutcome):
    """A user-backend run: its `conditions` are the facts of the run's own mapping."""


def run_conditions(facts: Mapping[str, Any]) -> dict[str, Any]:
    """The condition columns one run's `#fact` lines give (target_page_size 0, which the runner
    prints when the kernel does not show the pages, as unknown: an empty cell)."""
    cond = {k: facts[k] for k in RUN_CONDITIONS if k in facts}
    if cond.get("target_page_size") == 0:
        cond["target_page_size"] = None
    return cond


def runner_path() -> Path:
    env = os.environ.get("PMEMLAB_RUNNER")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[2] / "runner" / "pmemlab-run"


class UserBackend:
    """pmemlab-run on one target, seen like the module (a `protocol.Backend`)."""

    kind: BackendKind = "user"

    def __init__(self, target: str, options: Mapping[str, str] | None = None, runner: Path | None = None,
                 persistent: bool | None = None) -> None:
        if not target:
            raise PmemlabError("the user backend needs a target",
                               "give target=dram, target=dram:NODE, a file on a DAX file system or /dev/daxX.Y")
        self.asked = target  # as given (cxl); self.target is what pmemlab-run opens (dram:2)
        self.target = user_target(target)
        self.options = {k: v for k, v in (options or {}).items() if k not in ("backend", "target")}
        self.runner = runner or runner_path()
        self.root = Path(f"user:{target}")  # shown where the module's sysfs directory would be
        self._facts: dict[str, Any] | None = None
        self._last_error = ""
        self.persistent = os.environ.get("PMEMLAB_RUNNER_ONESHOT") != "1" if persistent is None else persistent
        self._served: ServedRunner | None = None
        self._served_cond: dict[str, Any] = {}
        self.starts = 0  # served processes started

    # -- the Backend protocol -------------------------------------------------
    def loaded(self) -> bool:
        return self.runner.exists() and os.access(self.runner, os.X_OK)

    def require_loaded(self) -> None:
        if not self.loaded():
            raise ModuleNotLoaded(f"the userspace runner {self.runner} is not built",
                                  "make userspace (or set PMEMLAB_RUNNER)")

    def _args(self) -> list[str]:
        return [str(self.runner), f"target={self.target}", *(f"{k}={v}" for k, v in self.options.items())]

    def facts(self) -> dict[str, Any]:
        if self._facts is None:
            self.require_loaded()
            res = subprocess.run([*self._args(), "--facts"], capture_output=True, text=True, timeout=120)
            if res.returncode != 0:
                reason = _reason(res.stderr)
                where = "" if self.target in reason else f"target {self.target}: "
                # exit 2: the runner refused the target as given (nothing ran, nothing changed)
                error = BadInput if res.returncode == 2 else PmemlabError
                raise error(f"user backend: {where}{reason}",
                            "check the target and its options (dram_size, dram_pages, size, allow_file)")
            self._facts = parse_facts(res.stdout)
        return dict(self._facts)

    def target_facts(self, online_cpus: int | None = None) -> P.TargetFacts:
        f = self.facts()
        return P.TargetFacts(
            target_size=f.get("target_size") if isinstance(f.get("target_size"), int) else None,
            cpu_features=frozenset(str(f.get("cpu_features", "")).split()),
            widths=tuple(int(w) for w in str(f.get("widths", "")).split()) or None,
            prefetch_control="none",
            online_cpus=online_cpus,
            extra=f,
            allow_overwrite=self.options.get("allow_overwrite") == "1",
        )

    def module_parameters(self) -> dict[str, str]:
        return {"backend": "user", "runner": str(self.runner), "target": self.target, **self.options}

    def current_params(self) -> dict[str, str]:
        return {}

    def read_opt(self, name: str) -> str | None:
        if name == "state":
            return "idle"
        if name == "last_error":
            return self._last_error
        v = self.facts().get(name)
        return None if v is None else str(v)

    def read(self, name: str) -> str:
        v = self.read_opt(name)
        if v is None:
            raise PmemlabError(f"user backend has no `{name}`", "")
        return v

    def check_target(self, want: str | None) -> None:
        # a config's module target (an fsdax block device) says nothing about the user backend's
        if want and want not in (self.target, self.asked) and not want.startswith("/dev/pmem"):
            raise WrongTarget(f"the user backend runs on target={self.target}, not {want}",
                              f"give target={want}")

    def state(self) -> str:
        return "idle"

    def last_error(self) -> str:
        return self._last_error

    def identity(self) -> dict[str, Any]:
        return load_identity(self.kind, self.module_parameters())

    def failure_fix(self, status: str) -> str:
        return "the runner's reason is above; change the parameters or the target and run again"

    def abort(self) -> None:
        """Nothing runs between calls: a run in progress is stopped by run() itself."""

    @property
    def restarts(self) -> int:
        """Served processes started after the first (a crash, a timeout, another mapping)."""
        return max(0, self.starts - 1)

    def close(self) -> None:
        """End the served runner (the sweep is over); the next run starts another."""
        if self._served is not None:
            self._served.close()
            self._served = None

    def __enter__(self) -> UserBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # a backend dropped without close() (a caller's one-off run) ends its served runner: a
        # process left mapping a file keeps its file system busy (umount fails) and its memory held
        try:
            self.close()
        except Exception:  # interpreter shutdown: the process goes with its stdin
            pass

    def run(self, values: Mapping[str, Any], timeout_s: float = 600.0, poll_s: float = 0.002,
            on_poll: Callable[[], None] | None = None) -> RunOutcome:
        self.require_loaded()
        point = [f"{k}={P.to_sysfs(k, v)}" for k, v in values.items() if k in P.PARAMS and k != "load_target"]
        if values.get("load_target"):  # cxl as the target is
            point.append(f"load_target={user_target(str(values['load_target']), 'load_target')}")
        if any(any(c.isspace() for c in a) for a in point):
            # a line of --serve splits at white space: such a value goes on a command line
            return self._oneshot(point, values, timeout_s)
        if not values.get("samples"):
            return self._run_point(point, values, timeout_s, None)
        with tempfile.TemporaryDirectory(prefix="pmemlab-run-") as tmp:
            samples = Path(tmp) / "raw_samples"
            return self._run_point([*point, f"raw_samples={samples}"], values, timeout_s, samples)

    def _oneshot(self, point: list[str], values: Mapping[str, Any], timeout_s: float) -> RunOutcome:
        args = [*self._args(), *point]
        if not values.get("samples"):
            return self._run(args, values, timeout_s, None)
        with tempfile.TemporaryDirectory(prefix="pmemlab-run-") as tmp:
            samples = Path(tmp) / "raw_samples"
            return self._run([*args, f"raw_samples={samples}"], values, timeout_s, samples)

    def _run_point(self, point: list[str], values: Mapping[str, Any], timeout_s: float,
                   samples: Path | None) -> RunOutcome:
        if not self.persistent:
            return self._run([*self._args(), *point], values, timeout_s, samples)
        started = time.time()
        t0 = time.monotonic()
        try:
            for attempt in range(2):
                if self._served is None or not self._served.alive():
                    failed = self._start_served(point, values, started, t0)
                    if failed is not None:
                        return failed
                assert self._served is not None
                ans = self._served.ask(" ".join(point), timeout_s)
                if ans.how == "end" and ans.lines and ans.lines[-1].startswith("#state restart") and attempt == 0:
                    self.close()  # another mapping: a process for it
                    continue
                return self._served_outcome(ans, values, timeout_s, started, t0, samples)
            raise PmemlabError(f"user backend: the runner asked twice for another mapping for "
                               f"{' '.join(point)}", "run the point alone (pmemlab run backend=user ...)")
        except KeyboardInterrupt:
            if self._served is not None:
                if self._served.interrupt(ABORT_GRACE_S).how != "end":
                    self._served.kill()
                self.close()
            raise Interrupted("interrupted (Ctrl-C); the user backend's run was aborted") from None

    def _start_served(self, point: list[str], values: Mapping[str, Any], started: float,
                      t0: float) -> RunOutcome | None:
        """A served runner for this target, mapped for `point` (its write runs, its load_target);
        None when it is ready, else the point's failed outcome."""
        self.close()
        self.starts += 1
        served = ServedRunner([*self._args(), "--serve", *(a for a in point if not a.startswith("raw_samples="))])
        ans = served.start(START_TIMEOUT_S)
        if ans.how == "end":
            self._served = served
            facts = parse_facts(ans.text)
            if self._facts is None:
                self._facts = facts
            self._served_cond = run_conditions(facts)
            return None
        served.kill()
        served.close()
        if ans.how == "died" and ans.returncode == 2:
            self._last_error = _reason(ans.stderr)
            raise ParamRefused("run", "1", self._last_error)
        why = (f"the runner did not map its target within {START_TIMEOUT_S:g} s" if ans.how == "timeout"
               else f"the runner did not start: {_exit_text(ans.returncode)}")
        self._last_error = _reason(ans.stderr) or why
        return UserRunOutcome("error:runner did not start", error=f"{why}: {self._last_error}" if
                              self._last_error != why else why, started=started,
                              elapsed_s=time.monotonic() - t0, params=dict(values))

    def _served_outcome(self, ans: Answer, values: Mapping[str, Any], timeout_s: float, started: float,
                        t0: float, samples: Path | None) -> RunOutcome:
        assert self._served is not None
        pid = self._served.pid
        cond = dict(self._served_cond)
        if ans.how == "timeout":
            if self._served.interrupt(ABORT_GRACE_S).how != "end":
                self._served.kill()  # it does not answer: the next point starts another
            return UserRunOutcome("timeout", error=f"no result after {timeout_s:g} s; run aborted",
                                  started=started, elapsed_s=time.monotonic() - t0, params=dict(values),
                                  conditions=cond, pid=pid)
        elapsed = time.monotonic() - t0
        if ans.how == "died":
            self.close()
            if ans.returncode == 2:  # refused in the run's set-up (as one-shot's exit 2)
                self._last_error = _reason(ans.stderr)
                raise ParamRefused("run", "1", self._last_error)
            died = f"runner died during the run ({_exit_text(ans.returncode)}); restarted for the next point"
            self._last_error = _reason(ans.stderr) or died
            return UserRunOutcome(f"error:{died}", result=split_output(ans.text)[0], error=self._last_error,
                                  started=started, elapsed_s=elapsed, params=dict(values), conditions=cond,
                                  pid=pid)
        if ans.lines and ans.lines[0].startswith("#refused "):
            self._last_error = ans.lines[0][len("#refused "):].partition(" ")[2]
            raise ParamRefused("run", "1", self._last_error)
        result, hist, state = split_output(ans.text)
        if state != "done":
            reason = state.split(":", 1)[1] if state.startswith("error:") else state
            self._last_error = _reason(ans.stderr) or reason
            return UserRunOutcome(f"error:{reason}", result=result, error=self._last_error, started=started,
                                  elapsed_s=elapsed, params=dict(values), conditions=cond, pid=pid)
        raw = samples.read_bytes() if samples is not None and samples.exists() else b""
        return UserRunOutcome("done", result=result, started=started, elapsed_s=elapsed, params=dict(values),
                              histogram=hist, run_id=None, conditions=cond, raw_samples=raw, pid=pid)

    def _run(self, args: list[str], values: Mapping[str, Any], timeout_s: float,
             samples: Path | None) -> RunOutcome:
        started = time.time()
        t0 = time.monotonic()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
            try:
                proc.communicate(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
            return RunOutcome("timeout", error=f"no result after {timeout_s:g} s; run aborted", started=started,
                              elapsed_s=time.monotonic() - t0, params=dict(values))
        except KeyboardInterrupt:
            proc.send_signal(signal.SIGINT)
            proc.communicate()
            raise Interrupted("interrupted (Ctrl-C); the user backend's run was aborted") from None
        elapsed = time.monotonic() - t0
        if proc.returncode == 2:
            self._last_error = _reason(err)
            raise ParamRefused("run", "1", self._last_error)
        result, hist, state = split_output(out)
        facts = parse_facts(out)
        if self._facts is None:
            self._facts = facts
        cond = run_conditions(facts)
        if proc.returncode != 0 or state != "done":
            reason = state.split(":", 1)[1] if state.startswith("error:") else f"runner exit {proc.returncode}"
            self._last_error = _reason(err) or reason
            return UserRunOutcome(f"error:{reason}", result=result, error=self._last_error, started=started,
                                  elapsed_s=elapsed, params=dict(values), conditions=cond, pid=proc.pid)
        raw = samples.read_bytes() if samples is not None and samples.exists() else b""
        return UserRunOutcome("done", result=result, started=started, elapsed_s=elapsed, params=dict(values),
                              histogram=hist, run_id=None, conditions=cond, raw_samples=raw, pid=proc.pid)


def _exit_text(returncode: int | None) -> str:
    """How a process ended, in words: `exit 3`, `killed by SIGKILL`."""
    if returncode is None:
        return "no exit status"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit {returncode}"


def _reason(stderr: str) -> str:
    lines = [ln for ln in stderr.strip().splitlines() if ln.strip()]
    if not lines:
        return ""
    last = lines[-1]
    if last.startswith("pmemlab-run: "):
        last = last[len("pmemlab-run: "):]
        head, _, rest = last.partition(": ")
        if head.isupper() and rest:
            return rest
    return last


def parse_facts(text: str) -> dict[str, Any]:
    """`#fact NAME VALUE` lines -> facts with the module's names, read as the module's are."""
    out = parse_fact_lines(text)
    if "target_kind" in out:
        out["target_kind"] = f"user-{out['target_kind']}"  # the CSV says which backend ran
    return out


def split_output(text: str) -> tuple[str, str, str]:
    """pmemlab-run stdout -> (result text, histogram text, final state)."""
    result: list[str] = []
    hist: list[str] = []
    state = "error:no final state from the runner"
    in_hist = False
    for line in text.splitlines():
        if line.startswith("#state "):
            state = line.split(" ", 1)[1].strip()
        elif line.startswith("# histogram"):
            in_hist = True
        elif line.startswith("#"):
            continue
        elif in_hist:
            hist.append(line)
        elif line.startswith("thread="):
            result.append(line)
    return "\n".join(result) + ("\n" if result else ""), "\n".join(hist) + ("\n" if hist else ""), state
