//! The store's schema in PostgreSQL's words, one migration per version, the same tables and
//! columns as [`super::sqlite_schema`] (a migration is added to both): row ids are identity
//! columns (`BIGINT GENERATED ALWAYS AS IDENTITY`, so concurrent writers never collide),
//! integers 64-bit (`BIGINT`), reals `DOUBLE PRECISION`.

/// The migrations, oldest first.
pub const MIGRATIONS: [&str; 2] = [
    // 1: runs, their entries, each entry's figures, each figure's samples.
    "CREATE TABLE runs (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        label TEXT NOT NULL,
        commit_hash TEXT NOT NULL,
        started_unix DOUBLE PRECISION NOT NULL,
        finished_unix DOUBLE PRECISION NOT NULL,
        linklab_version TEXT NOT NULL,
        qemu_version TEXT NOT NULL,
        tools TEXT NOT NULL,
        host_load_start DOUBLE PRECISION NOT NULL,
        host_load_end DOUBLE PRECISION NOT NULL,
        suite TEXT NOT NULL,
        repeat BIGINT NOT NULL
    );
    CREATE TABLE entries (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        run_id BIGINT NOT NULL REFERENCES runs(id),
        name TEXT NOT NULL,
        kind TEXT NOT NULL,
        board TEXT NOT NULL,
        elf TEXT,
        elf_sha256 TEXT,
        profile TEXT,
        failed TEXT
    );
    CREATE TABLE figures (
        id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        entry_id BIGINT NOT NULL REFERENCES entries(id),
        name TEXT NOT NULL,
        unit TEXT NOT NULL,
        better TEXT NOT NULL CHECK (better IN ('lower', 'higher')),
        rule TEXT NOT NULL CHECK (rule IN ('exact', 'count', 'rate'))
    );
    CREATE TABLE samples (
        figure_id BIGINT NOT NULL REFERENCES figures(id),
        seq BIGINT NOT NULL,
        value DOUBLE PRECISION NOT NULL,
        PRIMARY KEY (figure_id, seq)
    );",
    // 2: finding a run by its label, and a run's figures, without a scan.
    "CREATE INDEX runs_by_label ON runs(label);
    CREATE INDEX entries_by_run ON entries(run_id);
    CREATE INDEX figures_by_entry ON figures(entry_id);",
];
