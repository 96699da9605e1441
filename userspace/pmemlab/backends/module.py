"""Talking to pmemlab.ko through /sys/kernel/pmemlab (docs/interface.md).

`Module` is the kernel backend (`protocol.Backend`). The root is configurable (`--sysfs`, env PMEMLAB_SYSFS) so tests can drive a fake
module: a directory tree plus an `SysfsIO` whose `write` emulates the module.
"""

from __future__ import annotations

import ctypes
import errno
import math
import os
import platform
import select
import time
from pathlib import Path
from typing import Any, Callable, Mapping

from pmemlab import params as P
from pmemlab.backends.protocol import BackendKind, RunOutcome, load_identity
from pmemlab.backends.facts import FACT_FILES, PLACEMENT_FACTS, fact_value
from pmemlab.host.readall import read_all
from pmemlab.errors import (
    Interrupted,
    ModuleAccessError,
    ModuleBusy,
    ModuleNotLoaded,
    ParamRefused,
    WrongTarget,
)

DEFAULT_SYSFS = Path("/sys/kernel/pmemlab")
DEFAULT_MODPARAMS = Path("/sys/module/pmemlab/parameters")
# a run's state is looked at after poll_s, then again at most POLL_LATE x the time it has run so far
# later (poll_s at least, POLL_MAX_S at most): a run is seen done that much after its end at most
# (the 1.5x steps before saw a 20 ms run up to 6 ms late, a 100 ms one 47 ms: issue 37)
POLL_LATE = 0.05
POLL_MAX_S = 0.05
# On sysfs the wait for the next look is a poll() of the opened `state` file, which the module
# notifies at every change of the run's state (docs/interface.md): a module that woke it once is
# known to notify, and is then looked at only when it wakes the poll, or POLL_NOTIFIED_S after the
# last look (a net that a lost notification would fall into); a module that never wakes it (older
# than the notification) is looked at on the schedule above, as before. A regular file (a stand-in
# module, tests/host/fixtures/fake_pmemlab.py, scripts/bench) never wakes poll(): the schedule's
# sleeps, as before.
POLL_NOTIFIED_S = 10.0
SYSFS_MAGIC = 0x62656572  # statfs(2) f_type of sysfs (linux/magic.h)


def sysfs_root(option: str | os.PathLike[str] | None = None) -> Path:
    if option:
        return Path(option)
    env = os.environ.get("PMEMLAB_SYSFS")
    return Path(env) if env else DEFAULT_SYSFS


_libc: ctypes.CDLL | None = None


def fs_type(fd: int) -> int | None:
    """The f_type fstatfs(2) gives for the file system of fd (SYSFS_MAGIC for sysfs), None where
    it cannot say. (os.statvfs has no f_type.)"""
    global _libc
    try:
        if _libc is None:
            _libc = ctypes.CDLL(None, use_errno=True)
        buf = ctypes.create_string_buffer(256)  # struct statfs: 120 bytes on x86-64, f_type first
        if _libc.fstatfs(fd, buf) != 0:
            return None
    except (OSError, AttributeError):
        return None
    return ctypes.c_long.from_buffer(buf).value


