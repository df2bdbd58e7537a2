"""`andal web`'s small parts, without a server: the shared read of the live pages, the
credentials check, cookie signatures, the redirect guard and the charts."""

from __future__ import annotations

import base64
from typing import Any

import pytest

pytest.importorskip("starlette")

from andal.web import app, charts, command, security  # noqa: E402


def test_live_pages_are_read_once_per_interval_for_every_viewer() -> None:
    reads: list[int] = []

    def read(_db: Any) -> int:
        reads.append(1)
        return len(reads)

    shared = app.Shared(ttl=3600)
    assert [shared.get("overview", read, None) for _ in range(10)] == [1] * 10  # type: ignore[arg-type]
    assert shared.get("workers", read, None) == 2  # type: ignore[arg-type]
    fresh = app.Shared(ttl=0)
    assert fresh.get("overview", read, None) != fresh.get("overview", read, None)  # type: ignore[arg-type]


def test_credentials() -> None:
    access = security.Access(token="t0k", basic="ops:pa:ss")
    assert access.admits("Bearer t0k") and access.admits("bearer t0k")
    assert access.admits("Basic " + base64.b64encode(b"ops:pa:ss").decode())
    for header in (None, "", "Bearer", "Bearer t0", "Bearer t0kX", "Basic !!!", "Basic b3BzOg=="):
        assert not access.admits(header), header
    assert security.Access().admits(None)  # nothing configured: open (bound to localhost)
    assert not security.Access(token="t").admits("Basic " + base64.b64encode(b"t").decode())


def test_signatures() -> None:
    signer = security.Signer("secret")
    signed = signer.sign("abc")
    assert signer.unsign(signed) == "abc"
    assert signer.unsign(signed[:-1] + ("0" if signed[-1] != "0" else "1")) is None
    assert signer.unsign("abc") is None and signer.unsign(None) is None
    assert security.Signer("other").unsign(signed) is None


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("/jobs/12", True),
        ("/dead", True),
        ("//evil.example/x", False),
        ("https://evil.example", False),
        ("/jobs/1//x", False),
        ("/\\evil", False),
        ("", False),
        (None, False),
    ],
)
def test_back_goes_only_to_this_dashboard(path: str | None, kept: bool) -> None:
    assert app._local(path) == (path if kept else None)


def test_spark_scales_to_the_box() -> None:
    s = charts.spark([0, 5, 10])
    ys = [float(p.split(",")[1]) for p in s.points.split()]
    assert ys[0] == charts.HEIGHT - 1 and ys[2] == 1.0 and s.peak == 10
    assert charts.spark([]).points == "" and charts.spark([None, None]).peak == 0.0
    rate = charts.spark([0.5], peak=1.0)
    assert float(rate.points.split(",")[1]) == pytest.approx(charts.HEIGHT / 2)


def test_bind() -> None:
    assert command.parse_bind("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert command.parse_bind("[::1]:9000") == ("::1", 9000)
    assert command.parse_bind(":9000") == ("127.0.0.1", 9000)
    for bad in ("8080", "host:", "host:http", "host:70000"):
        with pytest.raises(ValueError):
            command.parse_bind(bad)
