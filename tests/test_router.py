"""The PL/Proxy router (``andal router install``, docs/scaling.md) over two PostgreSQL servers of
the test's own (initdb on free ports), with the router database on the suite's server: every
call goes through the router DSN, and the partitions are read directly only to check where
the rows went."""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import psycopg.sql
import pytest
from conftest import make_dsn, test_name, wait_for
from psycopg.conninfo import make_conninfo

import andal
from andal.client import route
from andal.cluster import Cluster, pg_bin
from andal.router import LOCAL, RouterError, connstr, direct_dsn, install_router

ROOT = Path(__file__).resolve().parent.parent
VECTORS = ROOT / "tests" / "vectors" / "routing.json"

pytestmark = pytest.mark.timeout(600)


class Setup:
    def __init__(self, router: str, shards: list[str], clusters: list[Cluster], prefix: str):
        self.router, self.shards, self.clusters, self.prefix = router, shards, clusters, prefix

    def call(self, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.router, autocommit=True) as c:
            cur = c.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def direct(self, k: int, sql: str, params: Any = None) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.shards[k], autocommit=True) as c:
            cur = c.execute(sql, params)
            return cur.fetchall() if cur.description else []

    def queue_on(self, k: int, start: int = 0) -> str:
        """A queue name the hash puts on partition k."""
        return next(f"q{i}" for i in range(start, 10_000) if route(f"q{i}", 2) == k)


@pytest.fixture(scope="module")
def rt() -> Iterator[Setup]:
    try:
        pg_bin("initdb")
    except FileNotFoundError:
        pytest.skip("no PostgreSQL server binaries")
    clusters = [Cluster(Path(tempfile.mkdtemp(prefix="andal-router-"))) for _ in range(2)]
    router_db = test_name("router")
    prefix = test_name("rr", 6)
    try:
        for c in clusters:
            c.init()
            c.start()
            with psycopg.connect(c.dsn, autocommit=True) as conn:
                conn.execute("create database part")
        shards = [make_conninfo(c.dsn, dbname="part") for c in clusters]
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'create database "{router_db}"')
        install_router(make_dsn(router_db), shards, role_prefix=prefix)
        yield Setup(make_dsn(router_db), shards, clusters, prefix)
    finally:
        for c in clusters:
            c.destroy()
        with psycopg.connect(make_dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'drop database if exists "{router_db}" with (force)')
            for kind in ("producer", "worker", "admin", "monitor"):
                conn.execute(f'drop role if exists "{prefix}_{kind}"')


def test_enqueue_to_50_queues_puts_each_on_its_partition(rt: Setup) -> None:
    queues = [f"fifty_{i}" for i in range(50)]
    ids = {q: rt.call("select queue.enqueue('{}', queue => %s)", (q,))[0][0] for q in queues}
    for k in range(2):
        held = dict(rt.direct(k, "select queue, id from queue.jobs where queue like 'fifty_%'"))
        mine = {q for q in queues if route(q, 2) == k}
        assert mine and set(held) == mine, k
        assert all(ids[q] == held[q] and held[q] % 2 == k for q in mine)
    assert len(set(ids.values())) == 50


def test_claim_complete_fail_heartbeat_cancel_route_by_id(rt: Setup) -> None:
    a, b = rt.queue_on(0, 100), rt.queue_on(1, 100)
    for q in (a, b):
        for n in range(3):
            rt.call("select queue.enqueue(%s, queue => %s)", (json.dumps({"n": n}), q))
    got = rt.call("select job_id, token, queue from queue.claim('w1', array[%s, %s], 4)", (a, b))
    assert len(got) == 4 and {q for _, _, q in got} == {a, b}
    (j1, t1, _), (j2, t2, _), (j3, t3, _), (j4, _, _) = got
    assert rt.call("select queue.heartbeat(%s, %s) is not null", (j1, t1)) == [(True,)]
    rt.call("select queue.complete(%s, %s, '{\"ok\": 1}')", (j1, t1))
    assert rt.call("select queue.fail(%s, %s, 'boom', retryable => false)", (j2, t2)) == [("dead",)]
    rt.call("select queue.release(%s, %s)", (j3, t3))
    ((j5,),) = rt.call("select queue.enqueue('{}', queue => %s, delay => '1 hour')", (b,))
    rt.call("select queue.cancel(%s)", (j5,))
    states = {r[0]: r[1] for r in rt.call(
        "select job_id, state from unnest(%s::bigint[]) as i, queue.job(i)",
        ([j1, j2, j3, j4, j5],),
    )}  # fmt: skip
    assert states == {j1: "completed", j2: "dead", j3: "pending", j4: "running", j5: "cancelled"}
    rest = rt.call("select job_id from queue.claim('w2', array[%s, %s], 10)", (a, b))
    assert len(rest) == 3  # the two not claimed and the released one: no more, none twice
    with pytest.raises(psycopg.Error) as lost:  # the lease is gone: AN001, as direct
        rt.call("select queue.complete(%s, %s)", (j1, t1))
    assert lost.value.sqlstate == "AN001"


