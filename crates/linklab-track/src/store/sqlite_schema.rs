//! The store's schema in SQLite's words, one migration per version: version N is reached by
//! running `MIGRATIONS[N-1]`. Row ids are `INTEGER PRIMARY KEY` (SQLite's rowid), numbers
//! `INTEGER` and `REAL`. PostgreSQL's text of the same schema is [`super::postgres_schema`]:
//! a migration is added to both.

/// The migrations, oldest first.
pub const MIGRATIONS: [&str; 2] = [
    // 1: runs, their entries, each entry's figures, each figure's samples.
    "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        label TEXT NOT NULL,
        commit_hash TEXT NOT NULL,
        started_unix REAL NOT NULL,
        finished_unix REAL NOT NULL,
        linklab_version TEXT NOT NULL,
        qemu_version TEXT NOT NULL,
        tools TEXT NOT NULL,
        host_load_start REAL NOT NULL,
        host_load_end REAL NOT NULL,
        suite TEXT NOT NULL,
        repeat INTEGER NOT NULL
    );
    CREATE TABLE entries (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        board TEXT NOT NULL,
        elf TEXT,
        elf_sha256 TEXT,
        profile TEXT,
        failed TEXT
    );
    CREATE TABLE figures (
        id INTEGER PRIMARY KEY,
        entry_id INTEGER NOT NULL REFERENCES entries(id),
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        better TEXT NOT NULL CHECK (better IN ('lower', 'higher')),
        rule TEXT NOT NULL CHECK (rule IN ('exact', 'count', 'rate'))
    );
    CREATE TABLE samples (
        figure_id INTEGER NOT NULL REFERENCES figures(id),
        seq INTEGER NOT NULL,
        value REAL NOT NULL,
        PRIMARY KEY (figure_id, seq)
    );",
    // 2: finding a run by its label, and a run's figures, without a scan.
    "CREATE INDEX runs_by_label ON runs(label);
    CREATE INDEX entries_by_run ON entries(run_id);
    CREATE INDEX figures_by_entry ON figures(entry_id);",
];
