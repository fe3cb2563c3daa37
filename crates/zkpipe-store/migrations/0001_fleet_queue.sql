-- The fleet's shared job queue (docs/fleet.md describes every column and how it is used).
-- Jobs and their partitions are rows; a daemon claims queued partitions with
-- SELECT ... FOR UPDATE SKIP LOCKED and holds each under a lease it renews.

CREATE TABLE zkpipe_jobs (
    id              BIGSERIAL   PRIMARY KEY,
    key_id          TEXT        NOT NULL,
    -- The key's shape (curve, sizes): a daemon claims only work whose key it holds with
    -- the same shape.
    key_shape       TEXT        NOT NULL,
    priority        SMALLINT    NOT NULL,
    request_id      TEXT,
    fingerprint     BYTEA       NOT NULL,
    -- queued | running | done | failed | cancelled
    state           TEXT        NOT NULL,
    error           TEXT,
    partitions      INTEGER     NOT NULL,
    partitions_done INTEGER     NOT NULL DEFAULT 0,
    submitted_by    TEXT        NOT NULL,
    submitted_at    TIMESTAMPTZ NOT NULL DEFAULT now(),
    finished_at     TIMESTAMPTZ
);
CREATE UNIQUE INDEX zkpipe_jobs_request_id ON zkpipe_jobs (request_id)
    WHERE request_id IS NOT NULL;
CREATE INDEX zkpipe_jobs_finished ON zkpipe_jobs (finished_at)
    WHERE finished_at IS NOT NULL;

CREATE TABLE zkpipe_partitions (
    job_id      BIGINT      NOT NULL REFERENCES zkpipe_jobs (id) ON DELETE CASCADE,
    idx         INTEGER     NOT NULL,
    -- Copied from the job so that a claim reads one table.
    key_id      TEXT        NOT NULL,
    key_shape   TEXT        NOT NULL,
    priority    SMALLINT    NOT NULL,
    -- queued | claimed | done | dropped
    state       TEXT        NOT NULL,
    -- The witness (or circuit inputs): inline, or the object store path of its bytes.
    witness     BYTEA,
    witness_object TEXT,
    -- The claim now holding it: a number never reused, the daemon, and the lease's end.
    claim       BIGINT,
    owner       TEXT,
    lease_until TIMESTAMPTZ,
    attempts    INTEGER     NOT NULL DEFAULT 0,
    -- The daemon whose result write was accepted, and the result.
    done_by     TEXT,
    proof_json  TEXT,
    public_json TEXT,
    timings     TEXT,
    PRIMARY KEY (job_id, idx)
);
-- The queue, in claim order.
CREATE INDEX zkpipe_partitions_queued ON zkpipe_partitions (priority DESC, job_id, idx)
    WHERE state = 'queued';
-- Leases, for the reaper.
CREATE INDEX zkpipe_partitions_leases ON zkpipe_partitions (lease_until)
    WHERE state = 'claimed';
CREATE INDEX zkpipe_partitions_owner ON zkpipe_partitions (owner)
    WHERE state = 'claimed';

CREATE SEQUENCE zkpipe_claims;
