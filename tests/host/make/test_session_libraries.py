"""tests/conftest.py's start of a session: on the host it builds pmemlab-run's libraries, in a guest
it only asks make whether the host did and refuses a stale tree in one line. A guest that built
engine.c under TCG sat for tens of minutes with nothing printed; nothing but this test would see
the guard go (it was checked by hand in guests only)."""
from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from types import ModuleType

import pytest

from testlib import TOP

OUTPUTS = ("pmemlab-run", "libplcore.so", "libpltest.so")


def top_conftest() -> ModuleType:
    spec = importlib.util.spec_from_file_location("pmemlab_tests_top_conftest", TOP / "tests" / "conftest.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def runner(tmp_path: Path) -> Path:
    """A runner directory whose three outputs are built from one source by cp (make's own rules)."""
    (tmp_path / "src.c").write_text("int x;\n")
    (tmp_path / "Makefile").write_text("".join(f"{o}: src.c\n\tcp src.c {o}\n" for o in OUTPUTS))
    return tmp_path


def age(path: Path, seconds: float) -> None:
    t = time.time() - seconds
    os.utime(path, (t, t))


def test_a_guest_refuses_a_stale_tree_and_builds_nothing(runner: Path) -> None:
    libraries = top_conftest().userspace_libraries
    for out in OUTPUTS:
        (runner / out).write_text("old\n")
        age(runner / out, 100)
    problem = libraries(runner, in_guest=True)
    assert problem and "older than its sources in this guest" in problem and "make userspace" in problem
    assert "\n" not in problem, "one line"
    assert all((runner / o).read_text() == "old\n" for o in OUTPUTS), "the guest built what the host should have"


def test_a_guest_takes_a_fresh_tree(runner: Path) -> None:
    for out in OUTPUTS:
        (runner / out).write_text("int x;\n")
    age(runner / "src.c", 100)
    assert top_conftest().userspace_libraries(runner, in_guest=True) is None


def test_the_host_builds_the_libraries_and_says_why_it_could_not(runner: Path) -> None:
    libraries = top_conftest().userspace_libraries
    assert libraries(runner, in_guest=False) is None
    assert (runner / "libplcore.so").read_text() == "int x;\n" and (runner / "libpltest.so").exists()
    (runner / "Makefile").write_text("libplcore.so:\n\tfalse\nlibpltest.so:\n\ttrue\n")
    (runner / "libplcore.so").unlink()
    problem = libraries(runner, in_guest=False)
    assert problem and problem.startswith(f"building {runner}/libplcore.so and libpltest.so failed")
