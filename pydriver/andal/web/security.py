"""Who may see the dashboard, and which POSTs are the operator's own.

* Optional access control for deployments behind a proxy: a bearer token
  (``Authorization: Bearer …``) and/or HTTP basic auth; either one given admits the request.
  Compared in constant time. ``/healthz`` stays open (it says nothing but "ok").
* CSRF: a double-submit token. Every page sets a cookie holding a random token signed with
  the server's secret (HttpOnly, SameSite=Strict); every form carries the same token in a
  hidden field; a POST is accepted only when both are present, the signature holds and they
  match. Another site can neither read the cookie nor forge the field.
* Headers that keep the pages from running other scripts or being framed.
* A notice for the page after an action, in a signed cookie (never in the URL).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
from dataclasses import dataclass

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CSRF_COOKIE = "andal_csrf"
CSRF_FIELD = "csrf"
NOTICE_COOKIE = "andal_notice"


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


def csrf_token(request: Request, signer: Signer) -> str:
    """This browser's token: the one in its cookie when valid, else a new one (set by
    ``set_csrf_cookie`` on the response)."""
    token = signer.unsign(request.cookies.get(CSRF_COOKIE))
    if token is None:
        token = request.state.new_csrf = secrets.token_urlsafe(32)
    return token


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


def csrf_valid(request: Request, signer: Signer, field: str | None) -> bool:
    token = signer.unsign(request.cookies.get(CSRF_COOKIE))
    if not token or not field:
        return False
    return hmac.compare_digest(token.encode(), field.encode())


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
