"""The tests' own layout (issue 38 point 6): the host tests sit in folders named as the code they
test (tests/host/controller/<subpackage>, core, runner, module, make, docs), none loose at the top
of tests/host and none named after the package's old name (test_controller_*); pytest collects
every folder (a folder it skips by default, `build` once, would drop its tests without a word);
and within each suite make test runs apart (tests/host, tests/bed, tests/guest) no two modules
share a name: the tests are imported by their file's name (pytest's default prepend import mode,
no __init__.py), so a second test_x.py would stop the collection."""
from __future__ import annotations

import fnmatch
from collections import Counter
from pathlib import Path

import pytest

from testlib import TOP

TESTS = TOP / "tests"
SUITES = ("host", "bed", "guest")


def modules(suite: str) -> list[Path]:
    """The Python files of a suite (tests, helpers, fixtures), without conftest.py."""
    return sorted(p for p in (TESTS / suite).rglob("*.py") if p.name != "conftest.py" and "__pycache__" not in p.parts)


def test_no_host_test_is_loose_at_the_top() -> None:
    loose = sorted(p.name for p in (TESTS / "host").glob("test_*.py"))
    assert not loose, f"host tests outside a folder of the code they test: {loose}"


def test_no_test_carries_the_old_package_name() -> None:
    old = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("test_controller_*.py"))
    assert not old, f"named after the package's old name: {old}"


def test_pytest_collects_every_folder_of_tests(pytestconfig: pytest.Config) -> None:
    skipped = pytestconfig.getini("norecursedirs")
    hidden = sorted(str(p.relative_to(TESTS)) for suite in SUITES for p in (TESTS / suite).rglob("test_*.py")
                    if any(fnmatch.fnmatch(part, pattern) for part in p.relative_to(TESTS).parts[:-1]
                           for pattern in skipped))
    assert not hidden, f"in a folder pytest does not collect (norecursedirs {skipped}): {hidden}"


@pytest.mark.parametrize("suite", SUITES)
def test_module_names_are_unique_within_a_suite(suite: str) -> None:
    twice = [name for name, n in Counter(p.name for p in modules(suite)).items() if n > 1]
    assert not twice, f"tests/{suite} holds more than one of {twice}"
