// The SQL-only check from Node (tests/test_node_client.py runs it): the `pg` package, one
// DSN, plain calls of andal's functions by named arguments, and no routing code. Given the
// router DSN of a cluster, every call below runs on the partition that owns its data.
//
// Usage: node check.mjs DSN QUEUE [QUEUE ...]
// Prints one JSON object: the ids enqueued per queue, the ids completed and failed, and the
// state queue.job() reports for each id.
import pg from "pg";

const [dsn, ...queues] = process.argv.slice(2);
if (!dsn || queues.length === 0) {
  console.error("usage: node check.mjs DSN QUEUE [QUEUE ...]");
  process.exit(2);
}

const client = new pg.Client({ connectionString: dsn });
await client.connect();
try {
  const enqueued = {};
  for (const queue of queues) {
    enqueued[queue] = [];
    for (let n = 0; n < 2; n++) {
      const { rows } = await client.query(
        "select queue.enqueue(payload => $1::jsonb, queue => $2::text) as id",
        [JSON.stringify({ n, from: "node" }), queue],
      );
      enqueued[queue].push(String(rows[0].id));
    }
  }
  const claimed = await client.query(
    "select job_id, token, queue from queue.claim(worker => $1::text, queues => $2::text[]," +
      " batch => $3::int)",
    ["node-check", queues, queues.length * 2],
  );
  const completed = [];
  const failed = [];
  for (const [i, job] of claimed.rows.entries()) {
    if (i % 2 === 0) {
      await client.query(
        "select queue.complete(job_id => $1::bigint, token => $2::uuid, result => $3::jsonb)",
        [job.job_id, job.token, JSON.stringify({ ok: true })],
      );
      completed.push(String(job.job_id));
    } else {
      const { rows } = await client.query(
        "select queue.fail(job_id => $1::bigint, token => $2::uuid, error => $3::text," +
          " retryable => false) as state",
        [job.job_id, job.token, "failed from node"],
      );
      if (rows[0].state !== "dead") throw new Error(`fail gave ${rows[0].state}`);
      failed.push(String(job.job_id));
    }
  }
  const states = {};
  for (const id of Object.values(enqueued).flat()) {
    const { rows } = await client.query(
      "select state from queue.job(job_id => $1::bigint)",
      [id],
    );
    states[id] = rows.length ? rows[0].state : null;
  }
  console.log(JSON.stringify({ enqueued, claimed: claimed.rows.length, completed, failed, states }));
} finally {
  await client.end();
}
