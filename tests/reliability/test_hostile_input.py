"""6. Hostile input: 500 generated names and payloads against the API.

Names (queue, category, dedup_key, cache_key, worker, cache key) are built from quotes, ``;``,
``$$``, ``--``, comment markers, format specifiers, backslashes, control characters, unicode
(combining marks, RTL override, zero-width, emoji sequences, astral planes), NUL bytes, and
lengths at and past each limit up to 10,000 characters. Payloads are random objects of such
strings, non-objects, deeply nested JSON (10,000 levels, and 200,000: past the server's
stack), \\u0000 escapes, raw NUL bytes, invalid JSON, and 1 MiB / 1 MiB + 1 byte of JSON text
(ASCII and multibyte). Calls: enqueue, enqueue_many, claim (worker and queue names),
set_category_limit, cache.put.

Each call is either rejected with the SQLSTATE the contract documents for its first defect
(docs/sql-api.md; for defects PostgreSQL itself rejects before andal runs: 22021 NUL byte in
text, 22P02 invalid JSON, 22P05 \\u0000 in JSON, 54001 nesting past max_stack_depth), with
every andal, cache and history table unchanged (fingerprint of the visible row versions:
ctid and xmin), or accepted and stored verbatim (read back and compared). The catalogs gain
no object (pg_class, pg_proc, pg_namespace, pg_type, pg_trigger, pg_roles). The accepted jobs
are then claimed (payload compared again) and completed: the checker is clean.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

import psycopg
from psycopg.types.string import TextLoader

from reliability import history

SEED, CASES = 6, 500
LIMIT = 1_048_576  # payload_limit (queue default) and cache max_value_bytes

PIECES = [
    "'", "''", '"', ";", "$$", "$tag$", "--", "/*", "*/", "\\", "\\\\", "%s", "%I", "%L", "%%",
    "' or '1'='1", "'); drop table queue.jobs; --", "$$; drop schema queue cascade; $$",
    "E'\\x41'", "\n", "\r\n", "\t", " ", "é", "ß", "中文字", "😀", "👩‍👩‍👧", "\u202e", "\u200b",
    "e\u0301", "\ufeff", "Ｑ", "null", "NULL", "default", "pg_catalog", "public.x", '"x"."y"',
    "${x}", "{{x}}", "<script>", "\x7f", "\x01", "ﷺ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "\\u0000", "\U0010fffd",
]  # fmt: skip


@dataclass
class Case:
    n: int
    family: str
    names: dict[str, str | None] = field(default_factory=dict)
    payloads: list[tuple[str | None, Any]] = field(default_factory=list)  # (json text, object)
    number: int | None = None  # set_category_limit's max_running
    expect: set[str] = field(default_factory=set)  # empty: accepted

    def describe(self) -> str:
        short = {k: (v if v is None or len(v) < 40 else f"{v[:20]!r}...({len(v)})")
                 for k, v in self.names.items()}  # fmt: skip
        sizes = [None if t is None else len(t) for t, _ in self.payloads]
        return f"#{self.n} {self.family} names={short} payload_chars={sizes}"


# -- generation ------------------------------------------------------------------------------


def gen_name(rng: random.Random, limit: int) -> str:
    roll = rng.random()
    if roll < 0.06:
        return ""
    if roll < 0.12:
        return rng.choice("x😀é") * rng.choice([limit, limit + 1])
    if roll < 0.15:
        return rng.choice(["x", "'", "😀"]) * 10_000
    if roll < 0.22:
        name = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 4)))
        i = rng.randint(0, len(name))
        return name[:i] + "\x00" + name[i:]
    return "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 6)))


def gen_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 3 and roll < 0.25:
        return {gen_name(rng, 20).replace("\x00", ""): gen_value(rng, depth + 1)
                for _ in range(rng.randint(0, 4))}  # fmt: skip
    if depth < 3 and roll < 0.4:
        return [gen_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return rng.choice([
        gen_name(rng, 40).replace("\x00", ""), rng.randint(-(2**70), 2**70), rng.random() * 1e300,
        True, False, None, "",
    ])  # fmt: skip


def deep(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


def sized(total_bytes: int, multibyte: bool) -> str:
    """A payload whose JSON text, as PostgreSQL prints it, is exactly total_bytes long."""
    inner = total_bytes - len('{"p": ""}')
    body = "é" * (inner // 2) + "x" * (inner % 2) if multibyte else "x" * inner
    return json.dumps({"p": body}, ensure_ascii=False)


def gen_payload(rng: random.Random) -> tuple[str | None, Any, set[str], set[str]]:
    """(JSON text or None, the object when it is plain JSON, cast errors, andal errors)."""
    roll = rng.random()
    if roll < 0.55:
        obj = {
            gen_name(rng, 30).replace("\x00", ""): gen_value(rng) for _ in range(rng.randint(0, 6))
        }
        if rng.random() < 0.1:
            obj["nul"] = "a\x00b"  # serialised as \u0000
            return json.dumps(obj, ensure_ascii=rng.random() < 0.5), None, {"22P05"}, set()
        return json.dumps(obj, ensure_ascii=rng.random() < 0.5), obj, set(), set()
    if roll < 0.65:
        obj = rng.choice([[1, "a"], "s", 1, 2.5, True, None, []])
        return json.dumps(obj), obj, set(), {"22023"}
    if roll < 0.70:
        return None, None, set(), {"22004"}
    if roll < 0.76:
        return (
            rng.choice(["{", "{'a': 1}", "NaN", '{"a":}', "", '{"a":1}}', "\\u0000"]),
            None,
            {"22P02"},
            set(),
        )
    if roll < 0.80:
        return '{"a": "x\x00y"}', None, {"22021"}, set()
    if roll < 0.84:
        return '{"k\\u0000": 1}', None, {"22P05"}, set()
    if roll < 0.90:
        return deep(rng.choice([100, 1000, 10_000])), "deep", set(), set()
    if roll < 0.91:
        return deep(200_000), None, {"54001"}, set()
    over = rng.random() < 0.5
    text = sized(LIMIT + (1 if over else 0), multibyte=rng.random() < 0.5)
    return text, "big", set(), ({"54000"} if over else set())


def name_codes(value: str | None, limit: int, required: bool) -> tuple[set[str], set[str]]:
    """(cast errors, andal errors) of a name argument."""
    if value is None:
        return set(), ({"22004"} if required else set())
    if "\x00" in value:
        return {"22021"}, set()
    if len(value) == 0 or len(value) > limit:
        return set(), {"22023"}
    return set(), set()


def make_cases() -> list[Case]:
    rng = random.Random(SEED)
    cases: list[Case] = []
    families = ["enqueue"] * 60 + ["enqueue_many"] * 12 + ["claim"] * 10 + ["category"] * 8
    families += ["cache_put"] * 10
    # the extremes, each at least once
    fixed: list[tuple[str, dict[str, str | None], str | None]] = [
        ("enqueue", {"queue": "q" * 10_000}, "{}"),
        ("enqueue", {"queue": "ok", "category": "c" * 10_000}, "{}"),
        ("enqueue", {"queue": "ok", "dedup_key": "d" * 10_000}, "{}"),
        ("enqueue", {"queue": "ok", "cache_key": "k" * 10_000}, "{}"),
        ("enqueue", {"queue": "😀" * 128}, "{}"),
        ("enqueue", {"queue": "'); drop table queue.jobs; --"}, sized(LIMIT, False)),
        ("enqueue", {"queue": "$$"}, sized(LIMIT + 1, False)),
        ("enqueue", {"queue": "--"}, sized(LIMIT, True)),
        ("enqueue", {"queue": ";"}, sized(LIMIT + 1, True)),
        ("enqueue", {"queue": "deep"}, deep(10_000)),
        ("enqueue", {"queue": "too deep"}, deep(200_000)),
        ("enqueue", {"queue": "nul\x00"}, "{}"),
        ("enqueue", {"queue": None}, "{}"),
        ("claim", {"worker": "w" * 10_000}, None),
        ("cache_put", {"key": "k" * 10_000}, '"v"'),
    ]
    for family, names, text in fixed:
        cases.append(fixed_case(len(cases), family, names, text))
    while len(cases) < CASES:
        cases.append(random_case(len(cases), rng.choice(families), rng))
    return cases


def fixed_case(n: int, family: str, names: dict[str, str | None], text: str | None) -> Case:
    case = Case(n, family, dict(names))
    cast: set[str] = set()
    own: set[str] = set()
    limits = {"queue": 128, "category": 128, "dedup_key": 512, "cache_key": 512, "worker": 128}
    limits["key"] = 512
    for arg, value in names.items():
        c, o = name_codes(value, limits[arg], arg in ("queue", "worker", "key"))
        cast |= c
        own |= o
    if family in ("enqueue", "cache_put"):
        obj: Any = None
        if text is not None and len(text) < 1000:
            obj = json.loads(text)
        if text is not None and text.startswith('{"a":{"a":'):
            obj = "deep"
            if text.count("{") > 100_000:
                cast.add("54001")
        elif text is not None and len(text) >= 1000:
            obj = "big"
            if len(text.encode()) > LIMIT:
                own.add("54000")
        case.payloads = [(text, obj)]
    case.expect = cast or own
    return case


def random_case(n: int, family: str, rng: random.Random) -> Case:
    case = Case(n, family)
    cast: set[str] = set()
    own: set[str] = set()

    def name(arg: str, limit: int, required: bool, optional_p: float = 0.0) -> None:
        value = None if rng.random() < optional_p else gen_name(rng, limit)
        if required and rng.random() < 0.03:
            value = None
        case.names[arg] = value
        c, o = name_codes(value, limit, required)
        cast.update(c)
        own.update(o)

    def payload() -> None:
        text, obj, c, o = gen_payload(rng)
        case.payloads.append((text, obj))
        cast.update(c)
        own.update(o)

    if family == "enqueue":
        name("queue", 128, True)
        name("category", 128, False, 0.5)
        name("dedup_key", 512, False, 0.7)
        name("cache_key", 512, False, 0.9)
        payload()
    elif family == "enqueue_many":
        name("queue", 128, True)
        name("category", 128, False, 0.5)
        for _ in range(rng.randint(1, 4)):
            payload()
        if any(t is None for t, _ in case.payloads):
            own.add("22004")  # a null element
    elif family == "claim":
        name("worker", 128, True)
    elif family == "category":
        name("category", 128, True)
        case.number = rng.choice([None, -1, 0, 1, 5])
        if case.number is None:
            own.add("22004")
        elif case.number < 0:
            own.add("22023")
    elif family == "cache_put":
        name("key", 512, True)
        text, obj, c, o = gen_payload(rng)
        # any JSON value is a cache value, except JSON null (22023) and SQL null (22004)
        if not c and not o.intersection({"22004", "54000"}):
            o = {"22023"} if text == "null" else set()
        case.payloads.append((text, obj))
        cast.update(c)
        own.update(o)
    case.expect = cast or own
    return case


# -- running ---------------------------------------------------------------------------------


def arg(key: str, value: str | None) -> tuple[str, Any]:
    """SQL expression and parameter for a text argument: NUL bytes travel as bytea (a text
    parameter cannot carry them), so the server, not the client, rejects them."""
    if value is not None and "\x00" in value:
        return f"convert_from(%({key})s::bytea, 'UTF8')", value.encode()
    return f"%({key})s::text", value


def jarg(key: str, text: str | None) -> tuple[str, Any]:
    if text is not None and "\x00" in text:
        return f"convert_from(%({key})s::bytea, 'UTF8')::jsonb", text.encode()
    return f"%({key})s::text::jsonb", text


FINGERPRINT_TABLES = """
select format('%I.%I', schemaname, tablename) from pg_tables
where schemaname in ('queue', 'cache', 'andal_check') order by 1
"""

CATALOGS = ["pg_class", "pg_proc", "pg_namespace", "pg_type", "pg_trigger", "pg_attribute"]


class Runner:
    def __init__(self, conn: psycopg.Connection) -> None:
        self.conn = conn
        tables = [r[0] for r in conn.execute(FINGERPRINT_TABLES)]
        self.fp_sql = " union all ".join(
            f"select '{t}', count(*), md5(coalesce(string_agg(ctid::text || ':' || xmin::text,"
            f" ',' order by ctid), '')) from {t}"
            for t in tables
        )
        self.jobs: dict[int, tuple[Case, int]] = {}  # job id -> (case, payload index)
        self.claim_queue: dict[int, str] = {}

    def fingerprint(self) -> list[tuple]:
        return self.conn.execute(self.fp_sql).fetchall()

    def setup(self, case: Case) -> None:
        """The claim family needs a job to claim, in a queue of its own."""
        if case.family == "claim":
            queue = f"claim {case.n} '; --"
            self.claim_queue[case.n] = queue
            job_id = history.enqueue(self.conn, {"claim": case.n}, queue)
            self.jobs[job_id] = (case, -1)

    def run(self, case: Case) -> Any:
        c = self.conn
        if case.family == "enqueue":
            params: dict[str, Any] = {}
            exprs = {}
            for key in ("queue", "category", "dedup_key", "cache_key"):
                exprs[key], params[key] = arg(key, case.names.get(key))
            exprs["payload"], params["payload"] = jarg("payload", case.payloads[0][0])
            sql = (
                "with e as (select queue.enqueue(payload => {payload}, queue => {queue},"
                " category => {category}, dedup_key => {dedup_key},"
                " cache_key => {cache_key}) as id),"
                " r as (insert into andal_check.enqueued (job_id, queue, category)"
                " select e.id, {queue}, {category} from e on conflict do nothing)"
                " select id from e"
            ).format(**exprs)
            return [c.execute(sql, params).fetchone()[0]]
        if case.family == "enqueue_many":
            params = {}
            exprs = {}
            for key in ("queue", "category"):
                exprs[key], params[key] = arg(key, case.names.get(key))
            items = []
            for i, (text, _) in enumerate(case.payloads):
                expr, params[f"p{i}"] = jarg(f"p{i}", text)
                items.append(expr)
            exprs["payloads"] = "array[" + ", ".join(items) + "]::jsonb[]"
            sql = (
                "with e as (select id from queue.enqueue_many(payloads => {payloads},"
                " queue => {queue}, category => {category}) as id),"
                " r as (insert into andal_check.enqueued (job_id, queue, category)"
                " select e.id, {queue}, {category} from e)"
                " select id from e"
            ).format(**exprs)
            return [r[0] for r in c.execute(sql, params).fetchall()]
        if case.family == "claim":
            expr, worker = arg("worker", case.names["worker"])
            sql = history.CLAIM.replace("%(worker)s::text", expr).replace("%(worker)s,", expr + ",")
            rows = c.execute(
                sql,
                {"worker": worker, "queues": [self.claim_queue[case.n]], "batch": 1, "lease": None},
            ).fetchall()
            return [history.Claimed(*r) for r in rows]
        if case.family == "category":
            expr, value = arg("category", case.names["category"])
            c.execute(
                f"select queue.set_category_limit(category => {expr}, max_running => %(n)s)",
                {"category": value, "n": case.number},
            )
            return None
        if case.family == "cache_put":
            kexpr, key = arg("key", case.names["key"])
            vexpr, value = jarg("value", case.payloads[0][0])
            return c.execute(
                f"select cache.put(key => {kexpr}, value => {vexpr})", {"key": key, "value": value}
            ).fetchone()[0]
        raise AssertionError(case.family)

    def verify(self, case: Case, result: Any) -> list[str]:
        """Accepted: the stored row holds exactly what was sent."""
        c = self.conn
        bad: list[str] = []
        if case.family in ("enqueue", "enqueue_many"):
            for i, job_id in enumerate(result):
                text = case.payloads[i][0]
                row = c.execute(
                    "select queue, category, dedup_key, cache_key, payload = %s::jsonb"
                    " from queue.jobs where id = %s",
                    (text, job_id),
                ).fetchone()
                sent = (
                    case.names.get("queue"),
                    case.names.get("category"),
                    case.names.get("dedup_key"),
                    case.names.get("cache_key"),
                    True,
                )
                if job_id in self.jobs:  # the dedup_key of a live job: its id, nothing stored
                    first = self.jobs[job_id][0]
                    key = (case.names.get("queue"), case.names.get("dedup_key"))
                    if (
                        key[1] is None
                        or (first.names.get("queue"), first.names.get("dedup_key")) != key
                    ):
                        bad.append(f"{case.describe()}: dedup answered job {job_id} of {first.n}")
                    continue
                if row != sent:
                    bad.append(f"{case.describe()}: stored {row!r:.300}")
                self.jobs[job_id] = (case, i)
        elif case.family == "claim":
            if len(result) != 1:
                bad.append(f"{case.describe()}: claimed {result}")
            else:
                worker = c.execute(
                    "select worker from queue.jobs where id = %s", (result[0].job_id,)
                ).fetchone()[0]
                if worker != case.names["worker"]:
                    bad.append(f"{case.describe()}: worker stored as {worker!r:.100}")
                done = history.complete(c, case.names["worker"] or "", result)  # type: ignore[arg-type]
                if done != {result[0].job_id: True}:
                    bad.append(f"{case.describe()}: complete {done}")
        elif case.family == "category":
            got = c.execute(
                "select max_running from queue.categories where category = %s",
                (case.names["category"],),
            ).fetchone()
            if got != (case.number,):
                bad.append(f"{case.describe()}: max_running {got}")
        elif case.family == "cache_put":
            got = c.execute(
                "select value = %s::jsonb, version = %s from cache.entries where key = %s",
                (case.payloads[0][0], result, case.names["key"]),
            ).fetchone()
            if got != (True, True):
                bad.append(f"{case.describe()}: cache entry {got}")
        return bad


def numeric_json(text: str) -> Any:
    return json.loads(text, parse_float=Decimal, parse_int=Decimal)


def catalog_counts(conn: psycopg.Connection) -> dict[str, Any]:
    counts = {
        t: conn.execute(f"select count(*) from pg_catalog.{t}").fetchone()[0] for t in CATALOGS
    }
    # roles are cluster-wide: compare names, leaving out other test suites' temporary roles
    counts["pg_roles"] = {
        r[0]
        for r in conn.execute(
            "select rolname from pg_roles where rolname not like 'andal\\_t%'"
            " and rolname not like 'andal\\_test%'"
        )
    }
    return counts


def run_cases(runner: Runner, cases: list[Case]) -> tuple[list[str], dict[str, int]]:
    """Run each case; returns the problems found and the count of each outcome."""
    problems: list[str] = []
    outcomes: dict[str, int] = {}
    for case in cases:
        runner.setup(case)
        fp = runner.fingerprint()
        try:
            result = runner.run(case)
            got = "ok"
        except psycopg.Error as exc:
            got = exc.sqlstate or type(exc).__name__
            result = None
        outcomes[got] = outcomes.get(got, 0) + 1
        if case.expect:
            if got not in case.expect:
                problems.append(f"{case.describe()}: expected {sorted(case.expect)}, got {got}")
            elif runner.fingerprint() != fp:
                problems.append(f"{case.describe()}: rejected ({got}) but a table changed")
        elif got != "ok":
            problems.append(f"{case.describe()}: expected acceptance, got {got}")
        else:
            problems += runner.verify(case, result)
    return problems, outcomes


def test_hostile_names_and_payloads(rconn: psycopg.Connection, figures: dict) -> None:
    cases = make_cases()
    assert len(cases) == CASES
    runner = Runner(rconn)
    before = catalog_counts(rconn)
    problems, outcomes = run_cases(runner, cases)
    assert not problems, f"{len(problems)} problems:\n" + "\n".join(problems[:30])
    after = catalog_counts(rconn)
    assert after == before, "no catalog object was created by any call"

    # the accepted jobs run: the payload comes back as sent; the history is clean
    rconn.execute("update queue.categories set max_running = 1000")
    claimed = 0
    with psycopg.connect(rconn.info.dsn, autocommit=True) as drain:
        # payloads as JSON text: Python's json module cannot load 10,000 nesting levels
        drain.adapters.register_loader("jsonb", TextLoader)
        while True:
            batch = history.claim(drain, "drainer", None, 50)
            if not batch:
                break
            for c in batch:
                case, i = runner.jobs[c.job_id]
                if i >= 0:
                    obj = case.payloads[i][1]
                    if obj not in ("deep", "big", None):
                        # numbers as decimals: jsonb keeps 6.1e+299 as numeric and prints
                        # it without an exponent
                        assert numeric_json(c.payload) == numeric_json(json.dumps(obj)), (
                            case.describe()
                        )
                    else:
                        assert drain.execute(
                            "select %s::jsonb = %s::jsonb", (c.payload, case.payloads[i][0])
                        ).fetchone()[0], case.describe()
            assert set(history.complete(drain, "drainer", batch).values()) == {True}
            claimed += len(batch)
    assert rconn.execute("select count(*) from queue.jobs").fetchone()[0] == 0
    counts = history.assert_clean(rconn)
    figures.update(
        cases=len(cases),
        outcomes=dict(sorted(outcomes.items())),
        jobs_run=claimed,
        checker=str(counts),
    )
