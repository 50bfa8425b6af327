-- Tally's PostgreSQL schema: one table of counters and rate limiters, and the function that runs
-- a rate limiter's state machine. `tally schema --store postgresql://...` prints this file with
-- the store's table name filled in (add --apply to run it); Tally never runs it by itself.
-- Re-running it is harmless. docs/postgresql.md describes every column.

-- One row per key. Counters and rate limiters share the key space, so a row holds exactly one of
-- ival (an integer counter), fval (a floating counter) or rec (a rate limiter's state).
CREATE TABLE IF NOT EXISTS ${table} (
  key  text COLLATE "C" NOT NULL PRIMARY KEY, -- byte order, so this index also serves keys(prefix)
  ival bigint,                                -- an integer counter's value
  fval double precision,                      -- a floating counter's value
  rec  bigint[],                              -- a rate limiter's words: six per limit; '{}' is a
                                              -- tombstone (full again, only "at" is kept)
  ver  smallint,                              -- a rate limiter's record format (LimiterRecord.VERSION)
  at   bigint,                                -- a rate limiter's latest decision instant, epoch ns
  exp  bigint                                 -- expiry, epoch nanoseconds; NULL: never
);
-- A row holds exactly one of ival, fval and rec, and ver and at exactly when it holds rec: every
-- statement of the store writes a row whole. The invariant is not a CHECK constraint, because
-- one costs every write (docs/benchmarks.md, PostgreSQL), and schemas
-- of earlier versions that had them lose them here.
ALTER TABLE ${table} DROP CONSTRAINT IF EXISTS ${name}_one_kind, DROP CONSTRAINT IF EXISTS ${name}_limiter;

-- The sweep deletes expired rows through this index; reads filter them out themselves.
CREATE INDEX IF NOT EXISTS ${name}_exp ON ${table} (exp) WHERE exp IS NOT NULL;

-- Operation ids: the first result of each mutation that carried an id, kept for the retention
-- window, so that a repeat returns it instead of applying again.
CREATE TABLE IF NOT EXISTS ${table}_ops (
  id     text COLLATE "C" NOT NULL PRIMARY KEY,
  record text NOT NULL,     -- OperationRecord: "<fingerprint, 16 hex>|<first result>", e.g.
                            -- 9f86d081884c7d65|L42; the same id for another operation is refused
  exp    bigint NOT NULL    -- when the id may be forgotten (the retention window), epoch ns
);
CREATE INDEX IF NOT EXISTS ${name}_ops_exp ON ${table}_ops (exp);

-- --------------------------------------------------------------------------------------------
-- Rate limiters: tally-core's LimiterMachine and its algorithms (Gcra.java, FixedWindow.java,
-- SlidingWindow.java, CalendarQuota.java) over the same record, in exact numeric arithmetic
-- (instants in nanoseconds times counts reach 2^124, far beyond bigint). LimiterVectorsTest replays
-- the kit's limiter vectors, written by the Java machine, and requires identical decisions and records.
--
-- A record is six words per limit, [tag, p0, p1, s0, s1, s2], tag the Limit.Kind ordinal + 1:
-- 1 token bucket, 2 leaky bucket, 3 GCRA (one algorithm: s0 is the instant the bucket is full
-- again), 4 fixed window and 5 sliding window (s0 the window's start, s1 its count, s2 the
-- previous window's), 6 calendar quota (s0 the period's end, s1 used, s2 topped up). A stored
-- tag also carries the limits' version (LimiterRecord): kind + 256 * version. limit_step strips
-- it on reading and puts it back on writing, so the functions below see kinds alone. A bucket
-- with a warm-up (WarmingGcra.java) has its cold factor in the kind's bits 4-7: kind 33 to 243,
-- s1 the warm-up period and s2 the instant its warm-up started.
-- --------------------------------------------------------------------------------------------