def test_claim_never_returns_more_than_batch(rt: Setup) -> None:
    a, b = rt.queue_on(0, 200), rt.queue_on(1, 200)
    for q in (a, b):
        rt.call("select queue.enqueue_many(array_fill('{}'::jsonb, array[5]), queue => %s)", (q,))
    first = rt.call("select job_id from queue.claim('w', array[%s, %s], 3)", (a, b))
    second = rt.call("select job_id from queue.claim('w', array[%s, %s], 100)", (a, b))
    assert len(first) == 3 and len(second) == 7
    assert not {r[0] for r in first} & {r[0] for r in second}


def test_stats_and_metrics_merge_every_partition(rt: Setup) -> None:
    a, b = rt.queue_on(0, 300), rt.queue_on(1, 300)
    for q in (a, b):
        rt.call("select queue.enqueue('{}', queue => %s)", (q,))
    stats = dict(rt.call("select queue, ready from queue.stats() where queue in (%s, %s)", (a, b)))
    assert stats == {a: 1, b: 1}
    text = rt.call("select queue.metrics()")[0][0]
    assert f'partition="0",queue="{a}"' in text and f'partition="1",queue="{b}"' in text
    assert text.count("# TYPE andal_jobs ") == 1


def test_a_category_lives_on_one_partition(rt: Setup) -> None:
    home = rt.queue_on(0, 400)
    same = rt.queue_on(0, 401 + int(home[1:]) - 400)
    other = rt.queue_on(1, 400)
    rt.call("select queue.set_category_limit('cat_one', 1)")
    for q in (home, same):
        rt.call("select queue.enqueue('{}', queue => %s, category => 'cat_one')", (q,))
    with pytest.raises(psycopg.errors.FeatureNotSupported) as refused:
        rt.call("select queue.enqueue('{}', queue => %s, category => 'cat_one')", (other,))
    assert "andal_router.placements" in (refused.value.diag.message_hint or "")
    got = rt.call("select job_id from queue.claim('w', array[%s, %s], 5)", (home, same))
    assert len(got) == 1  # the limit, exactly
    with pytest.raises(psycopg.errors.FeatureNotSupported):  # a schedule of it, elsewhere
        rt.call("select queue.schedule('cat_tick', %s, every => '1 hour', category => 'cat_one')",
                (other,))  # fmt: skip
    rt.call("insert into andal_router.placements values (%s, 0)", (other,))
    rt.call("select queue.enqueue('{}', queue => %s, category => 'cat_one')", (other,))
    assert rt.direct(0, "select count(*) from queue.jobs where queue = %s", (other,)) == [(1,)]


def test_the_cache_routes_by_key(rt: Setup) -> None:
    keys = [f"key_{i}" for i in range(8)]
    for k in keys:
        rt.call("select cache.put(%s, %s)", (k, json.dumps({"k": k})))
    got = rt.call("select key, value from cache.get_many(%s)", (keys,))
    assert {k: v["k"] for k, v in got} == {k: k for k in keys}
    for part in range(2):
        held = {r[0] for r in rt.direct(part, "select key from cache.entries")}
        assert {x for x in keys if route(x, 2) == part} <= held
    q = rt.queue_on(0, 500)
    rt.call("select queue.enqueue('{}', queue => %s)", (q,))
    job = rt.call("select job_id, token from queue.claim('w', array[%s], 1)", (q,))
    far = next(x for x in keys if route(x, 2) == 1)
    with pytest.raises(psycopg.errors.FeatureNotSupported):
        rt.call("select cache.put(%s, '1', %s, %s)", (far, job[0][0], job[0][1]))


