-- The ledger of Tally's exactly-once flush, in the database that holds the tables counts are
-- flushed into. `tally schema --ledger <name> --into postgresql://...` prints this file with
-- the ledger's name filled in (add --apply to run it). docs/postgresql.md explains the protocol.

-- One row per batch of keys moved from a store into the database.
CREATE TABLE IF NOT EXISTS ${ledger} (
  batch      text COLLATE "C" NOT NULL PRIMARY KEY, -- the batch id; the pop of key k carries the
                                                   -- operation id batch || ':' || k
  prefix     text COLLATE "C" NOT NULL,            -- the prefix flushed (one flusher at a time each)
  keys       text[] NOT NULL,                      -- the batch's keys, recorded before the first pop
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  applied_at timestamptz,                          -- set by the transaction that ran the statements;
                                                   -- NULL: unfinished, to be finished by replaying
                                                   -- the same pops
  counts     bigint[],                             -- what each key contributed, once applied
  total      numeric                               -- their sum
);

-- What a starting flusher looks for first.
CREATE INDEX IF NOT EXISTS ${name}_unfinished ON ${ledger} (prefix, created_at) WHERE applied_at IS NULL;