class StateWatch:
    """A sysfs attribute held open to wait on its changes: the module calls sysfs_notify() on it,
    which makes poll() report POLLPRI|POLLERR once it changed since this file was last read. A read
    arms it; after each wake it is read again from its start (kernfs' rule)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._poll = select.poll()
        self._poll.register(fd, select.POLLPRI | select.POLLERR)

    def read(self) -> str:
        """The value, read from its start (and so armed for the next change)."""
        os.lseek(self.fd, 0, os.SEEK_SET)
        return os.read(self.fd, 4096).decode("utf-8", "replace")  # a show gives at most a page

    def wait(self, timeout_s: float) -> bool:
        """Until the attribute changes or timeout_s pass: True when it was notified (or went)."""
        return bool(self._poll.poll(max(0, math.ceil(timeout_s * 1000))))

    def close(self) -> None:
        """Closed once: a second close is nothing (the number may be another file's by then)."""
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


class SysfsIO:
    """Plain file access; the fake module in the tests overrides `write`."""

    def watch(self, path: Path) -> StateWatch | None:
        """The file held open to wait on its changes (StateWatch) if it is on sysfs, else None:
        poll() on a regular file never reports POLLPRI, so its reader keeps to a schedule."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # the reads that follow say why
        if fs_type(fd) != SYSFS_MAGIC:
            os.close(fd)
            return None
        return StateWatch(fd)

    def read(self, path: Path) -> str:
        """The whole file as text (undecodable bytes replaced)."""
        return read_all(path)

    def read_bytes(self, path: Path) -> bytes:
        with open(path, "rb") as fh:
            return fh.read()

    def write(self, path: Path, text: str) -> int:
        """One write() of the whole text; the bytes the file took (sysfs takes at most a page
        and drops the rest, so fewer than given means the value was cut)."""
        fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
        try:
            return os.write(fd, text.encode())
        finally:
            os.close(fd)


def _shown(value: str, room: int = 80) -> str:
    """A value as an error message shows it: a long one by its start and its length."""
    return value if len(value) <= room else f"{value[:room]}... ({len(value)} characters)"


def source_tree() -> Path | None:
    """The pmemlab tree this package runs from (None when installed from a wheel)."""
    top = Path(__file__).resolve().parents[3]
    return top if (top / "Kbuild").is_file() and (top / "kmod").is_dir() else None


def module_path(release: str | None = None) -> str:
    """Where `make module` puts pmemlab.ko for a kernel: build/<kernel release>/pmemlab.ko."""
    rel = release or platform.release()
    top = source_tree()
    return str(top / "build" / rel / "pmemlab.ko") if top else f"build/{rel}/pmemlab.ko"


def insmod_command(target: str = "/dev/pmem0", release: str | None = None) -> str:
    return f"sudo insmod {module_path(release)} target={target}"


def load_hint(target: str = "/dev/pmem0", release: str | None = None) -> str:
    """Build the module for the running kernel and load it (the top Makefile's `module` target)."""
    rel = release or platform.release()
    top = source_tree()
    make = f"make -C {top} module" if top else "make module (in the pmemlab source tree)"
    return f"{make} KDIR=/lib/modules/{rel}/build && {insmod_command(target, rel)}"


_LOAD_FIX = (
    f"build and load it: {load_hint()} (or target=dram), "
    "or point --sysfs / PMEMLAB_SYSFS at the right directory"
)


class Module:
    """The loaded module, seen through its sysfs directory (a `protocol.Backend`)."""

    kind: BackendKind = "kernel"

    def __init__(self, root: Path | None = None, io: SysfsIO | None = None,
                 modparams: Path | None = None) -> None:
        self.root = Path(root) if root is not None else sysfs_root()
        self.io = io or SysfsIO()
        if modparams is None:
            env = os.environ.get("PMEMLAB_MODPARAMS")
            modparams = Path(env) if env else (
                DEFAULT_MODPARAMS if self.root == DEFAULT_SYSFS else self.root / ".." / "module-parameters")
        self.modparams = modparams
        # what this controller last wrote and the module's params_gen after it: a point writes only
        # the parameters that differ, while params_gen says no one else wrote (or reloaded) since
        self._held: dict[str, str] = {}
        self._gen: int | None = None
        # the load's placement facts as the last run read them: a fact of the load, so read again
        # only when params_gen no longer says "the same load as at that run" (set_params)
        self._placement: dict[str, str] | None = None

    # -- basic access ---------------------------------------------------
    def loaded(self) -> bool:
        return (self.root / "state").exists()

    def require_loaded(self) -> None:
        if not self.root.is_dir():
            raise ModuleNotLoaded(f"module not loaded ({self.root} does not exist)", _LOAD_FIX)
        if not (self.root / "state").exists():
            raise ModuleNotLoaded(f"{self.root} has no `state` file: not a pmemlab module directory", _LOAD_FIX)

    def read(self, name: str) -> str:
        path = self.root / name
        try:
            return self.io.read(path).strip()
        except FileNotFoundError:
            if not self.root.is_dir():
                raise ModuleNotLoaded(f"module not loaded ({self.root} does not exist)", _LOAD_FIX) from None
            raise ModuleAccessError(
                f"{path} does not exist (module version mismatch?)",
                f"rebuild and reload the module from this tree: sudo rmmod pmemlab && {load_hint(self._load_target())}",
            ) from None
        except PermissionError:
            raise ModuleAccessError(f"permission denied reading {path}", "run as root (sudo pmemlab ...)") from None

    def _load_target(self) -> str:
        """The target the module was loaded with (for fix hints), else /dev/pmem0."""
        try:
            return self.io.read(self.modparams / "target").strip() or "/dev/pmem0"
        except OSError:
            return "/dev/pmem0"

    def read_opt(self, name: str) -> str | None:
        """read(name), None for a file this module does not have or lets nobody read (without
        building read()'s error and its fix hint: a run reads several such files)."""
        try:
            return self.io.read(self.root / name).strip()
        except FileNotFoundError:
            if not self.root.is_dir():
                raise ModuleNotLoaded(f"module not loaded ({self.root} does not exist)", _LOAD_FIX) from None
            return None
        except PermissionError:
            return None

    def write(self, name: str, value: str) -> None:
        """Write one sysfs file with one write(); a refusal is ParamRefused with the module's
        reason, and so is a write the file took only part of (the module then holds a cut value,
        which no run may use)."""
        path = self.root / name
        data = value + "\n"
        try:
            taken = self.io.write(path, data)
        except FileNotFoundError:
            self.require_loaded()
            raise ModuleAccessError(
                f"{path} does not exist: this module has no `{name}`",
                "rebuild and reload the module from this tree, or drop the parameter",
            ) from None
        except PermissionError:
            raise ModuleAccessError(f"permission denied writing {path}", "run as root (sudo pmemlab ...)") from None
        except OSError as exc:
            if exc.errno == errno.E2BIG:
                raise ParamRefused(name, _shown(value), f"{len(data.encode())} bytes are more than one sysfs "
                                   "write takes (a page); nothing was set") from None
            if exc.errno == errno.EBUSY:
                raise ModuleBusy(
                    f"a run is active (writing {name} gave EBUSY)",
                    "wait for it to finish or stop it with `pmemlab abort`",
                ) from None
            if exc.errno in (errno.EINVAL, errno.ERANGE, errno.EOPNOTSUPP, errno.EPERM, errno.ENXIO,
                             errno.ENODEV, errno.ENOSPC):
                reason = self.read_opt("last_error") or os.strerror(exc.errno)
                raise ParamRefused(name, value, reason) from None
            raise ModuleAccessError(f"writing {path} failed: {exc.strerror}", "see the kernel log (dmesg | grep pmemlab)") from None
        want = len(data.encode())
        if taken is not None and taken != want:
            raise ParamRefused(name, _shown(value), f"{path} took {taken} of {want} bytes: the value was cut "
                               "short (a sysfs write takes at most a page), so the module holds a value "
                               "that was not given; nothing runs with it")

    # -- facts ------------------------------------------------------------
    def facts(self) -> dict[str, Any]:
        """Target facts (docs/interface.md 'Target facts'); missing files are left out."""
        self.require_loaded()
        out: dict[str, Any] = {}
        for name in FACT_FILES:
            text = self.read_opt(name)
            if text is None:
                continue
            out[name] = fact_value(name, text)
        phys = self.read_opt("target_phys")
        if phys is not None:
            out["target_phys"] = phys
        return out

    def placement(self) -> dict[str, str]:
        """The target's placement as the module holds it now (the rows of each run carry the
        load's own: a target reloaded between the probe and the run is placed again)."""
        out = {}
        for name in PLACEMENT_FACTS:
            text = self.read_opt(name)
            if text is not None:
                out[name] = text
        return out

    def _load_placement(self) -> dict[str, str]:
        """placement(), read once per load: again after set_params found another params_gen
        (a reload, or a write from elsewhere) or none (a module without it: every run)."""
        if self._placement is None or self._gen is None:
            self._placement = self.placement()
        return dict(self._placement)

    def target_facts(self, online_cpus: int | None = None) -> P.TargetFacts:
        f = self.facts()
        widths: tuple[int, ...] | None = None
        if "widths" in f:
            try:
                widths = tuple(int(w) for w in str(f["widths"]).split())
            except ValueError:
                widths = None
        feats = frozenset(str(f["cpu_features"]).split()) if "cpu_features" in f else None
        return P.TargetFacts(
            target_size=f.get("target_size") if isinstance(f.get("target_size"), int) else None,
            cpu_features=feats,
            widths=widths,
            prefetch_control=f.get("prefetch_control"),
            online_cpus=online_cpus,
            extra=f,
            allow_overwrite=self.module_parameters().get("allow_overwrite") in ("Y", "1"),
        )

    def current_params(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for name in P.PARAM_NAMES:
            val = self.read_opt(name)
            if val is not None:
                out[name] = val
        return out

    def module_parameters(self) -> dict[str, str]:
        """Load-time parameters (/sys/module/pmemlab/parameters)."""
        out: dict[str, str] = {}
        try:
            entries = sorted(self.modparams.iterdir())
        except OSError:
            return out
        for path in entries:
            try:
                out[path.name] = self.io.read(path).strip()
            except OSError:
                out[path.name] = "(unreadable)"
        return out

    def check_target(self, want: str | None) -> None:
        if not want:
            return
        have = self.read("target")
        if have != want:
            raise WrongTarget(
                f"the module is loaded on target={have}, not {want}",
                f"sudo rmmod pmemlab && {insmod_command(want)}",
            )

    def state(self) -> str:
        return self.read("state")

    def _watched_state(self, watch: StateWatch | None) -> tuple[str, StateWatch | None]:
        """`state` through the watch (and the watch), or, without one or once its file went
        (rmmod: ENODEV), as state() reads it (and None)."""
        if watch is not None:
            try:
                return watch.read().strip(), watch
            except OSError:
                watch.close()
        return self.state(), None

    def last_error(self) -> str:
        return self.read_opt("last_error") or ""

    def identity(self) -> dict[str, Any]:
        return load_identity(self.kind, self.module_parameters())

    def failure_fix(self, status: str) -> str:
        if status == "refused":
            return ("the module's reason is above; change the value (`pmemlab params` lists the allowed values, "
                    "`pmemlab info` the target's size and CPU features) and run again")
        return (f"`pmemlab info` shows the module's state and last_error ({self.root}/last_error), "
                "`dmesg | grep pmemlab` the kernel's side; change the parameters and run again")

    def abort(self) -> None:
        self.write("abort", "1")

    # -- one run ----------------------------------------------------------
    def set_params(self, values: Mapping[str, Any]) -> None:
        """Write the parameters that differ from what the module holds (canonical values); retry
        order-dependent refusals once.

        A parameter this module has no file for is skipped while it holds its default
        (the schema may know parameters an older module lacks); set to anything else,
        it is an error naming the missing file.

        Unchanged since this controller's last point, a parameter is not written again: the
        module's `params_gen` (another value after every parameter write it took, and on every
        load) is then what this controller's own writes made it, so nothing else changed the
        module's parameters in between. Otherwise, and on a module without params_gen, every
        parameter is written.
        """
        gen_text = self.read_opt("params_gen")
        gen = int(gen_text) if gen_text and gen_text.isdigit() else None
        same_load = gen is not None and gen == self._gen
        held = dict(self._held) if same_load else {}
        if not same_load:
            self._placement = None  # another load, or unknown: its placement is read again
        self._gen = None  # until the writes below are all known
        refused: list[tuple[str, str, ParamRefused]] = []
        taken = 0
        pending = [(k, v, P.to_sysfs(k, v)) for k, v in values.items()]
        for key, value, text in pending:
            if held.get(key) == text:
                continue  # held: its file exists and holds this value
            if key in P.PARAMS and value == P.PARAMS[key].default and not (self.root / key).exists():
                continue
            held.pop(key, None)
            try:
                self.write(key, text)
            except ParamRefused as exc:
                refused.append((key, text, exc))
                continue
            held[key] = text
            taken += 1
        for key, text, _ in refused:
            self.write(key, text)  # raises ParamRefused if still refused
            held[key] = text
            taken += 1
        if gen is not None:
            self._held = held
            self._gen = (gen + taken) % (1 << 64)

    def run(self, values: Mapping[str, Any], timeout_s: float = 600.0,
            poll_s: float = 0.002, on_poll: Callable[[], None] | None = None) -> RunOutcome:
        """Write parameters, start, wait on `state` until done/error, read `result`.

        The wait (POLL_NOTIFIED_S): on sysfs a poll() of `state`, opened and read (armed) before
        the run starts, that the module's notification wakes; else sleeps on the schedule.
        Ctrl-C during the run writes `abort`, waits for the module to stop and
        raises Interrupted. A timeout aborts the run and returns state `timeout`.
        """
        watch = self.io.watch(self.root / "state")
        try:
            return self._run(values, timeout_s, poll_s, on_poll, watch)
        finally:
            if watch is not None:
                watch.close()

    def _run(self, values: Mapping[str, Any], timeout_s: float, poll_s: float,
             on_poll: Callable[[], None] | None, watch: StateWatch | None) -> RunOutcome:
        try:
            state, watch = self._watched_state(watch)  # through the watch: the read that arms it
        except ModuleAccessError:
            self.require_loaded()  # no state file: not loaded, or not a pmemlab directory
            raise
        if state == "running":
            raise ModuleBusy("a run is already active", "wait for it or stop it with `pmemlab abort`")
        self.set_params(values)
        started = time.time()
        t0 = time.monotonic()
        notified = False  # the module woke the poll: it notifies
        try:
            self.write("run", "1")
            delay = poll_s
            while True:
                # the module sets `running` before the write returns: the first look is a poll later
                if watch is None:
                    time.sleep(delay)
                elif watch.wait(min(POLL_NOTIFIED_S, max(0.0, timeout_s - (time.monotonic() - t0)))
                                if notified else delay):
                    notified = True
                state, watch = self._watched_state(watch)
                if state != "running":
                    break
                ran = time.monotonic() - t0
                if ran > timeout_s:
                    self._abort_and_wait()
                    return RunOutcome("timeout", error=f"no result after {timeout_s:g} s; run aborted",
                                      started=started, elapsed_s=time.monotonic() - t0, params=dict(values))
                if on_poll:
                    on_poll()
                delay = min(max(poll_s, POLL_LATE * ran), POLL_MAX_S)
        except KeyboardInterrupt:
            self._abort_and_wait()
            raise Interrupted("interrupted (Ctrl-C); the module run was aborted") from None
        elapsed = time.monotonic() - t0
        if state == "done":
            return RunOutcome("done", result=self.read("result"), started=started, elapsed_s=elapsed,
                              params=dict(values), histogram=self.read_opt("histogram") or "",
                              run_id=self.read_opt("run_id"), conditions=self._load_placement(),
                              raw_samples=self._raw_samples() if values.get("samples") else b"")
        if state == "idle":
            state = "error:stopped without a result (aborted from elsewhere?)"
        reason = state.split(":", 1)[1].strip() if ":" in state else state
        detail = self.read_opt("last_error") or ""
        return RunOutcome(f"error:{reason}", error=detail or reason, started=started, elapsed_s=elapsed,
                          params=dict(values))

    def _raw_samples(self) -> bytes:
        """The binary raw_samples file (b"" when this module has none)."""
        try:
            return self.io.read_bytes(self.root / "raw_samples")
        except FileNotFoundError:
            return b""
        except PermissionError:
            raise ModuleAccessError(f"permission denied reading {self.root / 'raw_samples'}",
                                    "run as root (sudo pmemlab ...)") from None

    def _abort_and_wait(self, wait_s: float = 10.0) -> None:
        try:
            self.abort()
        except Exception:  # noqa: BLE001 - best effort while stopping
            return
        t0 = time.monotonic()
        while time.monotonic() - t0 < wait_s:
            try:
                if self.state() != "running":
                    return
            except Exception:  # noqa: BLE001
                return
            time.sleep(0.01)
