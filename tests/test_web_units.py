"""`andal web`'s small parts, without a server: the shared read of the live pages, the
credentials check, cookie signatures, the redirect guard and the charts."""

from __future__ import annotations

import base64
from datetime import datetime, timedelta, timezone
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
    bounded = app.Shared(ttl=3600, limit=3)
    for key in range(10):
        bounded.get(str(key), read, None)  # type: ignore[arg-type]
    assert list(bounded.held) == ["7", "8", "9"]  # the oldest reads dropped first


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


def _request(cookie: str = "", host: str = "dash:8080", auth: str = "") -> Any:
    from starlette.requests import Request

    headers = [(b"host", host.encode()), (b"cookie", cookie.encode())]
    if auth:
        headers.append((b"authorization", auth.encode()))
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers})


def test_csrf_tokens_expire_and_are_bound_to_session_host_and_credentials() -> None:
    signer = security.Signer("secret")
    first = _request()
    token = security.csrf_token(first, signer, now=1000)
    cookie = f"{security.CSRF_COOKIE}={signer.sign(first.state.new_csrf)}"
    assert security.csrf_valid(_request(cookie), signer, token, now=1000)
    last = 1000 + security.CSRF_MAX_AGE
    assert security.csrf_valid(_request(cookie), signer, token, now=last)
    assert not security.csrf_valid(_request(cookie), signer, token, now=last + 1)
    assert not security.csrf_valid(_request(cookie), signer, token, now=900)  # from the future
    assert not security.csrf_valid(_request(cookie, host="dash:8081"), signer, token, now=1000)
    assert not security.csrf_valid(_request(cookie, auth="Bearer x"), signer, token, now=1000)
    assert not security.csrf_valid(_request(), signer, token, now=1000)  # no session
    assert not security.csrf_valid(_request(cookie), security.Signer("other"), token, now=1000)
    for bad in (None, "", "1000", "1000.", "x.y", token.replace("1000.", "1001.")):
        assert not security.csrf_valid(_request(cookie), signer, bad, now=1000), bad


@pytest.mark.parametrize(
    ("path", "kept"),
    [
        ("/jobs/12", True),
        ("/dead", True),
        ("/dead?queue=a%2Fb&reason=cancelled", True),
        ("/dead?queue=<b>", False),
        ("/dead?x=1#y", False),
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


def test_spark_scales_to_the_plot_band() -> None:
    s = charts.spark([0, 5, 10])
    ys = [float(p.split(",")[1]) for p in s.points.split()]
    assert ys[0] == charts.PLOT_BOTTOM and ys[2] == charts.PLOT_TOP and s.peak == 10
    assert charts.spark([]).points == "" and charts.spark([None, None]).peak == 0.0
    rate = charts.spark([0.5], peak=1.0, unit="%")
    middle = (charts.PLOT_TOP + charts.PLOT_BOTTOM) / 2
    assert float(rate.points.split(",")[1]) == pytest.approx(middle)
    assert rate.top == "100 %"


def test_spark_writes_its_unit_scale_and_range() -> None:
    t0 = datetime(2026, 12, 2, 19, 25, tzinfo=timezone.utc)
    times = [t0 + timedelta(minutes=i) for i in range(61)]
    s = charts.spark([3] * 60 + [12], times=times)
    assert (s.top, s.start, s.end) == ("12 jobs/min", "19:25", "20:25")
    assert s.label == "completed per minute, 19:25–20:25 UTC, top of the scale 12 jobs/min"
    empty = charts.spark([], unit="%", what="failed")
    assert empty.label == "failed per minute, last hour, no data yet, top of the scale 0 %"
    assert charts.spark([0.5], unit="jobs/min").top == "0.5 jobs/min"


def test_bind() -> None:
    assert command.parse_bind("127.0.0.1:8080") == ("127.0.0.1", 8080)
    assert command.parse_bind("[::1]:9000") == ("::1", 9000)
    assert command.parse_bind(":9000") == ("127.0.0.1", 9000)
    for bad in ("8080", "host:", "host:http", "host:70000"):
        with pytest.raises(ValueError):
            command.parse_bind(bad)


@pytest.mark.parametrize(
    ("seconds", "words"),
    [(0.25, "250 ms"), (5, "5 s"), (60, "1 min"), (90, "1 min 30 s"), (3600, "1 h"),
     (5400, "1 h 30 min"), (86400, "1 day"), (7 * 86400, "7 days"),
     (30 * 86400 + 7200, "30 days 2 h")],
)  # fmt: skip
def test_intervals_read_in_words(seconds: float, words: str) -> None:
    from datetime import timedelta

    from andal.web.fmt import span

    assert span(timedelta(seconds=seconds)) == words
    assert span(None, "none") == "none"
