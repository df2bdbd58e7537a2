"""12. Deadlock storm (soak): 16 sessions for 60 s over 3,000 jobs (and more enqueued during the
storm) whose cache keys are 40 shared keys. Each session, in a random mix, claims batches of
1-10 and completes them with complete_many mixed with up to 5 other sessions' job ids (random
or stale tokens) in random order, fails some for good (dead letters), cancels random ids,
requeues random dead ids, invalidates random cache keys, and enqueues more jobs. Every call
is its own transaction (autocommit): a deadlock could only come from andal's own lock order.

No call gets a deadlock (40P01) or serialization failure (40001); every other error is one
the contract documents for that call (cancel 42704/55000, requeue_dead 42704/55000). At the
end every live job is completed and the checker is clean.
"""

from __future__ import annotations

import random
import threading
import time
import uuid
from collections import Counter

import psycopg
import pytest
from conftest import wait_for
from psycopg.types.json import Jsonb

from reliability import history

SESSIONS, DURATION, JOBS, KEYS = 16, 60.0, 3000, 40
EXPECTED = {"cancel": {"42704", "55000"}, "requeue_dead": {"42704", "55000"}, "fail": {"AN001"}}

ENQUEUE = """
with e as (
    select queue.enqueue(payload => jsonb_build_object('n', g), queue => 'storm',
        cache_key => 'k' || (%(seed)s + g) %% %(keys)s) as id
    from generate_series(1, %(n)s) as g
),
r as (insert into andal_check.enqueued (job_id, queue) select e.id, 'storm' from e)
select min(id), max(id) from e
"""

COMPLETE_MIXED = """
with own as (
    select * from unnest(%(own_ids)s::bigint[], %(own_tokens)s::uuid[], %(own_attempts)s::int[])
        as i (job_id, token, attempt)
),
ended as (
    insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome)
    select o.job_id, o.attempt, o.token, %(worker)s, 'end', 'ok' from own as o
),
done as materialized (
    select d.job_id, d.completed from queue.complete_many(job_ids => %(ids)s::bigint[],
        tokens => %(tokens)s::uuid[], results => %(results)s::jsonb[]) as d
),
told as (
    insert into andal_check.attempt_log (job_id, attempt, token, worker, event, outcome)
    select o.job_id, o.attempt, o.token, %(worker)s, 'outcome',
        case when d.completed then 'completed' else 'lease_lost' end
    from own as o join done as d on d.job_id = o.job_id
)
select count(*) filter (where d.completed) from done as d
"""


@pytest.mark.soak
@pytest.mark.timeout(600)
def test_deadlock_storm(rel_dsn: str, rconn: psycopg.Connection, figures: dict) -> None:
    lo, hi = rconn.execute(ENQUEUE, {"seed": 0, "n": JOBS, "keys": KEYS}).fetchone()
    id_range = [lo, hi]
    calls: Counter[str] = Counter()
    refused: Counter[str] = Counter()
    fatal: list[str] = []
    unexpected: list[str] = []
    lock = threading.Lock()
    dead_ids: list[int] = []
    deadline = time.monotonic() + DURATION

    def session(i: int) -> None:
        rng = random.Random(i)
        name = f"storm-{i}"
        held: list[history.Claimed] = []
        stale: list[tuple[int, uuid.UUID]] = []
        with psycopg.connect(rel_dsn, autocommit=True, application_name=name) as c:
            while time.monotonic() < deadline or held:
                ending = time.monotonic() >= deadline
                op = "complete" if ending else rng.choices(
                    ["claim", "complete", "fail", "cancel", "requeue_dead", "invalidate",
                     "enqueue"],
                    weights=[25, 25, 4, 15, 10, 15, 3],
                )[0]  # fmt: skip
                try:
                    if op == "claim" and len(held) < 20:
                        held += history.claim(c, name, ["storm"], rng.randint(1, 10), lease=120)
                    elif op == "complete" and held:
                        own = held[: rng.randint(1, len(held))]
                        del held[: len(own)]
                        mine = {o.job_id for o in own}
                        extra = {rng.randint(*id_range) for _ in range(rng.randint(0, 5))} - mine
                        pairs = [(o.job_id, o.token) for o in own] + [
                            (j, rng.choice([uuid.uuid4(), *(t for _, t in stale[-5:])]))
                            for j in extra
                        ]
                        rng.shuffle(pairs)
                        c.execute(
                            COMPLETE_MIXED,
                            {
                                "own_ids": [o.job_id for o in own],
                                "own_tokens": [o.token for o in own],
                                "own_attempts": [o.attempt for o in own],
                                "ids": [p[0] for p in pairs],
                                "tokens": [p[1] for p in pairs],
                                "results": [Jsonb({"token": str(p[1])}) for p in pairs],
                                "worker": name,
                            },
                        )
                        stale += [(o.job_id, o.token) for o in own]
                    elif op == "fail" and held:
                        victim = held.pop(rng.randrange(len(held)))
                        if history.fail(c, name, victim, "storm", retryable=False) == "dead":
                            with lock:
                                dead_ids.append(victim.job_id)
                    elif op == "cancel":
                        c.execute("select queue.cancel(%s)", (rng.randint(*id_range),))
                        op = "cancel"
                    elif op == "requeue_dead":
                        with lock:
                            pick = rng.choice(dead_ids) if dead_ids and rng.random() < 0.7 else None
                        c.execute(
                            "select queue.requeue_dead(%s)", (pick or rng.randint(*id_range),)
                        )
                    elif op == "invalidate":
                        c.execute("select cache.invalidate(%s)", (f"k{rng.randrange(KEYS)}",))
                    elif op == "enqueue":
                        _, top = c.execute(
                            ENQUEUE, {"seed": rng.randrange(KEYS), "n": 50, "keys": KEYS}
                        ).fetchone()
                        with lock:
                            id_range[1] = max(id_range[1], top)
                    else:
                        continue
                    with lock:
                        calls[op] += 1
                except psycopg.Error as exc:
                    state = exc.sqlstate or type(exc).__name__
                    with lock:
                        calls[op] += 1
                        if state in ("40P01", "40001"):
                            fatal.append(f"{op}: {state} {exc}")
                        elif state in EXPECTED.get(op, ()):
                            refused[f"{op} {state}"] += 1
                        else:
                            unexpected.append(f"{op}: {state} {exc}")
                    if op == "fail" and state == "AN001":
                        pass  # the lease is gone: nothing to report

    threads = [threading.Thread(target=session, args=(i,)) for i in range(SESSIONS)]
    start = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(DURATION + 120)
    assert not any(t.is_alive() for t in threads)
    assert not fatal, f"{len(fatal)} deadlocks or serialization failures: {fatal[:5]}"
    assert not unexpected, unexpected[:10]

    # whatever is live runs to completion: pending jobs now, retries once their delay passed
    # and jobs the sessions left running once their lease expired (a claim takes those
    # back); then the history is clean
    def drained() -> bool:
        while batch := history.claim(rconn, "drain", ["storm"], 500):
            history.complete(rconn, "drain", batch)
        return rconn.execute("select count(*) from queue.jobs").fetchone()[0] == 0

    wait_for(drained, timeout=180, interval=0.5, what="every live job completed")
    counts = history.assert_clean(rconn)
    figures.update(
        sessions=SESSIONS,
        storm_s=round(time.monotonic() - start, 1),
        calls=dict(calls),
        refused_as_documented=dict(refused),
        deadlocks=0,
        serialization_failures=0,
        dead_letters=rconn.execute("select count(*) from queue.dead_letters").fetchone()[0],
        checker=str(counts),
    )
