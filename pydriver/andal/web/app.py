"""The `andal web` application: routes, rendering, and the actions an admin may take.

Pages are rendered on the server with Jinja2 (autoescaping on: a payload holding HTML or a
script shows as text). Live parts of a page are fragments that a few lines of script fetch
again every few seconds. Every action is a POST carrying the CSRF token, refused unless the
login may act as andal_admin; the database checks the grants once more.
"""

from __future__ import annotations

import re
import threading
import time
import urllib.parse
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import jinja2
import psycopg
from psycopg_pool import PoolTimeout
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from . import pages, queries, security
from .db import Database
from .fmt import FILTERS


@dataclass
class Settings:
    dsn: str
    admin_dsn: str | None = None
    role_prefix: str | None = None
    root_path: str = ""
    refresh: float = 2.0
    warn: pages.Thresholds = pages.Thresholds()
    access: security.Access = security.Access()
    secret: str | None = None


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("andal.web", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters.update(FILTERS)
    return env


class Shared:
    """The live pages' data, read once for every viewer within ``ttl`` seconds: however many
    browsers are open, the overview's functions run at most once per ``ttl``. Keys are the
    app's own (never a name from a URL); at most ``limit`` are held, the oldest read dropped
    first."""

    def __init__(self, ttl: float, limit: int = 16) -> None:
        self.ttl = ttl
        self.limit = limit
        self.lock = threading.Lock()
        self.held: dict[str, tuple[float, Any]] = {}

    def get(self, key: str, read: Callable[[Database], Any], db: Database) -> Any:
        with self.lock:
            at, data = self.held.get(key, (-1e18, None))
            if time.monotonic() - at < self.ttl:
                return data
            data = read(db)
            self.held.pop(key, None)
            while len(self.held) >= self.limit:
                self.held.pop(next(iter(self.held)))
            self.held[key] = (time.monotonic(), data)
            return data

    def forget(self) -> None:
        """Drop every read (after an action: the next page shows its effect)."""
        with self.lock:
            self.held.clear()


class Web:
    """The routes' shared state: settings, database, templates, signer."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.env = environment()
        self.signer = security.Signer(settings.secret)
        self.root = settings.root_path.rstrip("/")
        self.cookie_path = self.root or "/"
        self.live = Shared(settings.refresh / 2)

    async def render(
        self, request: Request, template: str, status: int = 200, **context: Any
    ) -> Response:
        notice = security.take_notice(request, self.signer)
        lag = await run_in_threadpool(self.live.get, "replica", pages.replica_lag, self.db)
        banner = await self._banner()
        html = self.env.get_template(template).render(
            root=self.root,
            csrf=security.csrf_token(request, self.signer),
            can_act=self.db.can_act,
            version=self.db.version,
            replica_lag=lag,
            banner=banner,
            refresh_ms=int(self.settings.refresh * 1000),
            notice=notice,
            **context,
        )
        response = HTMLResponse(html, status, headers={"Cache-Control": "no-store"})
        security.set_csrf_cookie(response, request, self.signer, self.cookie_path)
        if notice is not None:
            response.delete_cookie(security.NOTICE_COOKIE, path=self.cookie_path)
        return response

    async def _banner(self) -> list[dict[str, str]]:
        data = await run_in_threadpool(self.live.get, "banner", pages.banner_reads, self.db)
        return pages.banner(data, self.settings.warn)

    async def banner_fragment(self, request: Request) -> Response:
        return self.fragment("_banner.html", banner=await self._banner())

    def fragment(self, template: str, **context: Any) -> Response:
        html = self.env.get_template(template).render(
            root=self.root, can_act=self.db.can_act, **context
        )
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    def back(self, request: Request, to: str, notice: str) -> Response:
        self.live.forget()
        response = RedirectResponse(self.root + to, status_code=303)
        secure = request.url.scheme == "https"
        security.set_notice(response, self.signer, notice, self.cookie_path, secure)
        return response

    # -- pages -----------------------------------------------------------------------------

    async def overview(self, request: Request) -> Response:
        data = await run_in_threadpool(self.live.get, "overview", pages.overview, self.db)
        data = pages.trouble_first(data, self.settings.warn)
        return await self.render(request, "overview.html", nav="overview", **data)

    async def overview_fragment(self, request: Request) -> Response:
        data = await run_in_threadpool(self.live.get, "overview", pages.overview, self.db)
        return self.fragment("_overview.html", **pages.trouble_first(data, self.settings.warn))

    async def queue(self, request: Request) -> Response:
        name = request.path_params["name"]
        q = request.query_params
        every = await run_in_threadpool(self.live.get, "queues", pages.every_queue, self.db)
        figures = pages.queue_figures(every, name) or _no_figures(name)
        data = await run_in_threadpool(
            pages.queue, self.db, name, q.get("state") or None, _before(q.get("before"))
        )
        if not (figures["total"] or data["jobs"]):
            return await self.render(request, "no_queue.html", 404, nav="queues", name=name)
        return await self.render(request, "queue.html", nav="queues", **figures, **data)

    async def queue_fragment(self, request: Request) -> Response:
        name = request.path_params["name"]
        every = await run_in_threadpool(self.live.get, "queues", pages.every_queue, self.db)
        figures = pages.queue_figures(every, name)
        if figures is None:
            return PlainTextResponse("no such queue\n", 404)
        return self.fragment("_queue.html", **figures)

    async def job(self, request: Request) -> Response:
        job_id = _int(request.path_params["job_id"])
        if job_id is None:
            return await self.render(request, "job.html", 404, nav="job", job_id=None, job=None)
        data = await run_in_threadpool(pages.job, self.db, job_id)
        status = 200 if data["job"] else 404
        return await self.render(request, "job.html", status, nav="job", job_id=job_id, **data)

    async def find_job(self, request: Request) -> Response:
        job_id = _int(request.query_params.get("id", "").strip())
        if job_id is None:
            return self.back(request, "/", "a job id is a whole number")
        return RedirectResponse(f"{self.root}/jobs/{job_id}", status_code=303)

    async def dead(self, request: Request) -> Response:
        q = request.query_params
        queue_name, reason = q.get("queue") or None, q.get("reason") or None
        if reason is None and q.get("state") == "cancelled":  # the filter's earlier name
            reason = "cancelled"
        data = await run_in_threadpool(
            pages.dead_letters, self.db, queue_name, reason, _before(q.get("before"))
        )
        here = "/dead?" + urllib.parse.urlencode(
            {"queue": queue_name or "", "reason": reason or ""}
        )
        return await self.render(request, "dead.html", nav="dead", here=here, **data)

    async def workers(self, request: Request) -> Response:
        data = await run_in_threadpool(self.live.get, "workers", pages.workers, self.db)
        return await self.render(request, "workers.html", nav="workers", **data)

    async def workers_fragment(self, request: Request) -> Response:
        data = await run_in_threadpool(self.live.get, "workers", pages.workers, self.db)
        return self.fragment("_workers.html", **data)

    # -- actions ---------------------------------------------------------------------------

    async def _action_form(self, request: Request) -> tuple[Any, Response | None]:
        """The POSTed form, or the refusal when it is not a valid admin action."""
        form = await request.form()
        if not security.same_origin(request):
            return form, PlainTextResponse(
                "refused: the form was not sent from a page of this dashboard (Origin or"
                " Sec-Fetch-Site names another site)\n",
                403,
            )
        if not security.csrf_valid(request, self.signer, _str(form.get(security.CSRF_FIELD))):
            return form, PlainTextResponse(
                "refused: the form's CSRF token is missing, wrong or expired; reload the page\n",
                403,
            )
        if not self.db.can_act:
            return form, PlainTextResponse(
                "refused: this dashboard is read-only (started with --read-only, or its login"
                f" role is not a member of {self.db.admin_role})\n",
                403,
            )
        return form, None

    async def requeue(self, request: Request) -> Response:
        form, refused = await self._action_form(request)
        if refused:
            return refused
        ids = _ids(form)
        done, errors = await run_in_threadpool(self._each, queries.REQUEUE_DEAD, ids)
        text = f"requeued {len(done)} dead letter(s)" + _errors(errors)
        return self.back(request, _local(_str(form.get("back"))) or "/dead", text)

    async def matching(self, request: Request) -> Response:
        """Requeue or purge every dead letter matching the page's filter: confirmed by the
        form's checkbox, at most ``pages.BULK_LIMIT`` per press (the SQL functions' bound)."""
        form, refused = await self._action_form(request)
        if refused:
            return refused
        back = _local(_str(form.get("back"))) or "/dead"
        if _str(form.get("confirm")) != "yes":
            return self.back(request, back, "refused: tick the box to confirm, then press again")
        purge = request.url.path.endswith("/purge-matching")
        params = {
            "queue": _str(form.get("queue")) or None,
            "reason": _str(form.get("reason")) or None,
            "max_rows": pages.BULK_LIMIT,
        }
        try:
            row = await run_in_threadpool(
                self.db.act_row, queries.PURGE_MATCHING if purge else queries.REQUEUE_MATCHING,
                params,
            )  # fmt: skip
        except psycopg.Error as exc:
            return self.back(request, back, "refused: " + _refusal(exc))
        done = int(row[0]) if row else 0
        kept = int(row[1]) if row and not purge else 0
        text = f"{'purged' if purge else 'requeued'} {done} dead letter(s) matching the filter"
        if kept:
            text += f"; {kept} refused (a live job holds their dedup key)"
        if done + kept >= pages.BULK_LIMIT:
            text += f"; at most {pages.BULK_LIMIT} per press: press again for more"
        return self.back(request, back, text)

    async def purge(self, request: Request) -> Response:
        form, refused = await self._action_form(request)
        if refused:
            return refused
        ids = _ids(form)
        try:
            n = await run_in_threadpool(self.db.act, queries.PURGE_DEAD_JOBS, {"job_ids": ids})
            text = f"purged {n} dead letter(s)"
        except psycopg.Error as exc:
            text = "refused: " + _refusal(exc)
        return self.back(request, _local(_str(form.get("back"))) or "/dead", text)

    async def cancel(self, request: Request) -> Response:
        form, refused = await self._action_form(request)
        if refused:
            return refused
        job_id = request.path_params["job_id"]
        done, errors = await run_in_threadpool(self._each, queries.CANCEL, [job_id])
        text = f"cancelled job {job_id}" if done else "refused: " + "; ".join(errors)
        return self.back(request, f"/jobs/{job_id}", text)

    async def pause(self, request: Request) -> Response:
        return await self._queue_action(request, queries.PAUSE, "paused")

    async def resume(self, request: Request) -> Response:
        return await self._queue_action(request, queries.RESUME, "resumed")

    async def _queue_action(self, request: Request, statement: str, done: str) -> Response:
        form, refused = await self._action_form(request)
        if refused:
            return refused
        name = request.path_params["name"]
        try:
            await run_in_threadpool(self.db.act, statement, {"queue": name})
            text = f"{done} queue {name}"
        except psycopg.Error as exc:
            text = "refused: " + _refusal(exc)
        return self.back(request, f"/queues/{urllib.parse.quote(name, safe='')}", text)

    def _each(self, statement: str, ids: list[int]) -> tuple[list[int], list[str]]:
        """One action per id, each in its own transaction: one refusal spoils no other."""
        done: list[int] = []
        errors: list[str] = []
        for job_id in ids:
            try:
                self.db.act(statement, {"job_id": job_id})
                done.append(job_id)
            except psycopg.Error as exc:
                errors.append(f"job {job_id}: {_refusal(exc)}")
        return done, errors

    async def healthz(self, request: Request) -> Response:
        return PlainTextResponse("ok\n")


def _no_figures(name: str) -> dict[str, Any]:
    return {"name": name, "total": None, "categories": [], "rate_limits": []}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _local(path: str | None) -> str | None:
    """A path of this dashboard to go back to, or None (never another site)."""
    local = re.fullmatch(r"/[A-Za-z0-9/_.~%-]*(\?[A-Za-z0-9_.~%=&+-]*)?", path or "")
    return path if path and local and "//" not in path else None


class BadInput(ValueError):
    """A query parameter that is not what the page takes: answered 400 with the reason."""


def _int(text: str | None) -> int | None:
    """A job id: a whole number from 1 to the largest bigint, else None."""
    try:
        value = int(text or "")
    except ValueError:
        return None
    return value if 0 < value <= pages.MAX_ID else None


def _before(text: str | None) -> int | None:
    """The ``before`` of a page (a job id); absent: the first page."""
    if not text:
        return None
    value = _int(text)
    if value is None:
        raise BadInput(f"before: expected a job id (a whole number from 1), got {text[:40]!r}")
    return value


def _ids(form: Any) -> list[int]:
    one = _int(_str(form.get("one")))
    if one is not None:
        return [one]
    return [i for i in (_int(_str(v)) for v in form.getlist("ids")) if i is not None]


def _refusal(exc: psycopg.Error) -> str:
    diag = getattr(exc, "diag", None)
    message = (diag.message_primary if diag else None) or " ".join(str(exc).split())
    code = diag.sqlstate if diag else None
    return f"{message} (SQLSTATE {code})" if code else message


def _errors(errors: list[str]) -> str:
    return ("; refused: " + "; ".join(errors)) if errors else ""


def create_app(settings: Settings, db: Database | None = None) -> Starlette:
    """The ASGI application. ``db`` (opened) may be given; else it is opened at startup."""
    database = db or Database(settings.dsn, settings.admin_dsn, settings.role_prefix)
    web = Web(settings, database)

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if db is None:
            await run_in_threadpool(database.open)
        try:
            yield
        finally:
            await run_in_threadpool(database.close)

    get: Callable[..., Route] = lambda path, fn: Route(path, fn, methods=["GET"])  # noqa: E731
    post: Callable[..., Route] = lambda path, fn: Route(path, fn, methods=["POST"])  # noqa: E731
    routes = [
        get("/", web.overview),
        get("/fragments/overview", web.overview_fragment),
        get("/fragments/banner", web.banner_fragment),
        # a queue's name may hold "/": its routes take the rest of the path
        post("/queues/{name:path}/pause", web.pause),
        post("/queues/{name:path}/resume", web.resume),
        get("/queues/{name:path}", web.queue),
        get("/fragments/queues/{name:path}", web.queue_fragment),
        get("/jobs", web.find_job),
        get("/jobs/{job_id}", web.job),
        post("/jobs/{job_id:int}/cancel", web.cancel),
        get("/dead", web.dead),
        post("/dead/requeue", web.requeue),
        post("/dead/purge", web.purge),
        post("/dead/requeue-matching", web.matching),
        post("/dead/purge-matching", web.matching),
        get("/workers", web.workers),
        get("/fragments/workers", web.workers_fragment),
        get("/healthz", web.healthz),
        Mount("/static", StaticFiles(packages=[("andal.web", "static")]), name="static"),
    ]
    return Starlette(
        routes=routes,
        lifespan=lifespan,
        middleware=[
            Middleware(security.HeadersMiddleware),
            Middleware(security.PrefixMiddleware, root=web.root),
            Middleware(security.AccessMiddleware, access=settings.access),
        ],
        exception_handlers={
            psycopg.OperationalError: _unavailable,
            psycopg.DataError: _bad_request,
            BadInput: _bad_request,
            PoolTimeout: _unavailable,
        },
    )


async def _bad_request(request: Request, exc: Exception) -> Response:
    diag = getattr(exc, "diag", None)
    reason = (diag.message_primary if diag else None) or " ".join(str(exc).split())
    return PlainTextResponse(f"bad request: {reason}\n", 400)


async def _unavailable(request: Request, exc: Exception) -> Response:
    return PlainTextResponse(f"the database is unavailable: {' '.join(str(exc).split())}\n", 503)