def test_crc32_and_the_rule_agree_with_the_vectors(rt: Setup) -> None:
    vectors = json.loads(VECTORS.read_text(encoding="utf-8"))["vectors"]
    for v in vectors:
        got = rt.call(
            "select andal_router.crc32(%s), andal_router.queue_partition(%s)",
            (v["queue"], v["queue"]),
        )
        assert got == [(v["crc32"], v["index"]["2"])], v["queue"]


def _functions(dsn: str) -> dict[str, tuple[Any, ...]]:
    with psycopg.connect(dsn) as c:
        rows = c.execute(
            "select p.oid::regprocedure::text, pg_get_function_arguments(p.oid),"
            " pg_get_function_result(p.oid), array(select distinct a.grantee::regrole::text"
            " from aclexplode(p.proacl) as a where a.privilege_type = 'EXECUTE'"
            " and a.grantee not in (0, p.proowner) order by 1),"
            " obj_description(p.oid, 'pg_proc')"
            " from pg_proc as p join pg_namespace as n on n.oid = p.pronamespace"
            " where n.nspname in ('queue', 'cache') and p.proname !~ '^_'"
        ).fetchall()
    return {r[0]: r[1:] for r in rows}


def test_every_public_function_is_on_the_router_but_the_local_list(rt: Setup) -> None:
    partition, router = _functions(rt.shards[0]), _functions(rt.router)
    expected = {s: v for s, v in partition.items() if s.split("(")[0].split(".")[1] not in LOCAL}
    assert router == expected
    modes = {r[0] for r in rt.call("select function from andal_router.modes")}
    assert len(modes) == len(partition)


def test_an_error_on_a_partition_keeps_its_sqlstate(rt: Setup) -> None:
    with pytest.raises(psycopg.Error) as through:
        rt.call("select queue.cancel(987654321)")
    with pytest.raises(psycopg.Error) as direct:
        rt.direct(1, "select queue.cancel(987654321)")
    assert through.value.sqlstate == direct.value.sqlstate
    assert through.value.diag.message_primary == direct.value.diag.message_primary


def test_partition_for_gives_the_direct_path(rt: Setup) -> None:
    q = rt.queue_on(1, 600)
    ((k, conninfo),) = rt.call("select * from andal_router.partition_for(%s)", (q,))
    assert k == 1 and "password" not in conninfo
    with psycopg.connect(conninfo + " user=postgres") as c, c.transaction():  # its own
        job = c.execute("select queue.enqueue('{}', queue => %s)", (q,)).fetchone()
    assert job is not None
    assert rt.call("select queue from queue.job(%s)", (job[0],)) == [(q,)]


