"""The package a user installs: one version everywhere, the SQL inside the wheel, and a clear
one-line error (exit code 4) when the SQL cannot be found."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import psycopg
import pytest

import andal
from andal.install import ManifestError, function_files, manifest, sql_dir, sql_version

ROOT = Path(__file__).resolve().parent.parent
ANDAL = str(Path(sys.executable).parent / "andal")


def test_one_version_everywhere(dsn: str) -> None:
    cli = subprocess.run([ANDAL, "--version"], capture_output=True, text=True, check=True)
    with psycopg.connect(dsn) as conn:
        installed = conn.execute("select queue.version()").fetchone()
    assert installed is not None
    assert cli.stdout.strip() == f"andal {andal.__version__}"
    assert andal.__version__ == metadata.version("andal-pg") == installed[0] == sql_version()


def test_the_release_has_a_changelog_section() -> None:
    assert f"## {andal.__version__}" in (ROOT / "CHANGELOG.md").read_text()


def test_the_wheel_ships_every_sql_file(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("andal_pg-*.whl")
    assert wheel.name.startswith(f"andal_pg-{andal.__version__}-")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    sources = sorted(
        "andal/sql/" + p.relative_to(ROOT / "sql").as_posix()
        for part in ("schema", "functions", "router")
        for p in (ROOT / "sql" / part).rglob("*.sql")
    ) + ["andal/sql/functions/manifest.txt"]
    assert len(sources) > 40
    assert [s for s in sources if s not in shipped] == []
    assert not [n for n in shipped if n.startswith("andal/sql/tests")]
    # and the dashboard's templates, script and style (package data of andal.web)
    web = ROOT / "pydriver" / "andal" / "web"
    data = [
        "andal/web/" + p.relative_to(web).as_posix()
        for part in ("templates", "static")
        for p in (web / part).iterdir()
    ]
    assert len(data) > 5 and [d for d in data if d not in shipped] == []


def test_the_sdist_carries_the_sql_and_builds_a_wheel_with_it(tmp_path: Path) -> None:
    """The sdist (MANIFEST.in) holds sql/schema, sql/functions and sql/router, and a wheel
    built from it ships them: installing from the sdist works as from the wheel."""
    build = [sys.executable, "-m", "build", "-q", "--sdist", "-o", str(tmp_path), str(ROOT)]
    subprocess.run(build, check=True, capture_output=True, timeout=300)
    (sdist,) = tmp_path.glob("andal_pg-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    sources = sorted(
        p.relative_to(ROOT).as_posix()
        for part in ("schema", "functions", "router")
        for p in (ROOT / "sql" / part).rglob("*.sql")
    ) + ["sql/functions/manifest.txt"]
    assert [s for s in sources if s not in names] == []
    assert {"LICENSE", "CHANGELOG.md", "setup.py"} <= names
    wheel_dir = tmp_path / "wheel"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheel_dir), str(sdist)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = wheel_dir.glob("andal_pg-*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    assert [s for s in sources if "andal/" + s not in shipped] == []


def test_missing_sql_is_one_line_and_exit_code_4(tmp_path: Path) -> None:
    env = dict(os.environ, ANDAL_SQL_DIR=str(tmp_path / "nothing-here"))
    dsn = "postgresql://nobody@127.0.0.1:1/none"  # never reached: the SQL is checked first
    for argv in ([ANDAL, "--dsn", dsn, "install"], [sys.executable, "-m", "andal.install", dsn]):
        out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert out.returncode == 4, out
        assert "Traceback" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1
        assert "SQL sources are missing" in out.stderr


def test_a_checkout_finds_its_own_sql() -> None:
    assert sql_dir() == ROOT / "sql"


def test_the_docs_name_the_distribution_andal_pg() -> None:
    """``pip install andal`` installs an unrelated project: every doc says andal-pg."""
    wrong = re.compile(r"pip install ['\"]?andal(?![-\w])")
    docs = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
    found = [
        f"{doc.relative_to(ROOT)}:{n}"
        for doc in docs
        for n, line in enumerate(doc.read_text().splitlines(), 1)
        if wrong.search(line)
    ]
    assert found == []
    assert "pip install andal-pg" in (ROOT / "README.md").read_text()


def test_the_manifest_lists_every_function_file_once_and_the_public_revoke_last() -> None:
    files = function_files(ROOT / "sql")
    assert sorted(files) == sorted((ROOT / "sql" / "functions").rglob("*.sql"))
    assert files[-1].name == "revoke_public.sql"


@pytest.mark.parametrize("change", ["unlisted", "missing", "twice"])
def test_an_install_refuses_a_manifest_out_of_date(tmp_path: Path, change: str) -> None:
    """A .sql file the manifest does not list (or a listed one that is gone, or one listed
    twice) stops the install before any database is touched: never a silently skipped file."""
    root = tmp_path / "sql"
    shutil.copytree(ROOT / "sql" / "functions", root / "functions")
    listing = root / "functions" / "manifest.txt"
    if change == "unlisted":
        (root / "functions" / "queue" / "forgotten.sql").write_text("select 1;\n")
    elif change == "missing":
        (root / "functions" / manifest(root)[3]).unlink()
    else:
        listing.write_text(listing.read_text() + manifest(root)[3] + "\n")
    with pytest.raises(
        ManifestError,
        match={
            "unlisted": "not listed: queue/forgotten.sql",
            "missing": "listed but missing",
            "twice": "listed twice",
        }[change],
    ):
        function_files(root)


USER_CODE = """
from datetime import timedelta

