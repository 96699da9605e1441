"""What the host tests share: the fixtures directory on the import path (the fake module, the
sweep configs, the recorded results), the fake module as the one `pmemlab` finds loaded, and a
sweep config written beside it. The package is imported inside the fixtures: this file is read
before the session builds libplcore.so (tests/conftest.py), which pmemlab.params judges with."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from testlib import HOST_FIXTURES  # tests/conftest.py put tests/ on the path

sys.path.insert(0, str(HOST_FIXTURES))

# No per-example deadline for the property tests: beside CI's guests an example's wall time says
# nothing about the code (one took over 250 ms there and failed the run); a test that means a speed
# is a benchmark (tests/bench), not a deadline.
from hypothesis import settings  # noqa: E402

settings.register_profile("pmemlab", deadline=None)
settings.load_profile("pmemlab")

if TYPE_CHECKING:
    from fake_pmemlab import FakeModule


@pytest.fixture
def no_external_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every external tool (ndctl, ipmctl, blkid, ...) missing, so no test reads this host's."""
    import pmemlab.host.probe as probe

    monkeypatch.setattr(probe, "run_tool", lambda argv: probe.ToolResult(127, "", "not installed"))


@pytest.fixture
def online_cpus() -> int:
    """The CPUs `pmemlab` sees online (a test file may override it)."""
    return 2


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, no_external_tools: None, online_cpus: int) -> FakeModule:
    """The fake module (fixtures/fake_pmemlab.py) under tmp_path, as the module the command line
    finds loaded, with `online_cpus` CPUs and no external tools."""
    import pmemlab.cli.backend as cli_backend
    from fake_pmemlab import make_fake

    module = make_fake(tmp_path)
    monkeypatch.setattr(cli_backend, "module", lambda args: module.module())
    monkeypatch.setattr(cli_backend, "online_cpus", lambda: online_cpus)
    return module


@pytest.fixture
def env(fake: FakeModule, tmp_path: Path, config_text: str) -> tuple[FakeModule, Path, Path]:
    """`fake`, the test file's `config_text` written to tmp_path/t.toml, and the CSV a sweep of it
    writes (tmp_path/results/t.csv)."""
    cfg = tmp_path / "t.toml"
    cfg.write_text(config_text)
    return fake, cfg, tmp_path / "results" / "t.csv"
