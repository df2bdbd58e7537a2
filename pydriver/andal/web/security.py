"""Who may see the dashboard, and which POSTs are the operator's own.

* Optional access control for deployments behind a proxy: a bearer token
  (``Authorization: Bearer …``) and/or HTTP basic auth; either one given admits the request.
  Compared in constant time. ``/healthz`` stays open (it says nothing but "ok").
* CSRF: every page sets a session cookie holding a random id signed with the server's secret
  (HttpOnly, SameSite=Strict); every form carries a token that is an HMAC, with that secret,
  over the session id, the request's credentials (its ``Authorization`` header), this
  dashboard's own origin (the ``Host`` it was served under) and the time the token was
  made. A POST is accepted only when its token holds for its own session, credentials and
  origin and is less than ``CSRF_MAX_AGE`` old, and when the browser says the form came from
  this very origin (``Sec-Fetch-Site`` is ``same-origin``, ``Origin`` is this host): a page on
  another port of the same host (same site, so it shares cookies) or another dashboard that
  shares the secret can neither reuse its own token nor send the form.
* Headers that keep the pages from running other scripts or being framed.
* A notice for the page after an action, in a signed cookie (never in the URL).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import time
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_COOKIE = "andal_csrf"
CSRF_FIELD = "csrf"
NOTICE_COOKIE = "andal_notice"
#: Seconds a form's CSRF token stays valid (a page left open longer: reload it).
CSRF_MAX_AGE = 12 * 3600


@dataclass(frozen=True)
class Access:
    token: str | None = None
    basic: str | None = None  # "user:password"

    @property
    def required(self) -> bool:
        return bool(self.token or self.basic)

    def admits(self, authorization: str | None) -> bool:
        if not self.required:
            return True
        scheme, _, value = (authorization or "").partition(" ")
        scheme = scheme.lower()
        if self.token and scheme == "bearer":
            return hmac.compare_digest(value.strip().encode(), self.token.encode())
        if self.basic and scheme == "basic":
            try:
                given = base64.b64decode(value.strip(), validate=True)
            except (binascii.Error, ValueError):
                return False
            return hmac.compare_digest(given, self.basic.encode())
        return False


class AccessMiddleware:
    """Refuses every request but ``/healthz`` that does not carry the configured credentials."""

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.access.required or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        auth = headers.get(b"authorization", b"").decode("latin-1")
        if self.access.admits(auth):
            await self.app(scope, receive, send)
            return
        challenge = {"WWW-Authenticate": 'Basic realm="andal"'} if self.access.basic else {}
        await PlainTextResponse("authentication required\n", 401, headers=challenge)(
            scope, receive, send
        )


#: Sent with every response: only the app's own script and style run (a payload that slipped
#: past escaping could not execute), no framing (no clickjacking of the action buttons).
HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:;"
        b" connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
]


class HeadersMiddleware:
    """Adds ``HEADERS`` to every HTTP response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message = dict(message, headers=[*message.get("headers", []), *HEADERS])
            await send(message)

        await self.app(scope, receive, send_with_headers)


class PrefixMiddleware:
    """Serves the app under ``root`` too: a request for ``root/x`` is handled as ``/x``, so a
    proxy may pass the prefix on or strip it."""

    def __init__(self, app: ASGIApp, root: str) -> None:
        self.app = app
        self.root = root

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if (
            self.root
            and scope["type"] == "http"
            and (path == self.root or path.startswith(self.root + "/"))
        ):
            scope = dict(scope, path=path[len(self.root) :] or "/")
        await self.app(scope, receive, send)


class Signer:
    """HMAC-SHA256 signatures of short cookie values with the server's secret."""

    def __init__(self, secret: str | None) -> None:
        self.key = (secret or secrets.token_hex(32)).encode()

    def sign(self, value: str) -> str:
        mac = hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()
        return f"{value}.{mac}"

    def unsign(self, signed: str | None) -> str | None:
        if not signed or "." not in signed:
            return None
        value, _, mac = signed.rpartition(".")
        good = hmac.new(self.key, value.encode(), hashlib.sha256).hexdigest()
        return value if hmac.compare_digest(mac, good) else None


def _session(request: Request, signer: Signer) -> str:
    """This browser's session id: the one in its cookie when the signature holds, else a new
    one (set by ``set_csrf_cookie`` on the response)."""
    sid = signer.unsign(request.cookies.get(CSRF_COOKIE))
    if sid is None:
        sid = getattr(request.state, "new_csrf", None)
        if sid is None:
            sid = request.state.new_csrf = secrets.token_urlsafe(32)
    return sid


def _bound(request: Request, signer: Signer, sid: str, issued: int) -> str:
    """The token's MAC: over the session, the credentials, this origin and the time."""
    credential = hashlib.sha256(request.headers.get("authorization", "").encode()).hexdigest()
    host = request.headers.get("host", "")
    message = f"csrf|{sid}|{credential}|{host}|{issued}"
    return hmac.new(signer.key, message.encode(), hashlib.sha256).hexdigest()


def csrf_token(request: Request, signer: Signer, now: float | None = None) -> str:
    """The token for this page's forms: ``<issued>.<mac>``."""
    issued = int(time.time() if now is None else now)
    return f"{issued}.{_bound(request, signer, _session(request, signer), issued)}"


def set_csrf_cookie(response: Response, request: Request, signer: Signer, path: str) -> None:
    new = getattr(request.state, "new_csrf", None)
    if new:
        response.set_cookie(
            CSRF_COOKIE,
            signer.sign(new),
            path=path,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
        )


def csrf_valid(
    request: Request, signer: Signer, field: str | None, now: float | None = None
) -> bool:
    """The form's token holds for this session, these credentials, this origin and is recent."""
    sid = signer.unsign(request.cookies.get(CSRF_COOKIE))
    issued_text, _, mac = (field or "").partition(".")
    if not sid or not mac or not issued_text.isdigit() or len(issued_text) > 12:
        return False
    issued = int(issued_text)
    age = (time.time() if now is None else now) - issued
    if not -60 <= age <= CSRF_MAX_AGE:
        return False
    return hmac.compare_digest(mac.encode(), _bound(request, signer, sid, issued).encode())


def same_origin(request: Request) -> bool:
    """The browser's word that the POST comes from a page of this origin: ``Sec-Fetch-Site``
    (sent by every current browser) must be ``same-origin``, and ``Origin``, when sent, must
    name this host (``Host``, or ``X-Forwarded-Host`` behind a proxy). A client that sends
    neither (curl, a script) is judged by its token alone."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site != "same-origin":
        return False
    origin = request.headers.get("origin")
    if origin is None:
        return True
    hosts = {request.headers.get("host"), request.headers.get("x-forwarded-host")}
    scheme, sep, netloc = origin.partition("://")
    return bool(sep) and scheme in ("http", "https") and netloc in hosts - {None}


def set_notice(response: Response, signer: Signer, text: str, path: str, secure: bool) -> None:
    value = base64.urlsafe_b64encode(text.encode()).decode()
    response.set_cookie(
        NOTICE_COOKIE,
        signer.sign(value),
        path=path,
        httponly=True,
        samesite="strict",
        secure=secure,
    )


def take_notice(request: Request, signer: Signer) -> str | None:
    value = signer.unsign(request.cookies.get(NOTICE_COOKIE))
    if not value:
        return None
    try:
        return base64.urlsafe_b64decode(value.encode()).decode()
    except (binascii.Error, ValueError):
        return None
