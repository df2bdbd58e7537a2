"""Model-based test of the queue's SQL API (Hypothesis stateful).

Random sequences of enqueue, claim, heartbeat, complete, fail, release, cancel (of a pending
job, or an abort request for a running one), requeue_dead and lease expiry run against the
real functions and against a small model of what each job's state must be; after every step
the database must agree with the model, job by job. Calls with stale tokens must raise the
lease-lost SQLSTATE and change nothing.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

LEASE_LOST = "AN001"


@dataclass
class ModelJob:
    max_attempts: int
    status: str = "pending"  # pending | running | expired | dead | done
    attempt: int = 0
    token: uuid.UUID | None = None
    old_tokens: list[uuid.UUID] = field(default_factory=list)
    aborting: bool = False  # queue.cancel asked the running job to stop


def sqlstate(conn: psycopg.Connection, sql: str, params: tuple) -> str | None:
    try:
        conn.execute(sql, params)
    except psycopg.Error as exc:
        return exc.diag.sqlstate
    return None


class QueueMachine(RuleBasedStateMachine):
    dsn: str = ""
    jobs_bundle = Bundle("jobs")

    @initialize()
    def start(self) -> None:
        self.conn = psycopg.connect(self.dsn, autocommit=True)
        tables = self.conn.execute(
            "select string_agg(format('%I.%I', schemaname, tablename), ', ')"
            " from pg_tables where schemaname in ('queue', 'cache')"
            " and tablename not in ('schema_migrations', 'install_state', 'config', 'log_state')"
        ).fetchone()[0]
        self.conn.execute(f"truncate {tables}")
        self.conn.execute("select queue.configure_queue(queue => 'm', backoff_base => '0')")
        self.model: dict[int, ModelJob] = {}

    def teardown(self) -> None:
        if hasattr(self, "conn"):
            self.conn.close()

    # -- producers ------------------------------------------------------------------------

    @rule(target=jobs_bundle, max_attempts=st.integers(1, 3))
    def enqueue(self, max_attempts: int) -> int:
        job_id = self.conn.execute(
            "select queue.enqueue(payload => '{}', queue => 'm', max_attempts => %s)",
            (max_attempts,),
        ).fetchone()[0]
        assert job_id not in self.model
        self.model[job_id] = ModelJob(max_attempts)
        return job_id

    # -- workers ----------------------------------------------------------------------------

    def _reap_expired(self) -> None:
        for job in self.model.values():
            if job.status == "expired":
                job.old_tokens.append(job.token)
                job.token = None
                gone = job.aborting or job.attempt >= job.max_attempts
                job.status, job.aborting = ("dead" if gone else "pending"), False

    @rule(batch=st.integers(1, 3))
    def claim(self, batch: int) -> None:
        self._reap_expired()
        claimable = {i for i, j in self.model.items() if j.status == "pending"}
        rows = self.conn.execute(
            "select job_id, attempt, token from queue.claim(worker => 'w', queues => '{m}',"
            " batch => %s)",
            (batch,),
        ).fetchall()
        assert len(rows) == min(batch, len(claimable))
        for job_id, attempt, token in rows:
            assert job_id in claimable
            job = self.model[job_id]
            job.status, job.attempt, job.token = "running", job.attempt + 1, token
            assert attempt == job.attempt
            assert token not in job.old_tokens

    def _held(self, job_id: int) -> bool:
        return self.model[job_id].status == "running"

    @rule(job_id=jobs_bundle)
    def heartbeat(self, job_id: int) -> None:
        job = self.model[job_id]
        if self._held(job_id):
            assert (
                sqlstate(
                    self.conn,
                    "select queue.heartbeat(job_id => %s, token => %s)",
                    (job_id, job.token),
                )
                is None
            )
        else:
            self._stale_call("select queue.heartbeat(job_id => %s, token => %s)", job_id)

    @rule(job_id=jobs_bundle)
    def complete(self, job_id: int) -> None:
        job = self.model[job_id]
        if self._held(job_id) and job.aborting:
            # the abort wins: fenced, nothing changes
            sql = "select queue.complete(job_id => %s, token => %s)"
            assert sqlstate(self.conn, sql, (job_id, job.token)) == LEASE_LOST
        elif self._held(job_id):
            self.conn.execute(
                "select queue.complete(job_id => %s, token => %s)", (job_id, job.token)
            )
            job.status, job.token = "done", None
        else:
            self._stale_call("select queue.complete(job_id => %s, token => %s)", job_id)

    @rule(job_id=jobs_bundle, retryable=st.booleans())
    def fail(self, job_id: int, retryable: bool) -> None:
        job = self.model[job_id]
        sql = (
            "select queue.fail(job_id => %s, token => %s, error => 'e', retry_in => '0',"
            " retryable => %s)"
        )
        if not self._held(job_id):
            self._stale_call(sql, job_id, retryable)
            return
        status = self.conn.execute(sql, (job_id, job.token, retryable)).fetchone()[0]
        expected = "dead" if (not retryable or job.attempt >= job.max_attempts) else "pending"
        assert status == ("cancelled" if job.aborting else expected)
        job.old_tokens.append(job.token)
        job.status, job.token = ("dead" if job.aborting else expected), None
        job.aborting = False

    @rule(job_id=jobs_bundle)
    def release(self, job_id: int) -> None:
        job = self.model[job_id]
        if not self._held(job_id):
            self._stale_call("select queue.release(job_id => %s, token => %s)", job_id)
            return
        self.conn.execute("select queue.release(job_id => %s, token => %s)", (job_id, job.token))
        job.old_tokens.append(job.token)
        if job.aborting:  # an aborted job is not given back: it ends cancelled
            job.status, job.token, job.aborting = "dead", None, False
            return
        job.status, job.token, job.attempt = "pending", None, job.attempt - 1

    @rule(job_id=jobs_bundle)
    def expire_lease(self, job_id: int) -> None:
        """Time passes for one running job: its lease runs out."""
        job = self.model[job_id]
        if job.status != "running":
            return
        self.conn.execute(
            "update queue.jobs set lease_expires_at = now() - interval '1 second' where id = %s",
            (job_id,),
        )
        job.status = "expired"

    # -- operators --------------------------------------------------------------------------

    @rule(job_id=jobs_bundle)
    def cancel(self, job_id: int) -> None:
        job = self.model[job_id]
        state = sqlstate(self.conn, "select queue.cancel(job_id => %s)", (job_id,))
        if job.status == "pending":
            assert state is None
            job.status = "dead"
        elif job.status in ("running", "expired"):
            assert state is None  # an abort request: the job runs on until it ends
            job.aborting = True
        elif job.status == "dead":
            assert state == "55000"
        else:
            assert state == "42704"

    @rule(job_id=jobs_bundle)
    def requeue_dead(self, job_id: int) -> None:
        job = self.model[job_id]
        state = sqlstate(self.conn, "select queue.requeue_dead(job_id => %s)", (job_id,))
        if job.status == "dead":
            assert state is None
            job.status, job.attempt = "pending", 0
        elif job.status == "done":
            assert state == "42704"
        else:
            assert state == "55000"

    @precondition(lambda self: any(j.status == "done" for j in self.model.values()))
    @rule(data=st.data())
    def forget_done(self, data: st.DataObject) -> None:
        """Finished jobs stay gone: calls on them with any token are lease-lost."""
        done = sorted(i for i, j in self.model.items() if j.status == "done")
        job_id = data.draw(st.sampled_from(done))
        self._stale_call("select queue.complete(job_id => %s, token => %s)", job_id)

    def _stale_call(self, sql: str, job_id: int, *extra: object) -> None:
        job = self.model[job_id]
        tokens = [*job.old_tokens, uuid.uuid4()]
        if job.status == "expired":
            tokens.append(job.token)  # the current token, but its lease ran out
        for token in tokens:
            assert sqlstate(self.conn, sql, (job_id, token, *extra)) == LEASE_LOST

    # -- the database agrees with the model ---------------------------------------------------

    @invariant()
    def database_matches_model(self) -> None:
        if not hasattr(self, "conn"):
            return
        live = {
            r[0]: (r[1], r[2], r[3])
            for r in self.conn.execute(
                "select id, status, attempt, token from queue.jobs where queue = 'm'"
            )
        }
        dead = {r[0] for r in self.conn.execute("select job_id from queue.dead_letters")}
        for job_id, job in self.model.items():
            if job.status == "done":
                assert job_id not in live and job_id not in dead, job_id
            elif job.status == "dead":
                assert job_id in dead and job_id not in live, job_id
            else:
                status, attempt, token = live[job_id]
                expected = "pending" if job.status == "pending" else "running"
                assert (status, attempt) == (expected, job.attempt), (job_id, job)
                if expected == "running":
                    assert token == job.token
        assert set(live) <= set(self.model)


@pytest.mark.timeout(600)
def test_queue_api_matches_model(dsn: str) -> None:
    QueueMachine.dsn = dsn
    runner = QueueMachine.TestCase
    runner.settings = settings(
        max_examples=60,
        stateful_step_count=40,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    runner().runTest()
