"""Hostile calls: hundreds of distinct bad calls across every public function, each refused
with the SQLSTATE the error tables document (docs/sql-api.md, docs/cache.md), and none of
them changing anything: every andal table (its rows), every andal sequence (its last value)
and the catalogs (relations, functions, triggers, types, schemas, columns, roles) are the
same after the call as before it.

The calls are built per argument from the kinds of bad value each takes: nulls, empty and
over-long names, intervals whose effect is negative, expired, past the configured bound or
past the timestamp range, numbers out of bounds, payloads that are not objects or too large
(also as a "number bomb": few bytes stored, megabytes printed), misshapen arrays, stale
tokens, unknown relations, the wrong isolation level and read-only transactions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import psycopg
import pytest

BIG = "'" + "x" * 129 + "'"  # one past a name's 128 characters
BIG_KEY = "'" + "k" * 513 + "'"  # one past a key's 512 characters
NAME_BAD = [("null", "22004"), ("''", "22023"), (BIG, "22023"), ("'" + "é" * 129 + "'", "22023")]
OPT_NAME_BAD = [("''", "22023"), (BIG, "22023")]
KEY_BAD = [("null", "22004"), ("''", "22023"), (BIG_KEY, "22023")]
OPT_KEY_BAD = [("''", "22023"), (BIG_KEY, "22023")]
#: intervals whose effect is negative, or that no bound admits
NEG = ["'-1 second'", "'-100 years 36000 days'", "'-300000 years'", "'-1 mon 29 days'"]
HUGE = ["'300000 years'", "'1001 years'"]
#: positive as an interval (or zero), expired or nothing as an effect
NOT_POSITIVE = ["'0'", "'-100 years 36001 days'", "'-1 microsecond'"]
BOUNDED = ["'2 days'", "'25 hours'"]  # past the default max_lease (1 day)
BOUNDED_DELAY = ["'2 years'", "'367 days'"]  # past the default max_delay (1 year)
#: payloads that are not JSON objects
NOT_OBJECT = ["'[]'", "'1'", "'\"s\"'", "'null'", "'true'", "'[{}]'"]
#: JSON text over 1 MiB: plain, and numbers that are small when stored
OVERSIZED = [
    "to_jsonb(repeat('x', 1048577))",
    "jsonb_build_object('a', repeat('é', 524288))",
    "('{\"a\": [' || (select string_agg('1e131071', ',') from generate_series(1, 9)) || ']}')"
    "::jsonb",
]
OVERSIZED_OBJECT = [
    "jsonb_build_object('x', repeat('x', 1048577))",
    "jsonb_build_object('a', repeat('é', 524288))",
    OVERSIZED[2],
]
TOKEN = "gen_random_uuid()"


@dataclass(frozen=True)
class Call:
    sql: str
    sqlstate: str
    setup: tuple[str, ...] = ()  # statements run first in the same transaction

    def __str__(self) -> str:
        text = self.sql if len(self.sql) < 160 else self.sql[:150] + "..."
        return f"{' ; '.join(self.setup)} {text} -> {self.sqlstate}"


def call(fn: str, args: dict[str, str], **bad: str) -> str:
    merged = {**args, **bad}
    return f"select * from {fn}(" + ", ".join(f"{k} => {v}" for k, v in merged.items()) + ")"


def over(fn: str, args: dict[str, str], name: str, values: list[tuple[str, str]]) -> list[Call]:
    return [Call(call(fn, args, **{name: v}), code) for v, code in values]


def each(values: list[str], code: str) -> list[tuple[str, str]]:
    return [(v, code) for v in values]


def intervals(
    fn: str, args: dict[str, str], name: str, strict: bool, bound: list[str] | None
) -> list[Call]:
    values = each(NEG + HUGE + (bound or []), "22023")
    if strict:
        values += each(NOT_POSITIVE, "22023")
    return over(fn, args, name, values)


def queue_calls(job: int, dead: int) -> list[Call]:
    out: list[Call] = []
    enq = {"payload": "'{}'", "queue": "'h'"}
    out += over("queue.enqueue", enq, "payload", [("null", "22004")] + each(NOT_OBJECT, "22023"))
    out += over("queue.enqueue", enq, "payload", each(OVERSIZED_OBJECT, "54000"))
    out += over("queue.enqueue", enq, "queue", NAME_BAD)
    out += over("queue.enqueue", enq, "category", OPT_NAME_BAD)
    out += over("queue.enqueue", enq, "dedup_key", OPT_KEY_BAD)
    out += over("queue.enqueue", enq, "cache_key", OPT_KEY_BAD)
    out += over(
        "queue.enqueue",
        enq,
        "priority",
        [("2147483647", "22023"), ("-2147483648", "22023")],  # null: the default, 0
    )
    out += over("queue.enqueue", enq, "max_attempts", each(["0", "-1", "-2147483648"], "22023"))
    out += intervals("queue.enqueue", enq, "delay", False, BOUNDED_DELAY)
    # a dedup or cache key needs the newest committed rows: READ COMMITTED, refused up front
    for level in ("repeatable read", "serializable"):
        for key in ("dedup_key", "cache_key"):
            out.append(
                Call(call("queue.enqueue", {**enq, key: "'k'"}), "55000",
                     (f"set transaction isolation level {level}",))
            )  # fmt: skip
        out.append(
            Call(call("queue.enqueue_many", {"payloads": "array['{}'::jsonb]", "queue": "'h'",
                      "dedup_keys": "array['k']"}), "55000",
                 (f"set transaction isolation level {level}",))
        )  # fmt: skip
    out += over("queue.enqueue", {**enq, "cache_key": "'ck'"}, "cache_value", [("'null'", "22023")])
    out += over(
        "queue.enqueue", {**enq, "cache_key": "'ck'"}, "cache_value", each(OVERSIZED, "54000")
    )
    out += [Call(call("queue.enqueue", enq, cache_value="'1'"), "22023")]  # needs a cache_key
    traced = {**enq, "trace_context": "'{}'"}
    out += over("queue.enqueue", traced, "trace_context", each(
        ["'[]'", "'\"00-x\"'", "'{\"traceparent\": 1}'", "'{\"t\": {}}'",
         "jsonb_build_object('traceparent', repeat('x', 4097))"], "22023"))  # fmt: skip
    out += over("queue.enqueue", traced, "payload", [("null", "22004")] + each(NOT_OBJECT, "22023"))
    out += over("queue.enqueue", traced, "queue", NAME_BAD)
    out += [
        Call(call("queue.enqueue", {**enq, "dedup_key": "'held'", "cache_key": "'ck'"},
                  cache_value=v), code)
        for v, code in [("'null'", "22023"), (OVERSIZED[0], "54000")]
    ]  # fmt: skip

    many = {"payloads": "array['{}'::jsonb]", "queue": "'h'"}
    out += over(
        "queue.enqueue_many",
        many,
        "payloads",
        [
            ("null", "22004"),
            ("array['{}', null]::jsonb[]", "22004"),
            ("array[['{}'], ['{}']]::jsonb[]", "22023"),
            ('\'[0:1]={"{}","{}"}\'::jsonb[]', "22023"),
            ("'[2:2]={\"{}\"}'::jsonb[]", "22023"),
        ]
        + [(f"array['{{}}', {v}]::jsonb[]", "22023") for v in NOT_OBJECT if v != "'null'"]
        + [(f"array['{{}}'::jsonb, {v}]", "54000") for v in OVERSIZED_OBJECT],
    )
    out += over("queue.enqueue_many", many, "queue", NAME_BAD)
    out += over("queue.enqueue_many", many, "category", OPT_NAME_BAD)
    out += over(
        "queue.enqueue_many",
        many,
        "dedup_keys",
        [
            ("array['a', 'b']", "22023"),
            ("'{}'::text[]", "22023"),
            ("array[['a']]", "22023"),
            ("'[0:0]={a}'::text[]", "22023"),
            ("array['']", "22023"),
            ("array[" + BIG_KEY + "]", "22023"),
        ],
    )
    out += over("queue.enqueue_many", many, "priority", [("1000001", "22023")])
    out += over("queue.enqueue_many", many, "max_attempts", each(["0", "-5"], "22023"))
    out += intervals("queue.enqueue_many", many, "delay", False, BOUNDED_DELAY)

    claim = {"worker": "'w'", "queues": "'{h}'"}
    out += over("queue.claim", claim, "worker", NAME_BAD)
    out += over(
        "queue.claim",
        claim,
        "batch",
        each(["0", "-1", "1001", "2147483647", "null"], "22023"),
    )
    out += over(
        "queue.claim",
        claim,
        "queues",
        each(["'{null}'", "'{\"\"}'", "array[" + BIG + "]", "array['h', null]"], "22023"),
    )
    out += intervals("queue.claim", claim, "lease", True, BOUNDED)
    for level in ("repeatable read", "serializable"):
        out.append(
            Call(call("queue.claim", claim), "55000", (f"set transaction isolation level {level}",))
        )
    out += over("queue.vacuum_due", {"every": "'0'"}, "every",
                [("null", "22004"), *each(NEG + HUGE, "22023")])  # fmt: skip
    out += over(
        "queue.next_available",
        {"queues": "'{h}'"},
        "queues",
        each(["'{null}'", "'{\"\"}'", "array[" + BIG + "]", "array['h', null]"], "22023"),
    )

    reg = {"worker": "'w'", "host": "'h'", "pid": "1"}
    out += over("queue.register_worker", reg, "worker", NAME_BAD)
    out += over("queue.register_worker", reg, "host", [("null", "22004"), ("''", "22023"),
                ("repeat('h', 256)", "22023")])  # fmt: skip
    out += over("queue.register_worker", reg, "pid", [("null", "22004"), ("-1", "22023")])
    out += over("queue.register_worker", reg, "slots", each(["-1", "100001"], "22023"))
    out += over("queue.register_worker", reg, "version", OPT_NAME_BAD[:1] + [(BIG, "22023")])
    out += over("queue.register_worker", reg, "queues", each(["'{null}'", "array[['a']]",
                "array[" + BIG + "]", "array(select 'q' || g from generate_series(1, 1001) as g)"],
                "22023"))  # fmt: skip
    out += intervals("queue.register_worker", reg, "expire_after", True, BOUNDED)
    out += over("queue.unregister_worker", {"worker": "'w'"}, "worker", NAME_BAD)

    lease = {"job_id": str(job), "token": TOKEN}
    for fn in ("queue.complete", "queue.heartbeat", "queue.release"):
        out += over(fn, lease, "job_id", [("null", "22004"), ("0", "AN001"), ("-1", "AN001")])
        out += over(fn, lease, "token", [("null", "22004"), (TOKEN, "AN001")])
    out.append(Call(call("queue.complete", lease, result="'{}'"), "AN001"))
    fail = {**lease, "error": "'e'"}
    out += over("queue.fail", fail, "job_id", [("null", "22004"), ("0", "AN001")])
    out += over("queue.fail", fail, "token", [("null", "22004"), (TOKEN, "AN001")])
    out += over("queue.fail", fail, "error", [("null", "22004")])
    out += over("queue.fail", fail, "retryable", [("null", "22004")])
    out += intervals("queue.fail", fail, "retry_in", False, BOUNDED_DELAY)
    out += intervals("queue.heartbeat", lease, "extend", True, BOUNDED)
    out += intervals("queue.release", lease, "delay", False, BOUNDED_DELAY)
    out += over("queue.release", lease, "delay", [("null", "22004")])

    cm = {"job_ids": f"array[{job}]::bigint[]", "tokens": f"array[{TOKEN}]"}
    out += over(
        "queue.complete_many", cm, "job_ids", [("null", "22004"), ("'{}'::bigint[]", "22023")]
    )
    out += over("queue.complete_many", cm, "tokens", [("null", "22004"),
                (f"array[{TOKEN}, {TOKEN}]", "22023")])  # fmt: skip
    out += over("queue.complete_many", cm, "results", [("array['{}'::jsonb, '{}']", "22023")])
    out += over("queue.complete_many_outcomes", cm, "job_ids", [("null", "22004"),
                ("'{}'::bigint[]", "22023")])  # fmt: skip
    out += over("queue.complete_many_outcomes", cm, "results",
                [("array['{}'::jsonb, '{}']", "22023")])  # fmt: skip
    out += over("queue.refusals", cm, "job_ids", [("null", "22004"), ("'{}'::bigint[]", "22023")])
    out += over("queue.refusals", cm, "tokens", [("null", "22004")])
    for fn in ("queue.fail", "queue.fail_outcome"):
        out.append(Call(call(fn, fail, error="repeat('x', 1048576)"), "AN001"))
    fo = {**lease, "error": "'e'"}
    out += over("queue.fail_outcome", fo, "job_id", [("null", "22004"), ("0", "AN001")])
    out += over("queue.fail_outcome", fo, "token", [("null", "22004"), (TOKEN, "AN001")])
    out += over("queue.fail_outcome", fo, "error", [("null", "22004")])
    out += over("queue.fail_outcome", fo, "retryable", [("null", "22004")])
    out += intervals("queue.fail_outcome", fo, "retry_in", False, BOUNDED_DELAY)
    cc = {**cm, "results": "null", "worker": "'w'", "queues": "'{h}'", "batch": "1",
          "lease": "null"}  # fmt: skip
    out += over("queue.complete_many_then_claim", cc, "job_ids", [("null", "22004"),
                ("'{}'::bigint[]", "22023")])  # fmt: skip
    out += over("queue.complete_many_then_claim", cc, "tokens", [("null", "22004")])
    out += over("queue.complete_many_then_claim", cc, "worker", NAME_BAD)
    out += over("queue.complete_many_then_claim", cc, "batch", each(["0", "1001", "null"], "22023"))
    out += over("queue.complete_many_then_claim", cc, "queues", each(["'{null}'"], "22023"))
    out += intervals("queue.complete_many_then_claim", cc, "lease", True, BOUNDED)
    for level in ("repeatable read", "serializable"):
        out.append(Call(call("queue.complete_many_then_claim", cc), "55000",
                        (f"set transaction isolation level {level}",)))  # fmt: skip
    hm = {"job_ids": f"array[{job}]::bigint[]", "tokens": f"array[{TOKEN}]"}
    out += over("queue.heartbeat_many", hm, "job_ids", [("null", "22004"),
                (f"array[{job}, {job}]::bigint[]", "22023")])  # fmt: skip
    out += over("queue.heartbeat_many", hm, "tokens", [("null", "22004")])
    out += intervals("queue.heartbeat_many", hm, "extend", True, BOUNDED)

    conf = {"queue": "'h'"}
    out += over("queue.configure_queue", conf, "queue", NAME_BAD)
    out += over("queue.configure_queue", conf, "max_attempts", each(["0", "-1"], "22023"))
    out += intervals("queue.configure_queue", conf, "lease", True, BOUNDED)
    for name in ("backoff_base", "backoff_cap"):
        out += intervals("queue.configure_queue", conf, name, False, BOUNDED_DELAY)
    out += over(
        "queue.configure_queue",
        conf,
        "backoff",
        each(["''", "'Linear'", "'fibonacci'", "'" + "x" * 10000 + "'"], "22023"),
    )
    out += over("queue.configure_queue", conf, "jitter", each(["-0.1", "1.5", "'NaN'"], "22023"))
    out += over("queue.configure_queue", conf, "payload_limit", each(["0", "-1"], "22023"))
    out += over(
        "queue.configure_queue", conf, "cache_policy", each(["''", "'Rewrite'", "'drop'"], "22023")
    )

    cat = {"category": "'c'", "max_running": "1"}
    out += over("queue.set_category_limit", cat, "category", NAME_BAD)
    out += over("queue.set_category_limit", cat, "max_running",
                [("null", "22004"), ("-1", "22023"), ("-2147483648", "22023")])  # fmt: skip

    # (cancel of the running job is no refusal: it asks its worker to stop)
    out += over("queue.cancel", {"job_id": "0"}, "job_id", [("null", "22004"), ("0", "42704"),
                ("-1", "42704"), (str(dead), "55000")])  # fmt: skip
    out += over("queue.requeue_dead", {"job_id": "0"}, "job_id",
                [("null", "22004"), ("0", "42704"), (str(job), "55000")])  # fmt: skip
    out += over("queue.purge_dead", {"older_than": "'1 day'"}, "older_than",
                [("null", "22004")] + each(NEG + HUGE, "22023"))  # fmt: skip
    out += over("queue.list_dead", {}, "lim", each(["0", "-1", "null"], "22023"))
    out += over("queue.purge_dead_jobs", {"job_ids": "'{1}'"}, "job_ids",
                [("null", "22004"), ("'{1,null}'", "22004"),
                 ("array(select generate_series(1, 10001))::bigint[]", "22023")])  # fmt: skip
    out += over("queue.dead_letters_by", {}, "queue", OPT_NAME_BAD)
    out += over("queue.dead_letters_by", {}, "reason", each(["''", "'lost'"], "22023"))
    out += over("queue.dead_letters_by", {}, "lim", each(["0", "1001", "null"], "22023"))
    for fn in ("queue.purge_dead_matching", "queue.requeue_dead_matching"):
        out += over(fn, {}, "queue", OPT_NAME_BAD)
        out += over(fn, {}, "reason", each(["''", "'lost'", "'Cancelled'"], "22023"))
        out += over(fn, {}, "older_than", each(NEG + HUGE, "22023"))
        out += over(fn, {}, "max_rows", [("null", "22004")] + each(["0", "-1", "10001"], "22023"))
    out += intervals("queue.stats_by_minute", {}, "span", True, BOUNDED)
    out += over("queue.stats_by_minute", {}, "span", [("null", "22004")])
    out += over("queue.shard_of", {"queue": "'h'"}, "queue", NAME_BAD)
    out += over("queue.set_shards", {"shards": "1"}, "shards",
                [("null", "22004"), ("0", "22023"), ("65", "22023"), ("-1", "22023")])  # fmt: skip

    out += over("queue.watch", {"job_id": "0"}, "job_id", [("null", "22004")])
    out += over("queue.idle", {}, "queues",
                [("array['h', null]", "22004"), ("'{}'::text[]", "22023"),
                 ("array['h', " + BIG + "]", "22023"), ("array['']", "22023")])  # fmt: skip
    out += over("queue.trace_contexts", {"job_ids": "array[1]::bigint[]"}, "job_ids",
                [("null", "22004"), ("array[[1, 2]]::bigint[]", "22023"),
                 ("array(select generate_series(1, 1001))::bigint[]", "22023")])  # fmt: skip
    out += over("queue.job", {"job_id": "1"}, "job_id", [("null", "22004")])
    out += over("queue.parent_results", {"job_id": "1"}, "job_id", [("null", "22004")])
    out += over("queue.child_jobs", {"job_id": "1"}, "job_id", [("null", "22004")])
    bad_after = [("array[0]::bigint[]", "22023"), ("array[9223372036854775807]", "22023"),
                 (f"array[{job}, null]::bigint[]", "22004"), ("array[[1, 2]]::bigint[]", "22023"),
                 ("array(select generate_series(1, 100001))::bigint[]", "22023")]  # fmt: skip
    out += over("queue.enqueue", {"payload": "'{}'", "after": f"array[{job}]"}, "after", bad_after)
    out += over("queue.enqueue", {"payload": "'{}'", "after": f"array[{job}]"},
                "on_parent_failure", each(["'bogus'", "''", "'Cancel'"], "22023"))  # fmt: skip
    out += over("queue.enqueue_many", {"payloads": "array['{}'::jsonb]", "after": f"array[{job}]"},
                "after", bad_after)  # fmt: skip
    out += over("queue.requeue_dead", {"job_id": "0", "with_children": "true"}, "job_id",
                [("null", "22004"), ("0", "42704")])  # fmt: skip
    out += over("queue.job_payload", {"job_id": "1"}, "job_id", [("null", "22004")])
    out += over("queue.job_origin", {"job_id": "1"}, "job_id", [("null", "22004")])
    out += over("queue.jobs_by", {}, "state", each(["'bogus'", "''", "'Pending'"], "22023"))
    out += over("queue.jobs_by", {}, "lim", each(["0", "-1", "1001"], "22023"))
    out += over("queue.jobs_by", {}, "queue", OPT_NAME_BAD)
    out += over("queue.pause", {"queue": "'h'"}, "queue", NAME_BAD)
    out += over("queue.resume", {"queue": "'h'"}, "queue", NAME_BAD)
    out += over("queue.jobs_by", {}, "state", each(["'done'"], "22023"))
    out += over("queue.jobs_by", {}, "lim", each(["null"], "22023"))
    hist = {"queue": "'h'", "retention": "'1 day'"}
    out += over("queue.set_history", hist, "queue", NAME_BAD)
    out += intervals("queue.set_history", hist, "retention", True, None)
    out += over("queue.configure_history", {}, "partition_width",
                [("null", "22004"), ("'10 milliseconds'", "22023")])  # fmt: skip
    out += intervals("queue.configure_history", {}, "partition_width", True, None)
    beat = {"job_id": str(job), "token": TOKEN, "report_abort": "true"}
    out += over("queue.heartbeat", beat, "report_abort", [("null", "22004")])
    return out


def cache_calls(job: int) -> list[Call]:
    out: list[Call] = []
    put = {"key": "'k'", "value": "'1'"}
    out += over("cache.put", put, "key", KEY_BAD)
    out += over("cache.put", put, "value", [("null", "22004"), ("'null'", "22023")])
    out += over("cache.put", put, "value", each(OVERSIZED, "54000"))
    out += intervals("cache.put", put, "ttl", True, None)
    out += over("cache.put", put, "if_version", [("-1", "22023")])
    out += over("cache.refill", put, "key", KEY_BAD)
    out += over("cache.refill", put, "value", [("null", "22004"), ("'null'", "22023")])
    out += intervals("cache.refill", put, "ttl", True, None)
    fenced = {**put, "job_id": str(job), "token": TOKEN}
    out += over("cache.put", fenced, "token", [("null", "22004"), (TOKEN, "AN001")])
    out += over("cache.put", fenced, "job_id", [("null", "22004"), ("0", "AN001")])
    out += over("cache.put", fenced, "key", KEY_BAD)
    out += over("cache.put", fenced, "value", [("'null'", "22023"), (OVERSIZED[2], "54000")])
    inv = {"key": "'k'"}
    out += over("cache.invalidate", inv, "key", KEY_BAD)
    finv = {"key": "'k'", "job_id": str(job), "token": TOKEN}
    out += over("cache.invalidate", finv, "token", [("null", "22004"), (TOKEN, "AN001")])
    out += over("cache.invalidate", finv, "key", KEY_BAD)
    out += over("cache.get", inv, "key", KEY_BAD)
    out += over("cache.get", {"key": "'missing'"}, "refresh_queue", OPT_KEY_BAD)
    out += over("cache.ttl_for", inv, "key", KEY_BAD)
    gm = {"keys": "array['k']"}
    out += over(
        "cache.get_many",
        gm,
        "keys",
        [
            ("null", "22004"),
            ("array['k', null]", "22004"),
            ("array['']", "22023"),
            ("array[" + BIG_KEY + "]", "22023"),
            ("array(select 'k' || g from generate_series(1, 10001) as g)", "22023"),
        ],
    )
    out += over("cache.get_many", {"keys": "array['missing']"}, "refresh_queue", OPT_KEY_BAD)
    out.append(
        Call(call("cache.get_many", {"keys": "array['missing']", "refresh_queue": "'refresh'"}),
             "55000", ("set transaction isolation level repeatable read",))
    )  # fmt: skip
    out += over("cache.report_reads", {"pool": "'p'", "counts": "'{}'"}, "pool", NAME_BAD)
    out += over(
        "cache.report_reads",
        {"pool": "'p'", "counts": "'{}'"},
        "counts",
        [("null", "22004")]
        + each(
            [
                "'[]'",
                "'{\"t\": 1}'",
                '\'{"t": {"miss": -1}}\'',
                '\'{"t": {"miss": "1"}}\'',
                '\'{"t": {"miss": 1.5}}\'',
                '\'{"t": {"miss": 1e100}}\'',
                '\'{"": {"miss": 1}}\'',
                "(select jsonb_object_agg('t' || g, '{}'::jsonb) from generate_series(1, 1001) g)",
            ],
            "22023",
        ),
    )
    out += over("cache.prune", {}, "log_keep", each(NEG + HUGE, "22023"))
    out += over("cache.prune", {}, "entries_keep", each(NEG + HUGE, "22023"))
    out += over("cache.stats", {}, "stale_after", [("null", "22004")] + each(NEG + HUGE, "22023"))
    cs = {"watermark": "0"}
    out += over("cache.changes_since", cs, "watermark", [("-1", "22023")])
    out += over("cache.changes_since", cs, "lim", each(["0", "-1", "100001"], "22023"))
    val = {"keys": "array['k']", "versions": "array[1]::bigint[]"}
    out += over("cache.validate", val, "keys", [("null", "22004"), ("array['k', 'j']", "22023")])
    out += over("cache.validate", val, "versions", [("null", "22004")])
    out += over("cache.validate", val, "checksums", [("array['a', 'b']", "22023")])
    reg = {"view": "'hostile.mv'", "max_lag": "'1 minute'", "max_changes": "10"}
    out += over("cache.register_view", reg, "view", [("null", "22004"), ("'hostile.t'", "22023"),
                ("'hostile.plain'", "22023"), ("'hostile.nokey'", "55000")])  # fmt: skip
    out += over("cache.register_view", reg, "max_lag", [("null", "22004")])
    out += intervals("cache.register_view", reg, "max_lag", True, None)
    out += over("cache.register_view", reg, "max_changes", [("null", "22004"), ("0", "22023")])
    view = {"view": "'hostile.mv'"}
    for fn in ("cache.refresh_view", "cache.unregister_view"):
        out += over(fn, view, "view", [("null", "22004"), ("'hostile.nokey'", "42704")])
    out.append(
        Call(
            call("cache.refresh_view", view),
            "55000",
            ("set transaction isolation level serializable",),
        )
    )
    tr = {"view": "'hostile.mv'", "source": "'hostile.t'"}
    for fn in ("cache.track", "cache.untrack"):
        out += over(fn, tr, "view", [("null", "22004")])
        out += over(fn, tr, "source", [("null", "22004")])
    out += over("cache.track", tr, "view", [("'hostile.nokey'", "42704")])
    out += over("cache.track", tr, "source", [("'hostile.mv'", "22023")])
    out += over("cache.track", tr, "source", [("'hostile.foreign'", "42710")])
    out += over("cache.untrack", tr, "source", [("'hostile.plain'", "42704")])
    return out


def read_only_calls(job: int, dead: int) -> list[Call]:
    """Every writing function, called with good arguments in a READ ONLY transaction: 25006
    (PostgreSQL's, before or as andal writes), nothing written."""
    ro = ("set transaction read only",)
    writes = [
        "select queue.enqueue(payload => '{}', queue => 'ro')",
        "select queue.enqueue(payload => '{}', trace_context => '{}', queue => 'ro')",
        "select queue.enqueue_many(payloads => array['{}'::jsonb], queue => 'ro')",
        "select * from queue.claim(worker => 'w', queues => '{h}')",
        "select * from queue.configure_queue(queue => 'ro', max_attempts => 2)",
        "select queue.set_category_limit(category => 'ro', max_running => 2)",
        f"select queue.cancel(job_id => {job})",
        f"select queue.requeue_dead(job_id => {dead})",
        "select queue.purge_dead(older_than => '0')",
        f"select queue.purge_dead_jobs(job_ids => array[{dead}]::bigint[])",
        "select queue.pause(queue => 'h')",
        "select queue.set_shards(shards => 2)",
        "select queue.set_history(queue => 'ro', retention => '1 day')",
        "select queue.configure_history(partition_width => '2 hours')",
        f"select queue.watch(job_id => {job})",
        "select queue.idle(queues => array['h'])",
        "select queue.busy()",
        "select cache.put(key => 'ro', value => '1')",
        "select cache.invalidate(key => 'ro')",
        "select * from cache.get(key => 'ro-missing', refresh_queue => 'refill')",
        "select cache.report_reads(pool => 'p', counts => '{\"t\": {\"miss\": 1}}')",
        "select cache.reset()",
        "select cache.register_view(view => 'hostile.mv2', max_lag => '1 minute',"
        " max_changes => 1)",
        "select cache.track(view => 'hostile.mv', source => 'hostile.t2')",
        "select queue.maintain()",
        "select cache.refresh_due()",
    ]
    return [Call(s, "25006", ro) for s in writes]


#: What a refused call must leave unchanged: andal's sequences and this database's catalogs
#: and ACL. Nothing cluster-wide (roles, memberships): other sessions change those.
FINGERPRINT = """
select (select md5(string_agg(f, '|' order by f)) from (
            select format('%s=%s', s.schemaname || '.' || s.sequencename, s.last_value) as f
            from pg_sequences as s where s.schemaname in ('queue', 'cache')) as q),
       (select count(*) from pg_class), (select max(oid::int8) from pg_class),
       (select count(*) from pg_proc), (select count(*) from pg_trigger),
       (select count(*) from pg_type), (select count(*) from pg_namespace),
       (select count(*) from pg_attribute), (select datacl::text from pg_database
            where datname = current_database()),
       (select md5(string_agg(tgname || tgrelid::text || tgfoid::text, ',' order by tgname,
            tgrelid)) from pg_trigger)
"""


def table_digest(conn: psycopg.Connection) -> dict[str, str]:
    """Each andal table's rows (their text, in order)."""
    tables = conn.execute(
        "select format('%I.%I', schemaname, tablename) from pg_tables"
        " where schemaname in ('queue', 'cache') order by 1"
    ).fetchall()
    out = {}
    for (t,) in tables:
        out[t] = conn.execute(
            f"select count(*)::text || ':' || coalesce(md5(string_agg(x::text, ',' order by"
            f" x::text)), '') from {t} as x"
        ).fetchone()[0]
    return out


def state(conn: psycopg.Connection) -> tuple[Any, ...]:
    return (table_digest(conn), conn.execute(FINGERPRINT).fetchone())


@pytest.fixture(scope="module")
def target(dsn: str) -> Iterator[tuple[psycopg.Connection, int, int]]:
    """The database in a known state: a running job, a dead letter, a live job holding a
    dedup key, a cache entry, a registered view and tables to track."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("create schema hostile")
        c.execute("create table hostile.t (id int primary key)")
        c.execute("create table hostile.t2 (id int)")
        c.execute("create table hostile.plain (id int)")
        c.execute("create table hostile.foreign (id int)")
        c.execute(
            "create function hostile.f() returns trigger language plpgsql"
            " as $$ begin return null; end $$"
        )
        c.execute(
            "create trigger andal_track_truncate after truncate on hostile.foreign"
            " for each statement execute function hostile.f()"
        )
        c.execute("create materialized view hostile.mv as select id from hostile.t")
        c.execute("create unique index on hostile.mv (id)")
        c.execute("create materialized view hostile.mv2 as select id from hostile.t")
        c.execute("create unique index on hostile.mv2 (id)")
        c.execute("create materialized view hostile.nokey as select id from hostile.t")
        c.execute("select cache.register_view('hostile.mv', '1 minute', 10)")
        c.execute("select cache.track('hostile.mv', 'hostile.t')")
        c.execute("select cache.put('k', '1')")
        c.execute("select queue.enqueue(payload => '{}', queue => 'h', dedup_key => 'held',"
                  " cache_key => 'ck')")  # fmt: skip
        job = c.execute(
            "select job_id from queue.claim(worker => 'w', queues => '{h}')"
        ).fetchone()[0]
        c.execute("select queue.enqueue(payload => '{}', queue => 'h', dedup_key => 'held')")
        c.execute("select queue.enqueue(payload => '{}', queue => 'd', max_attempts => 1)")
        d_job, d_token = c.execute(
            "select job_id, token from queue.claim(worker => 'w', queues => '{d}')"
        ).fetchone()
        c.execute("select queue.fail(%s, %s, 'boom')", (d_job, d_token))
        yield c, job, d_job


def time_calls() -> list[Call]:
    """Schedules, timeouts (and their overloads) and rate limits."""
    out: list[Call] = []
    sch = {"name": "'hs'", "queue": "'h'", "every": "'1 minute'"}
    out += over("queue.schedule", sch, "name", NAME_BAD)
    out += over("queue.schedule", sch, "queue", NAME_BAD)
    out += over("queue.schedule", sch, "category", OPT_NAME_BAD)
    out += over("queue.schedule", sch, "name", [("'andal.mine'", "22023")])
    out += over(
        "queue.schedule",
        sch,
        "every",
        each(NEG + HUGE + BOUNDED_DELAY + NOT_POSITIVE + ["'1.5 seconds'", "'1 mon'"], "22023"),
    )
    out += over("queue.schedule", {**sch, "every": "null"}, "cron", each(
        ["'* * * *'", "'60 * * * *'", "'0 0 30 2 *'", "'*/0 * * * *'", "'x y z w v'",
         "'" + "* " * 200 + "'"], "22023"))  # fmt: skip
    out += over("queue.schedule", sch, "cron", [("'* * * * *'", "22023")])  # both given
    out += over("queue.schedule", sch, "timezone",
                [("null", "22004"), ("'Mars/Base'", "22023"), ("''", "22023")])  # fmt: skip
    out += over("queue.schedule", sch, "payload", [("null", "22004")] + each(NOT_OBJECT, "22023"))
    out += over("queue.schedule", sch, "payload", each(OVERSIZED_OBJECT, "54000"))
    out += over("queue.schedule", sch, "priority", [("null", "22004"), ("2147483647", "22023")])
    out += over("queue.schedule", sch, "max_attempts", each(["0", "-1"], "22023"))
    out += over("queue.schedule", sch, "missed", each(["null", "'some'", "''"], "22023"))
    out += over("queue.schedule", sch, "catch_up", each(["0", "10001", "null"], "22023"))
    out += over("queue.schedule", sch, "enabled", [("null", "22004")])
    out += over("queue.schedule", {"name": "'andal.retention'", "every": "'1 hour'"}, "queue",
                [("'h'", "22023")])  # fmt: skip
    out += over("queue.unschedule", {"name": "'hs'"}, "name",
                NAME_BAD + [("'andal.retention'", "55000")])  # fmt: skip
    enq = {"payload": "'{}'", "queue": "'h'", "timeout": "'1 minute'"}
    out += intervals("queue.enqueue", enq, "timeout", True, BOUNDED)
    many = {"payloads": "array['{}']::jsonb[]", "queue": "'h'", "timeout": "'1 minute'"}
    out += intervals("queue.enqueue_many", many, "timeout", True, BOUNDED)
    conf = {"queue": "'h'", "timeout": "'1 minute'"}
    out += intervals("queue.configure_queue", conf, "timeout", False, BOUNDED)
    # '0' removes a queue's timeout; any other value of no effect is refused
    out += over("queue.configure_queue", conf, "timeout", each(["'1 mon -31 days'"], "22023"))
    out += over("queue.configure_queue", conf, "results_retention",
                each(NEG + HUGE + NOT_POSITIVE, "22023"))  # fmt: skip
    out += over("queue.configure_queue", conf, "dead_retention",
                each(NEG + HUGE + NOT_POSITIVE, "22023"))  # fmt: skip
    dl = {"worker": "'w'", "queues": "'{h}'", "batch": "1", "lease": "null", "deadlines": "true"}
    out += over("queue.claim", dl, "deadlines", [("null", "22004")])
    rate = {"category": "'hr'", "starts": "10", "per": "'1 second'"}
    out += over("queue.set_rate_limit", rate, "category", NAME_BAD)
    starts = [("null", "22004"), ("0", "22023"), ("10001", "22023"), ("-1", "22023")]
    out += over("queue.set_rate_limit", rate, "starts", starts)
    out += intervals("queue.set_rate_limit", rate, "per", True, BOUNDED_DELAY)
    out += over("queue.set_rate_limit", rate, "per", [("null", "22004")])
    out += over("queue.queue_settings", {"queue": "'h'"}, "queue", NAME_BAD)
    return out


def all_calls(job: int, dead: int) -> list[Call]:
    return queue_calls(job, dead) + cache_calls(job) + read_only_calls(job, dead) + time_calls()


def test_hostile_calls_are_refused_and_change_nothing(
    target: tuple[psycopg.Connection, int, int],
) -> None:
    conn, job, dead = target
    calls = all_calls(job, dead)
    assert len(set(calls)) == len(calls), "every call is distinct"
    assert len(calls) >= 300
    covered = {c.sql.split("from ", 1)[1].split("(", 1)[0] if " from " in c.sql
               else c.sql.split("select ", 1)[1].split("(", 1)[0] for c in calls}  # fmt: skip
    public = {
        r[0]
        for r in conn.execute(
            "select p.pronamespace::regnamespace || '.' || p.proname from pg_proc as p"
            " where p.pronamespace in ('queue'::regnamespace, 'cache'::regnamespace)"
            " and p.proname not like '\\_%' and (p.pronargs > 0 or p.provolatile = 'v')"
        )
    }
    # queue.shards takes no input and writes nothing: it is volatile only for its lock
    assert public - covered - {"queue.shards"} == set(), (
        "every public function that takes input or writes"
    )
    before = state(conn)
    wrong: list[str] = []
    for c in calls:
        got: str | None = None
        try:
            with conn.transaction():
                for s in c.setup:
                    conn.execute(s)
                conn.execute(c.sql)
        except psycopg.Error as exc:
            got = exc.diag.sqlstate
        if got != c.sqlstate:
            wrong.append(f"{c}: got {got}")
            before = state(conn)  # so the next call is judged on its own
            continue
        after = state(conn)
        if after != before:
            wrong.append(f"{c}: changed something")
            before = after
    assert not wrong, "\n".join(wrong)