def test_a_second_install_changes_nothing(rt: Setup) -> None:
    catalog = (
        "select (select array_agg(oid order by oid) from pg_proc),"
        " (select array_agg(oid order by oid) from pg_trigger),"
        " (select array_agg(oid order by oid) from pg_class), "
        " (select version from andal_router.config_version)"
    )
    before = rt.call(catalog)
    out = subprocess.run(
        [sys.executable, "-m", "andal.cli", "router", "install", "--dsn", rt.router,
         *[a for s in rt.shards for a in ("--shard", s)]],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert "nothing to do" in out.stdout
    assert rt.call(catalog) == before


def test_the_partition_count_is_a_power_of_two_and_stays(rt: Setup) -> None:
    before = [rt.direct(k, "select * from queue._partition()") for k in range(2)]
    with pytest.raises(RouterError, match="power of two"):
        install_router(rt.router, [*rt.shards, rt.shards[0]])
    with pytest.raises(RouterError, match="has 2 partitions, not 1"):
        install_router(rt.router, rt.shards[:1])
    assert [rt.direct(k, "select * from queue._partition()") for k in range(2)] == before


def test_a_stopped_partition_fails_only_the_calls_that_need_it(rt: Setup) -> None:
    up, down = rt.queue_on(0, 700), rt.queue_on(1, 700)
    for q in (up, down):
        rt.call("select queue.enqueue('{}', queue => %s)", (q,))
    rt.clusters[1].stop()
    try:
        ok = rt.call("select queue.enqueue('{}', queue => %s)", (up,))
        assert ok and ok[0][0] % 2 == 0
        for sql, args in (
            ("select queue.enqueue('{}', queue => %s)", (down,)),
            ("select * from queue.stats()", None),
        ):
            with pytest.raises(andal.PartitionUnreachable) as lost:
                rt.call(sql, args)
            assert lost.value.sqlstate == "AN003"
        got = rt.call("select queue from queue.claim('w', array[%s, %s], 10)", (up, down))
        assert {r[0] for r in got} == {up} and len(got) == 2
        with pytest.raises(andal.PartitionUnreachable) as lost:
            rt.call("select * from queue.claim('w', array[%s], 1)", (down,))
        assert lost.value.sqlstate == "AN003"
    finally:
        rt.clusters[1].start()
    assert rt.call("select queue from queue.claim('w', array[%s], 5)", (down,)) == [(down,)]


def test_no_password_and_no_user_in_the_configuration(rt: Setup) -> None:
    for key in ("password=x", "user=postgres", "USER = postgres"):
        with pytest.raises(psycopg.errors.CheckViolation):
            rt.call("update andal_router.partitions set connstr = connstr || ' ' || %s", (key,))


def test_a_schedule_lives_on_its_queue_partition(rt: Setup) -> None:
    q = rt.queue_on(1, 800)
    rt.call("select queue.schedule('rt_tick', %s, every => '1 hour')", (q,))
    names = rt.call("select queue from queue.schedules() where name = 'rt_tick'")
    assert names == [(q,)]
    assert rt.direct(1, "select count(*) from queue.schedules where name = 'rt_tick'") == [(1,)]
    assert rt.call("select queue.unschedule('rt_tick')") == [(True,)]
    assert rt.call("select count(*) from queue.schedules() where name = 'rt_tick'") == [(0,)]


def test_a_worker_pool_on_the_partitions_drains_what_the_router_enqueued(rt: Setup) -> None:
    import threading

    import andal

    queues = [f"drain_{i}" for i in range(20)]
    ids = {
        r[0]
        for q in queues
        for r in rt.call(
            "select queue.enqueue_many(array_fill('{}'::jsonb, array[10]), queue => %s)", (q,)
        )
    }
    assert len(ids) == 200
    seen: list[int] = []
    lock = threading.Lock()
    registry = andal.Registry()

    def handle(job: andal.Job) -> None:
        with lock:
            seen.append(job.id)

    for q in queues:
        registry.handler(q)(handle)

    def drained() -> bool:
        left = rt.call(
            "select coalesce(sum(ready + running), 0) from queue.status()"
            " where queue like 'drain_%'"
        )
        return left == [(0,)] and len(seen) >= 200

    worker = andal.Worker(rt.shards, registry, concurrency=8).start()
    try:
        wait_for(drained, timeout=120, what="the router's jobs drained")
    finally:
        worker.stop()
        assert worker.join(timeout=60) == 0
    assert sorted(seen) == sorted(ids)  # 0 lost, 0 doubled
    done = rt.call("select count(*) from unnest(%s::bigint[]) as i, queue.job(i)"
                   " where state = 'completed'", (sorted(ids),))  # fmt: skip
    assert done == [(200,)]


def test_a_partition_moves_to_another_server(rt: Setup) -> None:
    """The operator procedure of docs/scaling.md: dump the partition, restore it on the new
    server, point its row of andal_router.partitions there; no job lost or doubled."""
    q = rt.queue_on(1, 900)
    many = "select queue.enqueue_many(array_fill('{}'::jsonb, array[25]), queue => %s)"
    ids = {r[0] for r in rt.call(many, (q,))}
    target = Cluster(Path(tempfile.mkdtemp(prefix="andal-router-moved-")))
    rt.clusters.append(target)  # destroyed with the others
    target.init()
    target.start()
    with psycopg.connect(target.dsn, autocommit=True) as c:
        c.execute("create database part")
        for kind in ("producer", "worker", "admin", "monitor"):
            c.execute(f'create role "{rt.prefix}_{kind}" nologin')
    moved = make_conninfo(target.dsn, dbname="part")
    dump = subprocess.run([pg_bin("pg_dump"), "-Fc", "-d", rt.shards[1]], capture_output=True,
                          check=True, timeout=300).stdout  # fmt: skip
    subprocess.run([pg_bin("pg_restore"), "--exit-on-error", "-d", moved], input=dump,
                   capture_output=True, check=True, timeout=300)  # fmt: skip
    rt.clusters[1].stop()  # the old server is gone
    rt.call(
        "update andal_router.partitions set connstr = %s where partition = 1", (connstr(moved),)
    )
    rt.shards[1] = moved
    got = rt.call("select job_id from queue.claim('w', array[%s], 100)", (q,))
    assert sorted(r[0] for r in got) == sorted(ids)
    ((new_id,),) = rt.call("select queue.enqueue('{}', queue => %s)", (q,))
    assert new_id % 2 == 1 and new_id > max(ids)


def test_psql_works_through_the_router_with_no_routing_of_its_own(rt: Setup) -> None:
    """Any SQL client: psql alone, one DSN, the functions of docs/sql-api.md."""
    script = """
\\set ON_ERROR_STOP 1
select queue.enqueue('{"n": 1}', queue => 'psql_a') as a \\gset
select queue.enqueue('{"n": 2}', queue => 'psql_d') as b \\gset
select count(*) from queue.claim('psql', array['psql_a', 'psql_d'], 10) as c,
    lateral queue.complete(c.job_id, c.token);
select string_agg(j.state, ',') from unnest(array[:a, :b]::bigint[]) as i, queue.job(i) as j;
"""
    out = subprocess.run(
        ["psql", "-X", "-At", "-d", rt.router], input=script, capture_output=True, text=True,
        timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["2", "completed,completed"]
    assert {route("psql_a", 2), route("psql_d", 2)} == {0, 1}


def test_a_transactional_enqueue_takes_the_direct_path(rt: Setup) -> None:
    """The producer's own transaction: andal.enqueue on a connection to direct_dsn's
    partition commits or rolls back with the producer's writes."""
    import andal

    q = rt.queue_on(0, 1000)
    dsn = direct_dsn(rt.router, q)
    assert psycopg.conninfo.conninfo_to_dict(dsn)["port"] == str(rt.clusters[0].port)
    with psycopg.connect(dsn) as c:
        andal.enqueue(c, {"n": "rolled back"}, q)
        c.rollback()
        kept = andal.enqueue(c, {"n": "kept"}, q)
        c.commit()
    assert rt.call("select queue.job_payload(%s)", (kept,)) == [({"n": "kept"},)]
    assert rt.call("select count(*) from queue.jobs_by(queue => %s)", (q,)) == [(1,)]


def test_the_python_client_works_through_the_router_dsn(rt: Setup) -> None:
    """``andal.Client(ROUTER_DSN)``: one DSN, no routing of its own."""
    import andal

    a, b = rt.queue_on(0, 1100), rt.queue_on(1, 1100)
    client = andal.Client(rt.router)
    ids = [client.enqueue({"n": 1}, a), client.enqueue({"n": 2}, b)]
    ids += client.enqueue_many([{"n": 3}, {"n": 4}], b)
    assert [i is not None and i % 2 for i in ids] == [0, 1, 1, 1]
    assert {j.queue for j in client.jobs_by(state="pending") if j.job_id in ids} == {a, b}
    first = ids[0]
    assert first is not None
    client.cancel(first)
    info = client.job(first)
    assert info is not None and info.state == "cancelled"
    assert {s.queue for s in client.stats()} >= {a, b}
    assert client.version() == rt.call("select queue.version()")[0][0]


def test_complete_many_then_claim_settles_and_claims_across_partitions(rt: Setup) -> None:
    a, b = rt.queue_on(0, 1200), rt.queue_on(1, 1200)
    for q in (a, b):
        rt.call("select queue.enqueue_many(array_fill('{}'::jsonb, array[2]), queue => %s)", (q,))
    held = rt.call("select job_id, token from queue.claim('w', array[%s, %s], 2)", (a, b))
    rows = rt.call(
        "select claimed, job_id, completed from queue.complete_many_then_claim("
        "%s::bigint[], %s::uuid[], null, 'w', array[%s, %s], 10, null)",
        ([h[0] for h in held], [h[1] for h in held], a, b),
    )
    settled = {r[1]: r[2] for r in rows if not r[0]}
    claimed = [r[1] for r in rows if r[0]]
    assert settled == {h[0]: True for h in held}
    assert len(claimed) == 2 and not set(claimed) & set(settled)


def test_a_merged_page_holds_at_most_lim_rows_newest_first(rt: Setup) -> None:
    for q in (rt.queue_on(0, 1300), rt.queue_on(1, 1300)):
        rt.call("select queue.enqueue_many(array_fill('{}'::jsonb, array[3]), queue => %s)", (q,))
    page = [r[0] for r in rt.call("select job_id from queue.jobs_by(lim => 4)")]
    each = [
        r[0] for k in range(2) for r in rt.direct(k, "select job_id from queue.jobs_by(lim => 4)")
    ]
    assert page == sorted(each, reverse=True)[:4]
    nxt = [r[0] for r in rt.call("select job_id from queue.jobs_by(before => %s, lim => 4)",
                                 (page[-1],))]  # fmt: skip
    assert nxt and max(nxt) < page[-1]


def test_each_role_reaches_the_partitions_as_itself(rt: Setup) -> None:
    """PL/Proxy connects to a partition as the calling role: the router's grants and each
    partition's apply to it, never the router owner's."""
    login = test_name("t_producer", 6)
    servers = [make_dsn("postgres"), *(make_conninfo(s, dbname="postgres") for s in rt.shards)]
    for dsn in servers:
        with psycopg.connect(dsn, autocommit=True) as c:
            c.execute(f'create role "{login}" login in role "{rt.prefix}_producer"')
    try:
        as_login = make_conninfo(rt.router, user=login)
        a, b = rt.queue_on(0, 1400), rt.queue_on(1, 1400)
        with psycopg.connect(as_login, autocommit=True) as c:
            assert c.execute("select queue.enqueue('{}', queue => %s)", (a,)).fetchone()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):  # a worker's function
                c.execute("select * from queue.claim('w', array[%s], 1)", (a,))
        with psycopg.connect(rt.shards[0], autocommit=True) as c:  # partition 0 only
            c.execute(f'revoke "{rt.prefix}_producer" from "{login}"')
        with psycopg.connect(as_login, autocommit=True) as c:
            assert c.execute("select queue.enqueue('{}', queue => %s)", (b,)).fetchone()
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                c.execute("select queue.enqueue('{}', queue => %s)", (a,))
    finally:
        for dsn in servers:
            with psycopg.connect(dsn, autocommit=True) as c:
                c.execute(f'drop role if exists "{login}"')


def test_a_changed_partition_catalog_regenerates_the_router(rt: Setup) -> None:
    """An upgrade of the partitions (here: a comment changed on partition 0) is picked up by
    the next ``andal router install``; then nothing more to do."""
    version = "queue.version()"
    (old,) = rt.direct(0, f"select obj_description('{version}'::regprocedure)")[0]
    try:
        rt.direct(0, f"comment on function {version} is 'upgraded'")
        assert any("router functions" in s for s in install_router(rt.router, rt.shards))
        got = rt.call(f"select obj_description('{version}'::regprocedure)")
        assert got == [("upgraded",)]
        assert install_router(rt.router, rt.shards) == []
    finally:
        literal = psycopg.sql.Literal(old).as_string(None)
        rt.direct(0, f"comment on function {version} is {literal}")
        install_router(rt.router, rt.shards)


def test_the_async_client_works_through_the_router_dsn(rt: Setup) -> None:
    import asyncio

    import andal

    async def run() -> tuple[int | None, str | None]:
        client = andal.AsyncClient(rt.router)
        job = await client.enqueue({"n": 1}, rt.queue_on(1, 1500))
        assert job is not None
        info = await client.job(job)
        return job, info.state if info else None

    job, state = asyncio.run(run())
    assert job is not None and job % 2 == 1 and state == "pending"


def test_the_local_list_of_the_docs_is_the_code_s() -> None:
    """docs/scaling.md's table of functions left off the router names exactly LOCAL."""
    import re

    text = (ROOT / "docs" / "scaling.md").read_text(encoding="utf-8")
    table = text.split("**The local list**", 1)[1].split("\n\n", 2)[1]
    named = set(re.findall(r"`(?:queue|cache)\.(\w+)`|, `(\w+)`", table))
    assert {a or b for a, b in named} == set(LOCAL)


def test_public_may_execute_nothing_on_the_router(rt: Setup) -> None:
    open_to_public = rt.call(
        "select p.oid::regprocedure::text from pg_proc as p"
        " join pg_namespace as n on n.oid = p.pronamespace"
        " where n.nspname in ('queue', 'cache', 'andal_router', 'andal_router_px', 'plproxy')"
        " and exists (select from aclexplode(coalesce(p.proacl, acldefault('f', p.proowner)))"
        " as a where a.grantee = 0 and a.privilege_type = 'EXECUTE')"
    )
    assert open_to_public == []
    tables = rt.call(
        "select c.relname from pg_class as c join pg_namespace as n on n.oid = c.relnamespace"
        " where n.nspname = 'andal_router' and c.relkind in ('r', 'v')"
        " and has_table_privilege('public', c.oid, 'select')"
    )
    assert tables == []


def test_andal_worker_on_the_router_dsn_drains_both_partitions_and_listens(
    rt: Setup, tmp_path: Path
) -> None:
    """``andal --dsn ROUTER worker``: it finds the partitions (``andal_router.partition_dsns``)
    and runs on them as the router DSN's role; 0 lost, 0 doubled; with a 30 s poll a job
    enqueued while it sleeps is picked up by its NOTIFY, long before the poll."""
    import os
    import signal

    a, b = rt.queue_on(0, 1600), rt.queue_on(1, 1600)
    seen = tmp_path / "seen.txt"
    module = tmp_path / "router_jobs.py"
    module.write_text(
        "import os\n"
        f"def record(job):\n"
        f"    fd = os.open({str(seen)!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT)\n"
        "    os.write(fd, f'{job.id}\\n'.encode())\n"
        "    os.close(fd)\n"
        f"handlers = {{{a!r}: record, {b!r}: record}}\n"
    )
    many = "select queue.enqueue_many(array_fill('{}'::jsonb, array[30]), queue => %s)"
    ids = {r[0] for q in (a, b) for r in rt.call(many, (q,))}
    assert {i % 2 for i in ids} == {0, 1}

    def done() -> list[int]:
        return [int(x) for x in seen.read_text().split()] if seen.exists() else []

    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "ANDAL_DSN")}
    log = tmp_path / "worker.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "andal.cli", "--dsn", rt.router, "worker", str(module),
             "--concurrency", "4", "--poll", "30", "--log-format", "json"],
            env=env, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        wait_for(lambda: len(done()) >= 60, timeout=60, what="the router's jobs drained")
        assert sorted(done()) == sorted(ids)  # 0 lost, 0 doubled
        completed = "select count(*) from unnest(%s::bigint[]) as i, queue.job(i)"
        completed += " where state = 'completed'"
        wait_for(lambda: rt.call(completed, (sorted(ids),)) == [(60,)], timeout=30,
                 what="the drained jobs recorded")  # fmt: skip
        for q in (a, b):  # while it sleeps (poll 30 s): the partitions' NOTIFY wakes it
            ((late,),) = rt.call("select queue.enqueue('{}', queue => %s)", (q,))
            wait_for(lambda late=late: late in done(), timeout=10, what=f"job {late} woken")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()[-3000:]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert len(done()) == len(set(done())) == 62
    states = rt.call(
        "select state, count(*) from unnest(%s::bigint[]) as i, queue.job(i) group by 1",
        (done(),),
    )
    assert states == [("completed", 62)]
    text = log.read_text()
    assert text.count('"event": "router_partitions"') == 1
    found = text.split('"event": "router_partitions"')[1].split("\n")[0]
    for shard in rt.shards:  # (partition 1 may have moved: the router's rows, as now)
        assert f':{psycopg.conninfo.conninfo_to_dict(shard)["port"]}"' in found