-- floor(a / b) for b > 0 (Math.floorDiv).
CREATE OR REPLACE FUNCTION ${table}_fdiv(a numeric, b numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT CASE WHEN mod(a, b) < 0 THEN div(a, b) - 1 ELSE div(a, b) END
$$;

-- FixedWindow.windowStart: now - floorMod(now, window).
CREATE OR REPLACE FUNCTION ${table}_window_start(now numeric, win numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT now - CASE WHEN mod(now, win) < 0 THEN mod(now, win) + win ELSE mod(now, win) END
$$;

-- CalendarQuota.periodEnd. zones holds, per limit, the caller's day and month boundaries in the
-- quota's zone (epoch seconds: the day before, this day, the next two days, then likewise
-- months), computed with java.time around the caller's clock: PostgreSQL's time zone database
-- may be older or newer than the JVM's. Without them (NULL) the quota follows UTC. NULL when
-- they do not cover now (the caller's clock and the database's disagree by more than a day): the
-- step then answers TALLY_CLOCK_SKEW for that call alone.
CREATE OR REPLACE FUNCTION ${table}_period_end(code numeric, zones bigint[], i int, now numeric)
RETURNS numeric LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  first int;
  b numeric;
  t timestamp;
BEGIN
  -- (a bucket's warm-up period fills the first of a limit's eight alone: not boundaries)
  IF zones IS NOT NULL AND zones[8 * (i - 1) + 1] IS NOT NULL AND zones[8 * (i - 1) + 2] IS NOT NULL THEN
    first := 8 * (i - 1) + CASE WHEN code = 2 THEN 5 ELSE 1 END;
    IF now < zones[first] * 1000000000::numeric THEN
      RETURN NULL;
    END IF;
    FOR j IN first + 1 .. first + 3 LOOP
      b := zones[j] * 1000000000::numeric;
      IF now < b THEN
        RETURN b;
      END IF;
    END LOOP;
    RETURN NULL;
  END IF;
  t := to_timestamp(${table}_fdiv(now, 1000000000)::double precision) AT TIME ZONE 'UTC';
  IF code = 2 THEN
    t := date_trunc('month', t) + interval '1 month';
  ELSE
    t := date_trunc('day', t) + interval '1 day';
  END IF;
  RETURN extract(epoch FROM t)::numeric * 1000000000;
END
$$;

-- Algorithm.limit: the limit in force (a quota's with its top-ups, saturating).
CREATE OR REPLACE FUNCTION ${table}_limit_of(r numeric[], o int) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN r[o] = 6 THEN least(r[o + 1] + r[o + 5], 9223372036854775807) ELSE r[o + 1] END
$$;

-- SlidingWindow.previousShare: ceil(prev * left / window), saturating.
CREATE OR REPLACE FUNCTION ${table}_previous_share(r numeric[], o int, now numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT least(-${table}_fdiv(-(r[o + 5] * (r[o + 2] - (now - r[o + 3]))), r[o + 2]), 9223372036854775807)
$$;

-- SlidingWindow.firstFit: the first offset e into a window at which prev*(W-e) <= room*W.
CREATE OR REPLACE FUNCTION ${table}_first_fit(prev numeric, room numeric, win numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN prev = 0 THEN 0
    WHEN least(${table}_fdiv(room * win, prev), 9223372036854775807) >= win THEN 0
    ELSE win - least(${table}_fdiv(room * win, prev), 9223372036854775807) END
$$;

-- WarmingGcra.cost: what one unit of a warming bucket costs at the instant at.
CREATE OR REPLACE FUNCTION ${table}_warm_cost(r numeric[], o int, at numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT r[o + 2] + least(-${table}_fdiv(-((div(r[o], 16) - 1) * r[o + 2]
      * (r[o + 4] - least(r[o + 4], greatest(0, at - r[o + 5])))), r[o + 4]), 9223372036854775807)
$$;

-- WarmingGcra.fits: n units fit at the instant at (the burst tolerance (C - 1)T, plus the last
-- unit's cost).
CREATE OR REPLACE FUNCTION ${table}_warm_fits(r numeric[], o int, at numeric, n numeric) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT greatest(0, r[o + 3] - at) + (n - 1) * ${table}_warm_cost(r, o, at) <= (r[o + 1] - 1) * r[o + 2]
$$;

-- Algorithm.remaining: units available now.
CREATE OR REPLACE FUNCTION ${table}_remaining(r numeric[], o int, now numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN r[o] <= 3 THEN CASE WHEN r[o + 1] * r[o + 2] - greatest(0, r[o + 3] - now) <= 0 THEN 0
      ELSE ${table}_fdiv(r[o + 1] * r[o + 2] - greatest(0, r[o + 3] - now), r[o + 2]) END
    WHEN r[o] >= 16 THEN CASE
      WHEN (r[o + 1] - 1) * r[o + 2] + ${table}_warm_cost(r, o, now) - greatest(0, r[o + 3] - now) <= 0 THEN 0
      ELSE ${table}_fdiv((r[o + 1] - 1) * r[o + 2] + ${table}_warm_cost(r, o, now) - greatest(0, r[o + 3] - now),
        ${table}_warm_cost(r, o, now)) END
    WHEN r[o] = 4 THEN greatest(0, r[o + 1] - r[o + 4])
    WHEN r[o] = 5 THEN greatest(0, r[o + 1] - r[o + 4] - ${table}_previous_share(r, o, now))
    ELSE greatest(0, ${table}_limit_of(r, o) - r[o + 4]) END
$$;

-- Algorithm.debtRoom: how many units a charge may still take, until the limit stands one full
-- limit below empty (the bound of each algorithm is argued in its Java class): a bucket's fullAt
-- 2CT ahead (never past Long.MAX_VALUE), a warming bucket's (2C - 1)T + I in units of I, a
-- window's or a quota's count twice the limit in force (a sliding window's estimate), saturating.
CREATE OR REPLACE FUNCTION ${table}_debt_room(r numeric[], o int, now numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT greatest(0, CASE
    WHEN r[o] <= 3 THEN ${table}_fdiv(least(2 * r[o + 1] * r[o + 2], 9223372036854775807 - now)
      - greatest(0, r[o + 3] - now), r[o + 2])
    WHEN r[o] >= 16 THEN ${table}_fdiv((2 * r[o + 1] - 1) * r[o + 2] + ${table}_warm_cost(r, o, now)
      - greatest(0, r[o + 3] - now), ${table}_warm_cost(r, o, now))
    WHEN r[o] = 5 THEN least(2 * r[o + 1], 9223372036854775807)
      - least(r[o + 4] + ${table}_previous_share(r, o, now), 9223372036854775807)
    ELSE least(2 * ${table}_limit_of(r, o), 9223372036854775807) - r[o + 4] END)
$$;

-- Algorithm.retryAfter: 0 if n units can be granted now, else when they could be, or NEVER.
CREATE OR REPLACE FUNCTION ${table}_retry_after(r numeric[], o int, now numeric, n numeric) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  never constant numeric := 9223372036854775807;
  elapsed numeric;
  room numeric;
  lo numeric;
  hi numeric;
  mid numeric;
BEGIN
  IF r[o] <= 3 THEN
    IF r[o + 1] < n THEN
      RETURN never;
    END IF;
    RETURN greatest(0, greatest(r[o + 3], now) + n * r[o + 2] - now - r[o + 1] * r[o + 2]);
  ELSIF r[o] >= 16 THEN
    IF r[o + 1] < n THEN
      RETURN never;
    ELSIF ${table}_warm_fits(r, o, now, n) THEN
      RETURN 0;
    END IF;
    -- it fits once full and warm: bisect for the first instant it does
    lo := now;
    hi := greatest(r[o + 3], r[o + 5] + r[o + 4]);
    WHILE hi - lo > 1 LOOP
      mid := lo + div(hi - lo, 2);
      IF ${table}_warm_fits(r, o, mid, n) THEN
        hi := mid;
      ELSE
        lo := mid;
      END IF;
    END LOOP;
    RETURN hi - now;
  ELSIF r[o] = 4 THEN
    IF r[o + 1] < n THEN
      RETURN never;
    ELSIF n <= r[o + 1] - r[o + 4] THEN
      RETURN 0;
    END IF;
    RETURN r[o + 3] + r[o + 2] - now;
  ELSIF r[o] = 5 THEN
    IF r[o + 1] < n THEN
      RETURN never;
    END IF;
    elapsed := now - r[o + 3];
    room := r[o + 1] - r[o + 4] - n;
    IF room >= 0 THEN
      RETURN greatest(0, ${table}_first_fit(r[o + 5], room, r[o + 2]) - elapsed);
    END IF;
    -- not in this window: in the next one, the current count becomes the previous
    RETURN r[o + 2] - elapsed + ${table}_first_fit(r[o + 4], r[o + 1] - n, r[o + 2]);
  END IF;
  IF n <= ${table}_limit_of(r, o) - r[o + 4] THEN
    RETURN 0;
  END IF;
  RETURN CASE WHEN n <= r[o + 1] THEN r[o + 3] - now ELSE never END;
END
$$;

-- Algorithm.resetAfter: until the state is that of a fresh limiter; 0 if it is already.
CREATE OR REPLACE FUNCTION ${table}_reset_after(r numeric[], o int, now numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE
    WHEN r[o] <= 3 OR r[o] >= 16 THEN greatest(0, r[o + 3] - now)
    WHEN r[o] = 4 THEN CASE WHEN r[o + 4] <= 0 THEN 0 ELSE r[o + 3] + r[o + 2] - now END
    WHEN r[o] = 5 THEN CASE WHEN r[o + 4] > 0 THEN r[o + 3] + 2 * r[o + 2] - now
      WHEN r[o + 5] > 0 THEN r[o + 3] + r[o + 2] - now ELSE 0 END
    ELSE CASE WHEN r[o + 4] > 0 OR r[o + 5] > 0 THEN r[o + 3] - now ELSE 0 END END
$$;

-- Algorithm.keepAfter: until the state may be dropped; a warm-up's is kept until it is cold.
CREATE OR REPLACE FUNCTION ${table}_keep_after(r numeric[], o int, now numeric) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN r[o] >= 16 THEN greatest(0, r[o + 3] - now + r[o + 4] + 1)
    ELSE ${table}_reset_after(r, o, now) END
$$;

-- Algorithm.normalize: brings limit o of r up to now; returns the record (a quota's period end
-- NULL if the boundaries sent do not reach now).
CREATE OR REPLACE FUNCTION ${table}_normalize(r numeric[], o int, now numeric, zones bigint[], i int)
RETURNS numeric[] LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  start numeric;
BEGIN
  IF r[o] <= 3 THEN
    IF r[o + 3] < now THEN
      r[o + 3] := now; -- full: time spent full earns nothing
    END IF;
  ELSIF r[o] >= 16 THEN
    IF now - r[o + 3] > r[o + 4] THEN -- cold: this call starts a warm-up
      r[o + 3] := now;
      r[o + 5] := now;
    END IF;
  ELSIF r[o] = 4 THEN
    start := ${table}_window_start(now, r[o + 2]);
    IF r[o + 3] <> start THEN
      r[o + 3] := start;
      r[o + 4] := 0;
    END IF;
  ELSIF r[o] = 5 THEN
    start := ${table}_window_start(now, r[o + 2]);
    IF r[o + 3] <> start THEN
      r[o + 5] := CASE WHEN r[o + 3] = start - r[o + 2] THEN r[o + 4] ELSE 0 END;
      r[o + 4] := 0;
      r[o + 3] := start;
    END IF;
  ELSIF r[o + 3] <= now THEN
    r[o + 3] := ${table}_period_end(r[o + 2], zones, i, now);
    r[o + 4] := 0;
    r[o + 5] := 0;
  END IF;
  RETURN r;
END
$$;

-- LimiterMachine.apply, then the write, for one call. Arguments:
--   k        the limiter's key
--   op       acquire | peek | refund | reset | reconfigure | topup | charge
--   permits  how many units (ignored by peek, reset and reconfigure)
--   clock    the caller's clock in epoch nanoseconds, or NULL to decide at clock_timestamp(),
--            read once the row is locked
--   mine     the caller's limits: tag, p0, p1 for each, every tag with the caller's version
--   zones    eight boundaries per limit (see period_end), NULL for all-UTC; for a bucket with a
--            warm-up, its first is the warm-up period in nanoseconds
-- Answers d = {allowed (1 or 0), remaining, limit, retryAfter, resetAfter, deciding limit (from 0)}
-- followed, when there are several limits, by remaining, limit, resetAfter of each in order, and
-- when the stored limits differed from the caller's (Decision.Mismatch) by 1 (upgraded), 2
-- (adopted) or 3 (conflict) and the stored version; or
-- err, a refusal that wrote nothing: TALLY_NOT_LIMITER (the key holds a live counter),
-- TALLY_BAD_STATE <why>, TALLY_BAD_VERSION <v>, TALLY_NO_QUOTA, TALLY_CLOCK_SKEW <the instant
-- decided at, epoch ns>. It answers a refusal instead of raising it so that one call of a batch
-- (limit_batch) fails alone, without a subtransaction per call.
CREATE OR REPLACE FUNCTION ${table}_limit_step(k text, op text, permits bigint, clock bigint, mine bigint[],
    zones bigint[], OUT d bigint[], OUT err text)
LANGUAGE plpgsql AS $$
DECLARE
  maxv constant numeric := 9223372036854775807;
  cnt int := coalesce(array_length(mine, 1), 0) / 3;
  n int;
  cur record;
  existed boolean;
  now numeric;
  stored numeric[];
  r numeric[];
  old numeric[];
  consumed numeric;
  charged numeric;
  allowed boolean;
  retry numeric;
  wait numeric;
  remaining numeric;
  lim numeric;
  rem numeric;
  reset_after numeric;
  deciding int;
  any_quota boolean;
  decision bigint[];
  each numeric[];
  new_rec bigint[];
  new_exp bigint;
  o int;
  inserted int;
  w bigint[];
  bnow bigint;
  bn bigint;
  bretry bigint;
  mtag bigint := mine[1];
  ver bigint := mine[1] / 256;
  sver bigint;
  wver bigint;
  mismatch int;
  own boolean;
  reconf boolean;
  kept numeric;
BEGIN
  FOR i IN 1 .. cnt LOOP -- the caller's kinds; its version is ver
    mine[3 * i - 2] := mine[3 * i - 2] % 256;
  END LOOP;
  FOR attempt IN 1 .. 8 LOOP
    SELECT t.rec, t.ver, t.at, t.exp, (t.rec IS NULL) AS counter INTO cur FROM ${table} t WHERE t.key = k FOR UPDATE;
    existed := FOUND;
    now := coalesce(clock::numeric, round(extract(epoch FROM clock_timestamp()) * 1000000000));
    stored := NULL;
    IF existed AND NOT cur.counter THEN
      IF cur.ver <> 1 THEN
        err := 'TALLY_BAD_VERSION ' || cur.ver;
        RETURN;
      END IF;
      -- Time never runs back (LimiterRecord): decide no earlier than the latest decision, which
      -- a tombstone and an expired record still remember.
      now := greatest(now, cur.at);
      IF cur.exp IS NULL OR cur.exp > now THEN
        stored := cur.rec::numeric[];
      END IF;
    ELSIF existed AND (cur.exp IS NULL OR cur.exp > now) THEN
      err := 'TALLY_NOT_LIMITER';
      RETURN;
    END IF;

    w := CASE WHEN stored IS NULL THEN NULL ELSE cur.rec END;
    IF (op = 'acquire' OR op = 'peek') AND cnt = 1 AND mine[1] BETWEEN 1 AND 3
        AND (w IS NULL OR cardinality(w) = 0 OR w[1] = 0
          OR (cardinality(w) = 6 AND w[1] = mtag AND w[2] = mine[2] AND w[3] = mine[3])) THEN
      -- The common call, an acquisition or a peek on one bucket (token, leaky or GCRA) holding
      -- the caller's own limits and version (any other is the general path's): the same
      -- steps as the general path below (LimiterMachine with Gcra.java) in bigint arithmetic,
      -- which cannot overflow here: C*T <= 2^61 (Limit checks it), the state is at most 2*C*T
      -- ahead of now (C*T of debt, after a charge) and at most Long.MAX_VALUE, and now <= 2^62:
      -- the retry adds n*T <= C*T to what is ahead, and a grant happens only within C*T of now.
      bnow := now::bigint;
      IF w IS NULL OR cardinality(w) = 0 OR w[1] = 0 THEN
        w := ARRAY[mtag, mine[2], mine[3], 0, 0, 0]; -- LimiterMachine.fresh()
      END IF;
      IF w[4] < bnow THEN
        w[4] := bnow; -- Gcra.normalize: full, and time spent full earns nothing
      END IF;
      bn := CASE WHEN op = 'peek' THEN 1 ELSE permits END;
      bretry := 0;
      IF op = 'peek' OR permits > 0 THEN
        bretry := CASE WHEN bn > w[2] THEN maxv::bigint
          ELSE greatest(0, (w[4] - bnow) + bn * w[3] - w[2] * w[3]) END; -- Gcra.retryAfter
        IF bretry = 0 AND op = 'acquire' THEN
          w[4] := w[4] + bn * w[3]; -- Gcra.consume
        END IF;
      END IF;
      bn := w[2] * w[3] - (w[4] - bnow); -- room, for Gcra.remaining
      decision := ARRAY[CASE WHEN bretry = 0 THEN 1 ELSE 0 END, CASE WHEN bn <= 0 THEN 0 ELSE bn / w[3] END,
          w[2], bretry, w[4] - bnow, 0];
      IF w[4] = bnow THEN
        new_rec := NULL;
      ELSE
        new_rec := w;
        new_exp := w[4];
      END IF;
    ELSIF op = 'reset' THEN
      -- LimiterMachine.full(): the caller's limits, untouched
      remaining := maxv;
      lim := 0;
      deciding := 0;
      each := '{}';
      FOR i IN 1 .. cnt LOOP
        IF i = 1 OR mine[3 * i - 1] < remaining THEN
          remaining := mine[3 * i - 1];
          lim := mine[3 * i - 1];
          deciding := i - 1;
        END IF;
        IF cnt > 1 THEN
          each := each || ARRAY[mine[3 * i - 1], mine[3 * i - 1], 0]::numeric[];
        END IF;
      END LOOP;
      decision := ARRAY[1, remaining, lim, 0, 0, deciding]::bigint[] || each::bigint[];
      new_rec := NULL;
    ELSE
      IF stored IS NULL OR cardinality(stored) = 0 OR stored[1] = 0 THEN
        stored := NULL;
        r := '{}';
        FOR i IN 1 .. cnt LOOP -- LimiterMachine.fresh(): the caller's limits, full
          r := r || ARRAY[mine[3 * i - 2], mine[3 * i - 1], mine[3 * i],
              0, CASE WHEN mine[3 * i - 2] >= 16 THEN zones[8 * (i - 1) + 1] ELSE 0 END, 0]::numeric[];
        END LOOP;
      ELSE
        IF cardinality(stored) % 6 <> 0 THEN
          err := 'TALLY_BAD_STATE the record has ' || cardinality(stored) || ' words, not a multiple of 6';
          RETURN;
        END IF;
        sver := div(stored[1], 256);
        FOR o IN 1 .. cardinality(stored) BY 6 LOOP
          IF stored[o] < 0 OR stored[o] >= 9007199254740992 OR mod(stored[o], 256) < 1
              OR (mod(stored[o], 256) > 6 AND NOT (mod(stored[o], 16) BETWEEN 1 AND 3 AND mod(stored[o], 256) >= 32)) THEN
            err := 'TALLY_BAD_STATE unknown algorithm tag ' || stored[o];
            RETURN;
          END IF;
          stored[o] := mod(stored[o], 256);
        END LOOP;
        r := stored;
      END IF;
      -- LimiterMachine: whose limits decide (a newer version's replace the stored ones)
      mismatch := 0;
      own := true;
      reconf := false;
      IF stored IS NOT NULL THEN
        IF op = 'reconfigure' THEN
          reconf := true;
        ELSE
          own := cardinality(stored) = 6 * cnt;
          FOR i IN 1 .. cnt LOOP
            EXIT WHEN NOT own;
            o := 6 * (i - 1) + 1;
            own := stored[o] = mine[3 * i - 2] AND stored[o + 1] = mine[3 * i - 1] AND stored[o + 2] = mine[3 * i]
                AND (mine[3 * i - 2] < 16 OR stored[o + 4] = zones[8 * (i - 1) + 1]);
          END LOOP;
          IF NOT own THEN
            IF ver > sver THEN
              reconf := true;
              mismatch := 1;
              own := true;
            ELSE
              mismatch := CASE WHEN ver < sver THEN 2 ELSE 3 END;
            END IF;
          END IF;
        END IF;
      END IF;
      wver := CASE WHEN stored IS NULL OR reconf THEN ver ELSE greatest(ver, sver) END;
      -- LimiterMachine.notBefore: never decide before a stored window's start
      FOR o IN 1 .. cardinality(r) BY 6 LOOP
        IF r[o] IN (4, 5) THEN
          now := greatest(now, r[o + 3]);
        END IF;
      END LOOP;
      IF reconf THEN
        -- this caller's limits, carrying over what each same-kind stored limit had consumed
        old := stored;
        r := '{}';
        FOR i IN 1 .. cnt LOOP
          r := r || ARRAY[mine[3 * i - 2], mine[3 * i - 1], mine[3 * i],
              0, CASE WHEN mine[3 * i - 2] >= 16 THEN zones[8 * (i - 1) + 1] ELSE 0 END, 0]::numeric[];
        END LOOP;
        FOR i IN 1 .. cnt LOOP
          o := 6 * (i - 1) + 1;
          IF o < cardinality(old)
              AND (CASE WHEN old[o] <= 3 OR old[o] >= 16 THEN 1 ELSE old[o] END)
                = (CASE WHEN r[o] <= 3 OR r[o] >= 16 THEN 1 ELSE r[o] END) THEN
            old := ${table}_normalize(old, o, now, zones, i);
            IF old[o] = 6 AND old[o + 3] IS NULL THEN
              err := 'TALLY_CLOCK_SKEW ' || now;
              RETURN;
            END IF;
            consumed := CASE
              WHEN old[o] <= 3 THEN -${table}_fdiv(-greatest(0, old[o + 3] - now), old[o + 2])
              WHEN old[o] >= 16 THEN -${table}_fdiv(-greatest(0, old[o + 3] - now), ${table}_warm_cost(old, o, now))
              WHEN old[o] = 5 THEN old[o + 4] + ${table}_previous_share(old, o, now)
              ELSE old[o + 4] END;
            IF r[o] <= 3 THEN
              r[o + 3] := now + least(consumed, r[o + 1]) * r[o + 2];
            ELSIF r[o] >= 16 THEN
              r[o + 3] := now + least(consumed, r[o + 1]) * r[o + 2];
              r[o + 5] := now - r[o + 4]; -- a reconfigured bucket counts as warm
            ELSIF r[o] = 6 THEN
              r[o + 3] := ${table}_period_end(r[o + 2], zones, i, now);
              IF r[o + 3] IS NULL THEN
                err := 'TALLY_CLOCK_SKEW ' || now;
                RETURN;
              END IF;
              r[o + 4] := consumed;
              r[o + 5] := 0;
            ELSE
              r[o + 3] := ${table}_window_start(now, r[o + 2]);
              r[o + 4] := least(consumed, r[o + 1]);
              r[o + 5] := 0;
            END IF;
          END IF;
        END LOOP;
      END IF;

      n := cardinality(r) / 6;
      FOR i IN 1 .. n LOOP
        r := ${table}_normalize(r, 6 * (i - 1) + 1, now, zones, i);
        IF r[6 * (i - 1) + 1] = 6 AND r[6 * (i - 1) + 4] IS NULL THEN
          err := 'TALLY_CLOCK_SKEW ' || now;
          RETURN;
        END IF;
      END LOOP;

      allowed := true;
      retry := 0;
      IF op = 'acquire' OR op = 'peek' THEN
        IF op = 'peek' OR permits > 0 THEN
          -- LimiterMachine.retryAfter: the longest wait, or NEVER if a limit that has room now
          -- will have lost it by then (a quota's top-ups end with its period)
          wait := 0;
          FOR i IN 1 .. n LOOP
            wait := greatest(wait, ${table}_retry_after(r, 6 * (i - 1) + 1, now,
                CASE WHEN op = 'peek' THEN 1 ELSE permits END));
          END LOOP;
          IF wait <> 0 AND wait <> maxv THEN
            FOR i IN 1 .. n LOOP
              o := 6 * (i - 1) + 1;
              IF r[o] = 6 AND ${table}_retry_after(r, o, now, CASE WHEN op = 'peek' THEN 1 ELSE permits END) = 0
                  AND NOT ((CASE WHEN op = 'peek' THEN 1 ELSE permits END) <= r[o + 1] OR wait < r[o + 3] - now) THEN
                wait := maxv;
              END IF;
            END LOOP;
          END IF;
          retry := wait;
          allowed := retry = 0;
          IF allowed AND op = 'acquire' THEN
            FOR i IN 1 .. n LOOP -- Algorithm.consume
              o := 6 * (i - 1) + 1;
              IF r[o] <= 3 THEN
                r[o + 3] := greatest(r[o + 3], now) + permits * r[o + 2];
              ELSIF r[o] >= 16 THEN
                r[o + 3] := greatest(r[o + 3], now) + permits * ${table}_warm_cost(r, o, now);
              ELSE
                r[o + 4] := r[o + 4] + permits;
              END IF;
            END LOOP;
          END IF;
        END IF;
      ELSIF op = 'refund' THEN
        FOR i IN 1 .. n LOOP -- Algorithm.refund: never beyond the limit
          o := 6 * (i - 1) + 1;
          IF r[o] <= 3 THEN
            r[o + 3] := greatest(now, r[o + 3] - least(permits, 2 * r[o + 1]) * r[o + 2]); -- a debt too
          ELSIF r[o] >= 16 THEN
            IF r[o + 3] > now THEN -- a full bucket has nothing to take back, and stays as long full
              r[o + 3] := greatest(now, r[o + 3] - least(permits, 2 * r[o + 1]) * ${table}_warm_cost(r, o, now));
            END IF;
          ELSE
            r[o + 4] := greatest(0, r[o + 4] - permits);
          END IF;
        END LOOP;
      ELSIF op = 'charge' THEN
        IF permits > 0 THEN
          FOR i IN 1 .. n LOOP -- LimiterMachine's CHARGE: each limit on its own, as far as its debt's bound
            o := 6 * (i - 1) + 1;
            charged := least(permits, ${table}_debt_room(r, o, now));
            IF charged > 0 THEN -- Algorithm.consume; a warming bucket charged nothing stays as long full
              IF r[o] <= 3 THEN
                r[o + 3] := greatest(r[o + 3], now) + charged * r[o + 2];
              ELSIF r[o] >= 16 THEN
                r[o + 3] := greatest(r[o + 3], now) + charged * ${table}_warm_cost(r, o, now);
              ELSE
                r[o + 4] := r[o + 4] + charged;
              END IF;
            END IF;
          END LOOP;
        END IF;
      ELSIF op = 'topup' THEN
        any_quota := false;
        FOR i IN 1 .. n LOOP
          o := 6 * (i - 1) + 1;
          IF r[o] = 6 THEN
            r[o + 5] := least(r[o + 5] + permits, maxv); -- CalendarQuota.topUp
            any_quota := true;
          END IF;
        END LOOP;
        IF NOT any_quota THEN
          err := 'TALLY_NO_QUOTA';
          RETURN;
        END IF;
      ELSIF op <> 'reconfigure' THEN
        err := 'TALLY_BAD_STATE unknown operation ' || op;
        RETURN;
      END IF;

      remaining := maxv;
      lim := 0;
      deciding := 0;
      reset_after := 0;
      kept := 0;
      each := '{}';
      FOR i IN 1 .. n LOOP
        o := 6 * (i - 1) + 1;
        rem := ${table}_remaining(r, o, now);
        IF i = 1 OR rem < remaining THEN -- the first limit always sets it
          remaining := rem;
          lim := ${table}_limit_of(r, o);
          deciding := i - 1;
        END IF;
        reset_after := greatest(reset_after, ${table}_reset_after(r, o, now));
        kept := greatest(kept, ${table}_keep_after(r, o, now));
        IF n > 1 THEN
          each := each || ARRAY[rem, ${table}_limit_of(r, o), ${table}_reset_after(r, o, now)];
        END IF;
      END LOOP;
      decision := ARRAY[CASE WHEN allowed THEN 1 ELSE 0 END, remaining, lim, retry, reset_after, deciding]::bigint[]
          || each::bigint[];
      IF mismatch > 0 THEN
        decision := decision || ARRAY[mismatch, sver]::bigint[];
      END IF;
      IF kept = 0 AND (NOT own OR op = 'reconfigure') THEN
        -- LimiterMachine.usedUpFor: full, but not the caller's limits, so kept for as long as a
        -- used-up state of them would be
        old := r;
        FOR i IN 1 .. n LOOP
          o := 6 * (i - 1) + 1;
          rem := ${table}_remaining(old, o, now);
          IF rem > 0 THEN -- Algorithm.consume
            IF old[o] <= 3 THEN
              old[o + 3] := greatest(old[o + 3], now) + rem * old[o + 2];
            ELSIF old[o] >= 16 THEN
              old[o + 3] := greatest(old[o + 3], now) + rem * ${table}_warm_cost(old, o, now);
            ELSE
              old[o + 4] := old[o + 4] + rem;
            END IF;
          END IF;
          kept := greatest(kept, ${table}_keep_after(old, o, now));
        END LOOP;
      END IF;
      IF kept = 0 THEN
        new_rec := NULL; -- full again: no state is the same as this state
      ELSE
        FOR o IN 1 .. cardinality(r) BY 6 LOOP
          r[o] := r[o] + 256 * wver; -- the limits' version, back in every tag (LimiterRecord)
        END LOOP;
        new_rec := r::bigint[];
        new_exp := least(now + kept, maxv)::bigint;
      END IF;
    END IF;

    -- Full again: a tombstone keeps the decision instant ('{}', expired at once, so the name is
    -- free for a counter), except for a peek that found nothing, which writes nothing.
    IF new_rec IS NULL THEN
      IF NOT existed AND op = 'peek' THEN
        d := decision;
      RETURN;
      END IF;
      new_rec := '{}';
      new_exp := now::bigint;
    END IF;
    -- The write: nothing if the row already says so (a denial, a peek).
    IF existed THEN
      IF cur.counter OR cur.rec IS DISTINCT FROM new_rec OR cur.exp IS DISTINCT FROM new_exp
          OR cur.at IS DISTINCT FROM now::bigint THEN
        UPDATE ${table} t SET rec = new_rec, ver = 1, at = now::bigint, exp = new_exp, ival = NULL, fval = NULL
        WHERE t.key = k;
      END IF;
      d := decision;
      RETURN;
    END IF;
    INSERT INTO ${table} (key, rec, ver, at, exp) VALUES (k, new_rec, 1, now::bigint, new_exp)
    ON CONFLICT (key) DO NOTHING;
    GET DIAGNOSTICS inserted = ROW_COUNT;
    IF inserted = 1 THEN
      d := decision;
      RETURN;
    END IF;
    -- Another caller created the row after our read found none: decide again, on its row.
  END LOOP;
  err := 'TALLY_BAD_STATE the row of ' || k || ' kept appearing and disappearing';
END
$$;

-- One call alone: the step, its refusal raised.
CREATE OR REPLACE FUNCTION ${table}_limit(k text, op text, permits bigint, clock bigint, mine bigint[],
    zones bigint[])
RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE
  s record;
BEGIN
  s := ${table}_limit_step(k, op, permits, clock, mine, zones);
  IF s.err IS NOT NULL THEN
    RAISE EXCEPTION '%', s.err;
  END IF;
  RETURN s.d;
END
$$;

-- Several calls in one statement (and one transaction), in the order given, each answered by a
-- row of its own in that order: its d, or its err, exactly as limit_step answers one call. The
-- caller sends the calls sorted by key, so that every batch takes its row locks in one global
-- order and no two batches can wait on each other in a cycle; calls on one key keep their order
-- and are decided one after the other. Call j's limits are mine[mine_at[j] : mine_at[j + 1] - 1]
-- and its boundaries zones[zones_at[j] : zones_at[j + 1] - 1] (none: NULL, all-UTC); clocks[j]
-- is NULL for the database's clock.
CREATE OR REPLACE FUNCTION ${table}_limit_batch(keys text[], ops text[], permits bigint[], clocks bigint[],
    mine bigint[], mine_at int[], zones bigint[], zones_at int[])
RETURNS TABLE (d bigint[], err text) LANGUAGE plpgsql AS $$
DECLARE
  s record;
BEGIN
  FOR j IN 1 .. coalesce(cardinality(keys), 0) LOOP
    s := ${table}_limit_step(keys[j], ops[j], permits[j], clocks[j],
        mine[mine_at[j] : mine_at[j + 1] - 1],
        CASE WHEN zones_at[j] = zones_at[j + 1] THEN NULL ELSE zones[zones_at[j] : zones_at[j + 1] - 1] END);
    d := s.d;
    err := s.err;
    RETURN NEXT;
  END LOOP;
END
$$;

-- Several limiters decided as one (Store.limitAll): permits from every key, or from none. The
-- caller sends the keys sorted (each once), so that joint decisions and batches lock their rows in
-- one global order. Call j's limits and boundaries are sliced as in limit_batch. Every key is
-- decided at one instant, the caller's clock or clock_timestamp() read once (each no earlier than
-- its own row's last decision). The steps run in a subtransaction that is kept only if every one
-- allowed; otherwise it is rolled back, and each key that would have allowed is answered as an
-- acquisition of 0 permits (its state, unchanged) in a second subtransaction, rolled back too.
-- A step's refusal is raised as TALLY_AT <j> <its TALLY_ code>: the statement fails and nothing
-- is written. One row per key, in the order given.
CREATE OR REPLACE FUNCTION ${table}_limit_all(keys text[], permits bigint, clock bigint, mine bigint[],
    mine_at int[], zones bigint[], zones_at int[])
RETURNS TABLE (d bigint[]) LANGUAGE plpgsql AS $$
DECLARE
  n int := coalesce(cardinality(keys), 0);
  at bigint := coalesce(clock, round(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint);
  decisions text[] := array_fill(NULL::text, ARRAY[n]); -- each a bigint[] as text: they differ in length
  all_allowed boolean := true;
  s record;
BEGIN
  -- The rows that exist, locked in the caller's order for the whole transaction, so that the
  -- answers of a refused decision describe the state it was refused on.
  FOR j IN 1 .. n LOOP
    PERFORM 1 FROM ${table} t WHERE t.key = keys[j] FOR UPDATE;
  END LOOP;
  BEGIN
    FOR j IN 1 .. n LOOP
      s := ${table}_limit_step(keys[j], 'acquire', permits, at,
          mine[mine_at[j] : mine_at[j + 1] - 1],
          CASE WHEN zones_at[j] = zones_at[j + 1] THEN NULL ELSE zones[zones_at[j] : zones_at[j + 1] - 1] END);
      IF s.err IS NOT NULL THEN
        RAISE EXCEPTION 'TALLY_AT % %', j, s.err;
      END IF;
      decisions[j] := s.d::text;
      all_allowed := all_allowed AND s.d[1] = 1;
    END LOOP;
    IF NOT all_allowed THEN
      RAISE EXCEPTION 'refused' USING ERRCODE = 'TL001'; -- undoes every step's write
    END IF;
  EXCEPTION WHEN SQLSTATE 'TL001' THEN
    NULL;
  END;
  IF NOT all_allowed THEN
    BEGIN
      FOR j IN 1 .. n LOOP
        IF (decisions[j]::bigint[])[1] = 1 THEN
          s := ${table}_limit_step(keys[j], 'acquire', 0, at,
              mine[mine_at[j] : mine_at[j + 1] - 1],
              CASE WHEN zones_at[j] = zones_at[j + 1] THEN NULL ELSE zones[zones_at[j] : zones_at[j + 1] - 1] END);
          IF s.err IS NOT NULL THEN
            RAISE EXCEPTION 'TALLY_AT % %', j, s.err;
          END IF;
          decisions[j] := s.d::text;
        END IF;
      END LOOP;
      RAISE EXCEPTION 'reported' USING ERRCODE = 'TL001';
    EXCEPTION WHEN SQLSTATE 'TL001' THEN
      NULL;
    END;
  END IF;
  FOR j IN 1 .. n LOOP
    d := decisions[j]::bigint[];
    RETURN NEXT;
  END LOOP;
END
$$;
