"""Make tests/testlib.py and the userspace package importable from every test directory, and
build the libraries: the one the package judges runs with (libplcore.so: the module's validator)
and the host tests' own (libpltest.so: their entry points into the core) when a session starts."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

_TESTS = Path(__file__).resolve().parent
for _path in (_TESTS, _TESTS.parent / "userspace"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))


def pytest_sessionstart(session: pytest.Session) -> None:
    """Build libplcore.so and libpltest.so once a session, before collection: the tests judge values
    and runs with the first (the parameter table itself is the package's schema.json), the engine's
    tests load the second. make rebuilds only what is stale; under pytest-xdist only the controlling
    process builds, and its workers start after this hook."""
    if hasattr(session.config, "workerinput"):
        return
    problem = userspace_libraries(_TESTS.parent / "userspace" / "runner", in_guest=bool(os.environ.get("PMEMLAB_VM")))
    if problem:
        raise pytest.UsageError(problem)


def userspace_libraries(runner: Path, in_guest: bool) -> str | None:
    """On the host, make pmemlab-run's libraries (make rebuilds only what is stale); in a guest,
    only ask make whether the host did: in a TCG guest the optimised engine.c build takes tens of
    minutes with nothing printed (a guest "hang" that was this), so a stale tree is refused in one
    line instead. The reason the session cannot start, or None."""
    if in_guest:
        stale = subprocess.run(["make", "-q", "-C", str(runner), "pmemlab-run", "libplcore.so", "libpltest.so"],
                               capture_output=True, text=True)
        if stale.returncode != 0:
            return (f"{runner}/pmemlab-run, libplcore.so or libpltest.so is older than its sources in this guest: "
                    "run `make userspace` on the host, then boot the guest again")
        return None
    make = subprocess.run(["make", "-s", "-C", str(runner), "libplcore.so", "libpltest.so"],
                          capture_output=True, text=True)
    if make.returncode != 0:
        return f"building {runner}/libplcore.so and libpltest.so failed:\n" + make.stdout + make.stderr
    return None


def pytest_configure(config) -> None:
    # The Ctrl-C tests interrupt the main thread as a terminal would (_thread.interrupt_main), which
    # does nothing where SIGINT is ignored: a suite started from a background job of a
    # non-interactive shell (CI runners, `make test &`) inherits SIG_IGN and Python keeps it.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    config.addinivalue_line("markers", "slow: a long run (tens of seconds or more)")
    config.addinivalue_line("markers", "soak: back-to-back runs for minutes (PMEMLAB_SOAK_MINUTES); make test runs "
                                       "a short one on the default guest kernel, make soak the long one")
    config.addinivalue_line("markers", "kernel_matrix: a guest test every kernel of the matrix runs (builds, loads, "
                                       "every op and pattern, fuzz, teardown, kernel interfaces); the other guest "
                                       "tests check kernel-independent behaviour and run on the default kernel only")
    config.addinivalue_line("markers", "check: make check's guest tests (load, every op and pattern, unload)")
    config.addinivalue_line("markers", "two_nodes: a guest test that needs two NUMA nodes with CPUs; make test runs "
                                       "these with the kernel matrix in the last kernel's guest, booted with "
                                       "scripts/vm --numa-nodes 2")
    config.addinivalue_line("markers", "smt: a guest test that needs SMT siblings and the prefetcher control; make "
                                       "test runs these in a guest of the first kernel booted with scripts/vm --smt "
                                       "--cpus 4 --cpu-model Cascadelake-Server-v1")
    config.addinivalue_line("markers", "cxl: a guest test of the CXL lanes (scripts/vm --cxl); make test runs these "
                                       "in the guest of the kernel scripts/vm --list-kernels --cxl names")
