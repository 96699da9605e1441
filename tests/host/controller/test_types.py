"""The controller type-checks: mypy --strict (userspace/pyproject.toml) finds nothing, so a
backend that drifts from the Backend protocol, or an Any where a backend is meant, fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testlib import TOP

USERSPACE = TOP / "userspace"


def test_mypy_strict_is_clean() -> None:
    res = subprocess.run([sys.executable, "-m", "mypy", "pmemlab"], cwd=USERSPACE, capture_output=True, text=True,
                         timeout=600)
    assert "No module named mypy" not in res.stderr, "mypy is missing: run scripts/install-deps"
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.startswith("Success: no issues found")


def test_backends_meet_the_protocol_only_where_mypy_says(tmp_path: Path) -> None:
    """The check is not vacuous: a backend without `run` is refused where a Backend is meant."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from pmemlab.backends.protocol import Backend\n"
        "from pmemlab.backends.user import UserBackend\n"
        "from pmemlab.backends.module import Module\n"
        "class Half:\n"
        "    kind = 'kernel'\n"
        "ok: list[Backend] = [Module(), UserBackend('dram')]\n"
        "bad: Backend = Half()\n")
    res = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(USERSPACE / "pyproject.toml"),
                          str(probe)], cwd=USERSPACE, capture_output=True, text=True, timeout=600)
    errors = [ln for ln in res.stdout.splitlines() if ": error:" in ln]
    assert len(errors) == 1 and "probe.py:7:" in errors[0] and '"Half"' in errors[0], res.stdout
