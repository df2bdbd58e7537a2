"""The change log (docs/cache.md, guarantees 1 and 2): out-of-order commits, one NOTIFY per
transaction, flushes after a crash or a prune. Real concurrent sessions, no mocks."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import psycopg
import pytest

from andal.cache import Cache

CHANGES = (
    "select c.seq, c.key, c.version, c.op, c.watermark, c.xid, c.snapshot::text"
    " from cache.changes_since(watermark => %s, epoch => %s, snapshot => %s::pg_snapshot) as c"
)


class Reader:
    """A minimal log follower: the SQL contract, nothing else. mode 'watermark' resumes from
    the watermark alone (re-deliveries allowed), mode 'snapshot' from watermark + snapshot."""

    def __init__(self, conn: psycopg.Connection, mode: str) -> None:
        self.conn = conn
        self.mode = mode
        first = conn.execute(CHANGES, (0, None, None)).fetchone()
        assert first[3] == "flush"
        self.epoch, self.watermark, self.snapshot = first[2], first[4], first[6]
        self.seen: list[tuple[int, str]] = []

    def sweep(self) -> None:
        snapshot = self.snapshot if self.mode == "snapshot" else None
        rows = self.conn.execute(CHANGES, (self.watermark, self.epoch, snapshot)).fetchall()
        for seq, key, _version, op, _wm, _xid, _snap in rows:
            if op in ("put", "invalidate"):
                self.seen.append((seq, key))
        self.watermark = max(self.watermark, rows[-1][4])
        self.snapshot = rows[-1][6]

    def naive_after(self, seq: int) -> list[str]:
        """What a reader that resumed from log position `seq` would get."""
        rows = self.conn.execute(
            "select key from cache.log where seq > %s order by seq", (seq,)
        ).fetchall()
        return [r[0] for r in rows]


@pytest.fixture
def sessions(dsn: str) -> Iterator[dict[str, psycopg.Connection]]:
    conns = {
        "A": psycopg.connect(dsn),  # transactions left open on purpose
        "B": psycopg.connect(dsn),
        "reader": psycopg.connect(dsn, autocommit=True),
    }
    try:
        yield conns
    finally:
        for c in conns.values():
            c.close()


ORDERS = list(itertools.product("AB", "AB", "AB", ["watermark", "snapshot"]))


@pytest.mark.parametrize(("xid_first", "seq_first", "commit_first", "mode"), ORDERS)
def test_out_of_order_commits_are_never_skipped(
    sessions: dict[str, psycopg.Connection],
    xid_first: str,
    seq_first: str,
    commit_first: str,
    mode: str,
) -> None:
    """No lost invalidation: two writers whose transaction ids, log sequence numbers and commits
    come in every relative order; a reader that polls between the commits sees both changes, in
    either resume mode."""
    reader = Reader(sessions["reader"], mode)
    other = {"A": "B", "B": "A"}
    tag = f"{xid_first}{seq_first}{commit_first}{mode[0]}"
    keys = {w: f"{tag}:{w}" for w in "AB"}

    for w in (xid_first, other[xid_first]):
        sessions[w].execute("select pg_current_xact_id()")
    seqs = {}
    for w in (seq_first, other[seq_first]):
        seqs[w] = (
            sessions[w]
            .execute("select cache.put(key => %s, value => '1'::jsonb)", (keys[w],))
            .fetchone()[0]
        )

    first, second = commit_first, other[commit_first]

    def mine() -> list[str]:
        return sorted({k for _, k in reader.seen if k.startswith(tag)})

    sessions[first].commit()
    reader.sweep()
    assert mine() == [keys[first]]
    naive_position = seqs[first]

    sessions[second].commit()
    reader.sweep()
    assert mine() == sorted(keys.values()), "a change was skipped"
    if mode == "snapshot":
        assert len([k for _, k in reader.seen if k.startswith(tag)]) == 2, "delivered once"

    if seqs[second] < seqs[first]:
        # The case that makes a sequence watermark wrong: the later commit has the lower seq.
        assert keys[second] not in reader.naive_after(naive_position)


def test_cache_follows_out_of_order_commits(
    dsn: str, sessions: dict[str, psycopg.Connection]
) -> None:
    """The same through andal.Cache: local copies of both keys are dropped, the one whose
    change committed last (with the lower seq) included."""
    with psycopg.connect(dsn, autocommit=True) as c:
        for key in ("ooo:a", "ooo:b"):
            c.execute("select cache.put(key => %s, value => '0'::jsonb)", (key,))
    cache = Cache(dsn, follow=False)
    try:
        cache.poll()
        assert cache.get("ooo:a") == 0 and cache.get("ooo:b") == 0
        assert len(cache) == 2
        a, b = sessions["A"], sessions["B"]
        a.execute("select cache.put(key => 'ooo:a', value => '1'::jsonb)")  # lower seq
        b.execute("select cache.put(key => 'ooo:b', value => '1'::jsonb)")
        b.commit()
        cache.poll()
        assert "ooo:b" not in cache._entries and "ooo:a" in cache._entries
        a.commit()
        cache.poll()
        assert "ooo:a" not in cache._entries, "the late commit with the lower seq was skipped"
        assert cache.get("ooo:a") == 1 and cache.get("ooo:b") == 1
    finally:
        cache.close()


def test_one_notify_per_transaction(dsn: str) -> None:
    """A transaction with several cache writes sends one NOTIFY whose payload is the
    writer's transaction id (a hint, not the data)."""
    with (
        psycopg.connect(dsn, autocommit=True) as listener,
        psycopg.connect(dsn) as writer,
    ):
        listener.execute("listen andal_cache")
        xid = writer.execute("select pg_current_xact_id()::text").fetchone()[0]
        for i in range(3):
            writer.execute("select cache.put(key => %s, value => '1'::jsonb)", (f"n{i}",))
        writer.execute("select cache.invalidate(key => 'n0')")
        writer.commit()
        got = [n.payload for n in listener.notifies(timeout=0.5, stop_after=2)]
        assert got == [xid]