def test_andal_web_on_the_router_dsn_shows_both_partitions_and_acts(rt: Setup) -> None:
    """``andal --dsn ROUTER web``: the overview lists the queues of both partitions (the
    router's merged queue.stats()), a job page opens by id, and a requeue goes through the
    router's queue.requeue_dead to the job's partition."""
    pytest.importorskip("starlette")
    from test_web_security import Browser
    from webapp import andal_web, get

    a, b = rt.queue_on(0, 1700), rt.queue_on(1, 1700)
    ((ja,),) = rt.call("select queue.enqueue('{}', queue => %s)", (a,))
    ((jb,),) = rt.call("select queue.enqueue('{}', queue => %s)", (b,))
    ((jd, token),) = rt.call("select job_id, token from queue.claim('w', array[%s], 1)", (b,))
    assert jd == jb
    rt.call("select queue.fail(%s, %s, 'boom', retryable => false)", (jd, token))
    ((jp,),) = rt.call("select queue.enqueue('{}', queue => %s)", (a,))
    ((jp2, token),) = rt.call("select job_id, token from queue.claim('w', array[%s], 1)", (a,))
    assert jp2 == ja  # the older one first
    rt.call("select queue.fail(%s, %s, 'boom', retryable => false)", (ja, token))
    with andal_web(rt.router, "--refresh", "600") as server:
        status, html = get(server.base + "/")
        assert status == 200, server.output()
        assert a in html and b in html
        for job in (ja, jb):
            status, html = get(server.base + f"/jobs/{job}")
            assert status == 200 and str(job) in html
        browser = Browser(server.base)
        status, _ = browser.post("/dead/requeue", {"one": jd, "csrf": browser.csrf()})
        assert status == 303, server.output()
        status, _ = browser.post("/dead/purge", {"ids": [ja], "csrf": browser.csrf()})
        assert status == 303, server.output()
    assert rt.direct(1, "select status from queue.jobs where id = %s", (jd,)) == [("pending",)]
    assert rt.call("select count(*) from queue.job(%s)", (ja,)) == [(0,)]  # purged, on 0
    assert rt.call("select state from queue.job(%s)", (jp,)) == [("pending",)]