import psycopg

import andal
from andal import AsyncClient, Client, Job, Registry


registry = Registry()


@registry.handler("mail", limit=2)
def send(job: Job) -> dict[str, str]:
    return {"sent": str(job.payload["to"])}


def produce(dsn: str) -> int | None:
    client = Client(dsn)
    job_id = client.enqueue({"to": "ana"}, queue="mail", timeout=timedelta(seconds=30))
    info = client.job(job_id) if job_id is not None else None
    return None if info is None else info.job_id


def in_my_transaction(conn: psycopg.Connection[tuple[object, ...]]) -> int | None:
    return andal.enqueue(conn, {"to": "ana"}, "mail", delay=5)


async def produce_async(dsn: str) -> str | None:
    client = AsyncClient(dsn)
    job_id = await client.enqueue({"to": "ana"}, queue="mail")
    info = None if job_id is None else await client.wait(job_id, 10)
    return None if info is None else info.state
"""


def test_user_code_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    """The wheel ships py.typed: a user's ``mypy --strict`` checks calls into andal (it
    would report ``import-untyped`` otherwise), and the public API passes it."""
    (tmp_path / "user.py").write_text(USER_CODE)
    (tmp_path / "wrong.py").write_text(
        "from andal import Client\nx: str = Client('postgresql://').enqueue({}, queue='q')\n"
    )
    mypy = [sys.executable, "-m", "mypy", "--strict", "--no-incremental"]
    ok = subprocess.run([*mypy, "user.py"], cwd=tmp_path, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wrong = subprocess.run([*mypy, "wrong.py"], cwd=tmp_path, capture_output=True, text=True)
    assert "Incompatible types in assignment" in wrong.stdout, wrong.stdout


def _venv(where: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return where / "bin"


def _pip(bin_: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(bin_ / "python"), "-m", "pip", "-q", "--disable-pip-version-check", *args],
        capture_output=True, text=True, check=True, timeout=600,
    )  # fmt: skip


def test_a_0_1_0_install_named_andal_is_replaced_cleanly(tmp_path: Path) -> None:
    """The 0.1.0 distribution was named ``andal``; the README's upgrade (uninstall it, then
    install andal-pg) leaves one distribution owning the import, the new version on the
    command line and a clean ``pip check``. Installed over it without that step, the
    command warns with the fix."""
    (old_commit,) = [ln.split()[1] for ln in (ROOT / "sql/releases.txt").read_text().splitlines()
                     if ln.startswith("0.1.0 ")]  # fmt: skip
    old_tree = tmp_path / "old"
    old_tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", old_commit],
        check=True, capture_output=True,
    ).stdout  # fmt: skip
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(old_tree, filter="data")
    wheels = tmp_path / "wheels"
    for tree in (old_tree, ROOT):
        subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels), str(tree)],
            check=True, capture_output=True, timeout=600,
        )  # fmt: skip
    (old_wheel,) = wheels.glob("andal-0.1.0-*.whl")
    (new_wheel,) = wheels.glob(f"andal_pg-{andal.__version__}-*.whl")
    bin_ = _venv(tmp_path / "venv")
    _pip(bin_, "install", str(old_wheel))
    _pip(bin_, "install", str(new_wheel))  # over it, as a user who skips the README would
    warned = subprocess.run([str(bin_ / "andal"), "--version"], capture_output=True, text=True)
    assert "old distribution `andal` 0.1.0" in warned.stderr, warned.stderr
    _pip(bin_, "uninstall", "-y", "andal", "andal-pg")  # the README's upgrade
    _pip(bin_, "install", str(new_wheel))
    listed = subprocess.run(
        [str(bin_ / "python"), "-m", "pip", "list", "--format=freeze"],
        capture_output=True, text=True, check=True,
    ).stdout.lower().splitlines()  # fmt: skip
    names = {line.split("==")[0] for line in listed}
    assert "andal-pg" in names and "andal" not in names
    clean = subprocess.run([str(bin_ / "andal"), "--version"], capture_output=True, text=True)
    assert clean.stdout.strip() == f"andal {andal.__version__}" and clean.stderr == ""
    subprocess.run([str(bin_ / "python"), "-m", "pip", "check"], check=True, capture_output=True)