def test_crash_epoch_flushes_local_caches(dsn: str) -> None:
    """A crash empties the UNLOGGED cache tables (cache.entries and cache.epoch); the next
    read of the log brings a new epoch and every local cache drops what it holds. Simulated
    here by doing to those tables what crash recovery does."""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select cache.put(key => 'crash:k', value => '\"before\"'::jsonb)")
        cache = Cache(dsn, follow=False)
        try:
            cache.poll()
            old_epoch = cache.epoch
            assert cache.get("crash:k") == "before" and len(cache) == 1
            c.execute("delete from cache.epoch")
            c.execute("truncate cache.entries")
            cache.poll()
            assert cache.epoch != old_epoch
            assert len(cache) == 0
            assert cache.stats()["flushes"] >= 2
            assert cache.get("crash:k", loader=lambda k: "reloaded") == "reloaded"
        finally:
            cache.close()


def test_reader_behind_a_pruned_log_flushes(dsn: str) -> None:
    """A reader whose watermark the log was pruned past may have missed changes: it flushes
    instead of reading a partial log. (cache.prune's own cut is tested in pgTAP; here the cut
    is moved past the reader directly, since a real prune waits for every older transaction
    of the cluster to end.)"""
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute("select cache.put(key => 'prune:k', value => '1'::jsonb)")
        cache = Cache(dsn, follow=False)
        try:
            cache.poll()
            assert cache.get("prune:k") == 1
            flushes = cache.stats()["flushes"]
            with c.transaction():
                c.execute("select cache.put(key => 'prune:k', value => '2'::jsonb)")
                c.execute("delete from cache.log where key = 'prune:k'")
                c.execute("update cache.log_state set pruned_xid = pg_current_xact_id()")
            cache.poll()
            assert cache.stats()["flushes"] == flushes + 1
            assert len(cache) == 0
            assert cache.get("prune:k") == 2
        finally:
            cache.close()


def test_paging_never_skips(dsn: str) -> None:
    """More changes than one page while a long writer holds the watermark back: the sweep
    pages through all of them and keeps the watermark below the long writer."""
    with (
        psycopg.connect(dsn, autocommit=True) as c,
        psycopg.connect(dsn) as long_writer,
    ):
        keys = [f"page:{i}" for i in range(30)]
        for key in [*keys, "page:long"]:
            c.execute("select cache.put(key => %s, value => '0'::jsonb)", (key,))
        cache = Cache(dsn, follow=False, page_size=7)
        try:
            cache.poll()
            for key in [*keys, "page:long"]:
                assert cache.get(key) == 0
            long_writer.execute("select cache.put(key => 'page:long', value => '1'::jsonb)")
            long_xid = long_writer.execute("select pg_current_xact_id()::text::bigint").fetchone()[
                0
            ]
            for key in keys:
                c.execute("select cache.put(key => %s, value => '1'::jsonb)", (key,))
            cache.poll()
            assert not set(keys) & set(cache._entries), "a change was missed across pages"
            assert "page:long" in cache._entries
            assert cache.watermark <= long_xid, "the watermark passed a running writer"
            long_writer.commit()
            cache.poll()
            assert "page:long" not in cache._entries
            assert cache.get("page:long") == 1
        finally:
            cache.close()


def test_long_writer_causes_no_redelivery(dsn: str) -> None:
    """A writer that stays in its transaction (idle in transaction, a long job) holds the
    cluster's xmin back. In snapshot mode the follower does not re-read everything since it
    began: each change is applied once, and the writer's own change when it commits."""
    with (
        psycopg.connect(dsn, autocommit=True) as c,
        psycopg.connect(dsn) as long_writer,
    ):
        long_writer.execute("select cache.put(key => 'lw:long', value => '1'::jsonb)")
        cache = Cache(dsn, follow=False)
        try:
            cache.poll()
            base = cache.stats().get("changes_applied", 0)
            for i in range(50):
                c.execute("select cache.put(key => %s, value => '1'::jsonb)", (f"lw:{i}",))
                cache.poll()
            assert cache.stats()["changes_applied"] - base == 50
            long_writer.commit()
            cache.poll()
            cache.poll()
            assert cache.stats()["changes_applied"] - base == 51
        finally:
            cache.close()