def test_a_python_worker_given_the_router_dsn_is_told_where_to_run(rt: Setup) -> None:
    """``andal.Worker(ROUTER_DSN)`` refuses with what to do (the CLI expands a router DSN;
    ``andal.router.partition_dsns`` gives the DSNs with the router DSN's options)."""
    import andal
    from andal.errors import NotInstalled
    from andal.router import partition_dsns

    registry = andal.Registry()
    registry.handler("rt_py_worker")(lambda job: None)
    with pytest.raises(NotInstalled, match="partition_dsns"):
        andal.Worker(rt.router, registry).start()
    dsns = partition_dsns(make_conninfo(rt.router, sslmode="disable", application_name="x"))
    other = partition_dsns(make_conninfo(rt.router, user="postgres", password="secret"))
    assert other is not None
    assert {(d["user"], d["password"]) for d in map(psycopg.conninfo.conninfo_to_dict, other)} == {
        ("postgres", "secret")
    }
    assert dsns is not None and len(dsns) == 2
    for dsn, shard in zip(dsns, rt.shards, strict=True):
        got, want = (psycopg.conninfo.conninfo_to_dict(d) for d in (dsn, shard))
        assert (got["port"], got["dbname"], got["sslmode"], got["application_name"]) == (
            want["port"], want["dbname"], "disable", "x",
        )  # fmt: skip
    assert partition_dsns(rt.shards[0]) is None


def test_the_cli_s_one_shot_commands_work_on_the_router_dsn(rt: Setup) -> None:
    """``andal --dsn ROUTER enqueue | job | status``: the router passes the installed check
    and its functions answer as one database's."""
    a = rt.queue_on(1, 1800)

    def andal_cli(*argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "andal.cli", "--dsn", rt.router, *argv],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    out = andal_cli("enqueue", a, '{"n": 1}')
    assert out.returncode == 0, out.stderr
    job = int(out.stdout.split()[0])
    assert job % 2 == 1
    shown = andal_cli("job", str(job))
    assert shown.returncode == 0 and "pending" in shown.stdout, shown.stderr
    status = andal_cli("status", "--json")
    assert status.returncode == 0, status.stderr
    assert a in {q["queue"] for q in json.loads(status.stdout)}
