"""``.ci/run`` gates on ``make lint`` (which runs mypy) before ``make test``: a failing step
fails the run and stops it. ``make`` is replaced by a stub that records its calls."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_ci(tmp_path: Path, failing: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    calls = tmp_path / "calls"
    stub = tmp_path / "bin" / "make"
    stub.parent.mkdir()
    stub.write_text(f'#!/bin/sh\necho "$1" >> {calls}\n[ "$1" = "{failing}" ] && exit 2\nexit 0\n')
    stub.chmod(0o755)
    env = dict(os.environ, PATH=f"{stub.parent}{os.pathsep}{os.environ['PATH']}")
    out = subprocess.run(
        ["bash", str(ROOT / ".ci" / "run")], env=env, capture_output=True, text=True, timeout=120
    )
    return out, calls.read_text().split() if calls.exists() else []


@pytest.mark.parametrize(("failing", "ran"), [("lint", ["lint"]), ("test", ["lint", "test"])])
def test_a_failing_step_fails_the_run(tmp_path: Path, failing: str, ran: list[str]) -> None:
    out, calls = run_ci(tmp_path, failing)
    assert out.returncode != 0
    assert calls == ran
    assert "wheel-smoke" not in out.stdout + out.stderr


def test_make_lint_runs_mypy_on_the_package() -> None:
    out = subprocess.run(
        ["make", "-n", "lint"], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert any(line.split()[:1] == [".venv/bin/mypy"] for line in out.stdout.splitlines())
