/**
 * Schema of the SQLite state database (`<city>/.gc/state.db`) as an ordered list of
 * migrations, plus the marker that tells a gc database from a foreign one. Applied by
 * sqlite-store.ts inside one write transaction; each applied step is a row of
 * `gc_schema_version`. Append new migrations; never edit a shipped one.
 */

/** Value of `gc_meta.application` in every gc state database. */
export const APPLICATION_ID = "gc-state";

/** One schema step. `version` is 1-based and dense. */
export interface Migration {
  readonly version: number;
  readonly description: string;
  readonly sql: string;
}

/** Bootstrap tables, created before any migration in an empty database. */
export const BOOTSTRAP_SQL = `
CREATE TABLE gc_schema_version (
  version     INTEGER PRIMARY KEY,
  applied_at  INTEGER NOT NULL,
  description TEXT    NOT NULL
);
CREATE TABLE gc_meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;
`;

/** Every migration, oldest first. */
export const MIGRATIONS: readonly Migration[] = Object.freeze([
  {
    version: 1,
    description: "sessions, history, events, waits, nudges, locks",
    sql: `
CREATE TABLE sessions (
  actor   TEXT    NOT NULL,
  name    TEXT    NOT NULL,
  version INTEGER NOT NULL,
  record  TEXT    NOT NULL,
  PRIMARY KEY (actor, name)
) WITHOUT ROWID;
CREATE TABLE history (
  actor   TEXT    NOT NULL,
  session TEXT    NOT NULL,
  idx     INTEGER NOT NULL,
  entry   TEXT    NOT NULL,
  PRIMARY KEY (actor, session, idx)
) WITHOUT ROWID;
CREATE TABLE events (
  seq     INTEGER PRIMARY KEY AUTOINCREMENT,
  actor   TEXT    NOT NULL,
  session TEXT,
  type    TEXT    NOT NULL,
  at      INTEGER NOT NULL,
  payload TEXT    NOT NULL
);
CREATE INDEX events_by_session ON events (actor, session, seq);
CREATE TABLE waits (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  actor      TEXT    NOT NULL,
  session    TEXT    NOT NULL,
  state      TEXT    NOT NULL,
  expires_at INTEGER,
  wait       TEXT    NOT NULL
);
CREATE INDEX waits_by_state ON waits (actor, state, expires_at);
CREATE TABLE nudges (
  id         INTEGER PRIMARY KEY AUTOINCREMENT,
  actor      TEXT    NOT NULL,
  session    TEXT    NOT NULL,
  state      TEXT    NOT NULL,
  nudge      TEXT    NOT NULL
);
CREATE INDEX nudges_by_session ON nudges (actor, session, state);
CREATE TABLE locks (
  actor  TEXT NOT NULL,
  name   TEXT NOT NULL,
  holder TEXT NOT NULL,
  PRIMARY KEY (actor, name)
) WITHOUT ROWID;
`,
  },
  {
    version: 2,
    description: "index events by type for filtered tails",
    sql: "CREATE INDEX events_by_type ON events (actor, type, seq);",
  },
  {
    version: 3,
    description: "index events by seq and by time, for tails and retention without a scan",
    // Without them a tail past a cursor and the retention after every pass read and sort
    // the whole log (tens of ms per pass at 50,000 events).
    sql: `
CREATE INDEX events_by_seq ON events (actor, seq);
CREATE INDEX events_by_at ON events (actor, at);
`,
  },
]);

/** The schema version this build writes. */
export const SCHEMA_VERSION = MIGRATIONS.length;
