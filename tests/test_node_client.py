"""The Node check (tests/node/check.mjs: the `pg` package, plain SQL calls by named
arguments, no routing code) through the router DSN of a two-partition cluster
(tests/test_router.py's); the partitions are read directly to check where the jobs went and
how they ended. ``pg`` is installed with npm into .cache/node (ignored by git)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from test_router import Setup, rt  # noqa: F401  (the module-scoped cluster and router)

from andal.client import route

ROOT = Path(__file__).resolve().parent.parent
CHECK = ROOT / "tests" / "node" / "check.mjs"
CACHE = ROOT / ".cache" / "node"


@pytest.fixture(scope="module")
def node_check() -> Path:
    """check.mjs beside a node_modules holding pg@8 (installed once into .cache/node)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("node and npm are needed for the Node check (not installed)")
    CACHE.mkdir(parents=True, exist_ok=True)
    if not (CACHE / "node_modules" / "pg" / "package.json").exists():
        subprocess.run(
            ["npm", "install", "--prefix", str(CACHE), "--no-audit", "--no-fund", "pg@8"],
            check=True, capture_output=True, timeout=300,
        )  # fmt: skip
    script = CACHE / "check.mjs"  # ESM resolves "pg" from the script's own directory
    shutil.copyfile(CHECK, script)
    return script


def test_node_through_the_router_enqueues_claims_completes_and_fails(
    rt: Setup,  # noqa: F811
    node_check: Path,
) -> None:
    queues = [f"node_{i}" for i in range(8)]
    assert {route(q, 2) for q in queues} == {0, 1}
    out = subprocess.run(
        ["node", str(node_check), rt.router, *queues], capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    ids = {int(i): q for q, each in got["enqueued"].items() for i in each}
    assert len(ids) == 16 and got["claimed"] == 16
    completed = {int(i) for i in got["completed"]}
    failed = {int(i) for i in got["failed"]}
    assert len(completed) == len(failed) == 8 and completed | failed == set(ids)
    expected = {i: "completed" if i in completed else "dead" for i in ids}
    assert {int(k): v for k, v in got["states"].items()} == expected  # read through the router
    found: dict[int, str] = {}
    for k in range(2):  # on the partitions themselves
        rows = rt.direct(
            k,
            "select i, j.state, j.queue from unnest(%s::bigint[]) as i, queue.job(i) as j",
            (sorted(ids),),
        )
        assert rows, f"no job of the Node check on partition {k}"
        for job_id, state, queue in rows:
            assert job_id % 2 == k and route(queue, 2) == k and ids[job_id] == queue
            found[job_id] = state
    assert found == expected
