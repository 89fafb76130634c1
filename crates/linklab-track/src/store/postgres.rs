//! The PostgreSQL store (`--db postgres://...`): the SQLite store's tables on a server, so a
//! farm's many machines write to one store. The schema is [`super::postgres_schema`] (the
//! same tables and columns in PostgreSQL's words); its version is the one row of
//! `linklab_track_schema` (PostgreSQL has no `user_version`), moved forward in one
//! transaction under an advisory lock, so writers opening a fresh database at once create it
//! once. Each run is written in one transaction; ids come from identity columns, so
//! concurrent writers never collide. A server that cannot be reached, or a database with a
//! newer schema, is one line naming the URL (its password hidden).

use std::cell::RefCell;
use std::time::Duration;

use anyhow::{anyhow, Context};
use postgres::{Client, Config, NoTls, Transaction};

use linklab_results::track::{Better, Figure, Rule};

use super::backend::{pause_before_commit, RunHead, Store};
use super::postgres_schema::MIGRATIONS;
use crate::run::{EntryResult, Run};
use crate::stamp::Stamp;

/// The table holding the schema's version (one row).
const VERSION_TABLE: &str = "linklab_track_schema";

/// The advisory lock every opener takes while it reads and moves the schema's version (an
/// arbitrary key, "linklab" in ASCII).
const SCHEMA_LOCK: i64 = 0x6c696e6b6c6162;

/// How long a connection attempt may take when the URL does not say (`connect_timeout`).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// True for the `--db` values this backend takes.
pub fn is_url(db: &str) -> bool {
    db.starts_with("postgres://") || db.starts_with("postgresql://")
}

/// `url` with its password, if any (`user:PASSWORD@` or `password=`), shown as `***` (the
/// URL is printed in errors and messages).
pub fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => authority.to_string(),
        },
        None => authority.to_string(),
    };
    let tail = match tail.split_once("password=") {
        Some((before, after)) => {
            let rest = after.find('&').map_or("", |i| &after[i..]);
            format!("{before}password=***{rest}")
        }
        None => tail.to_string(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// A PostgreSQL error as one line (a server's error can carry DETAIL and HINT lines).
fn one_line(e: &postgres::Error) -> String {
    let mut text = e.to_string();
    if let Some(db) = e.as_db_error() {
        text = format!("{}: {}", db.severity(), db.message());
        if let Some(d) = db.detail() {
            text += &format!(" ({d})");
        }
    } else {
        // The cause (`Connection refused`) is the source's, not the error's own text.
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            text += &format!(": {s}");
            source = s.source();
        }
    }
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

/// `e` as one line naming the store `name` and what was being done.
fn fail(name: &str, what: &str, e: postgres::Error) -> anyhow::Error {
    anyhow!("--db {name}: {what} ({})", one_line(&e))
}

/// An open PostgreSQL store. The trait reads through `&self`; the client needs `&mut`.
pub struct Postgres {
    client: RefCell<Client>,
    name: String,
}

impl Postgres {
    /// Connects to `url` and brings its database to the latest schema.
    pub fn open(url: &str) -> anyhow::Result<Postgres> {
        let name = redacted(url);
        let mut config: Config = url.parse().map_err(|e: postgres::Error| {
            anyhow!("--db {name}: not a PostgreSQL URL ({})", one_line(&e))
        })?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        let client = config
            .connect(NoTls)
            .map_err(|e| anyhow!("--db {name}: cannot connect ({})", one_line(&e)))?;
        let store = Postgres {
            client: RefCell::new(client),
            name,
        };
        store.migrate()?;
        Ok(store)
    }

    /// `e` as one line naming the store and what was being done.
    fn fail(&self, what: &str, e: postgres::Error) -> anyhow::Error {
        fail(&self.name, what, e)
    }

    /// Creates the version table and runs the migrations the database has not had, in one
    /// transaction holding [`SCHEMA_LOCK`]: a second opener waits, then finds it done. A
    /// database already at the latest version is left alone without the lock (so a role
    /// that may only read can open it).
    fn migrate(&self) -> anyhow::Result<()> {
        let latest = MIGRATIONS.len() as i64;
        let mut client = self.client.borrow_mut();
        let now = client.query_opt(&format!("SELECT version FROM {VERSION_TABLE}"), &[]);
        if matches!(now, Ok(Some(ref r)) if r.get::<_, i64>(0) == latest) {
            return Ok(());
        }
        let mut tx = client
            .transaction()
            .map_err(|e| self.fail("cannot begin", e))?;
        let setup = format!(
            "SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
             CREATE TABLE IF NOT EXISTS {VERSION_TABLE} (version BIGINT NOT NULL);"
        );
        tx.batch_execute(&setup)
            .map_err(|e| self.fail("cannot read the schema's version", e))?;
        let row = tx
            .query_opt(&format!("SELECT version FROM {VERSION_TABLE}"), &[])
            .map_err(|e| self.fail("cannot read the schema's version", e))?;
        let v: i64 = row.map_or(0, |r| r.get(0));
        if v > latest {
            return Err(anyhow!(
                "--db {}: schema version {v} is newer than this linklab's {latest} (a newer linklab wrote it); left as it is",
                self.name
            ));
        }
        if v == latest {
            return tx.commit().map_err(|e| self.fail("cannot commit", e));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v as usize) {
            tx.batch_execute(sql)
                .map_err(|e| self.fail(&format!("migration to version {}", i + 1), e))?;
        }
        let set =
            format!("DELETE FROM {VERSION_TABLE}; INSERT INTO {VERSION_TABLE} VALUES ({latest})");
        tx.batch_execute(&set)
            .map_err(|e| self.fail("cannot record the schema's version", e))?;
        tx.commit().map_err(|e| self.fail("cannot commit", e))
    }
}

impl Store for Postgres {
    fn insert_run(&mut self, run: &Run) -> anyhow::Result<i64> {
        let mut client = self.client.borrow_mut();
        let mut tx = client
            .transaction()
            .map_err(|e| self.fail("cannot begin", e))?;
        let id = insert(&mut tx, run).map_err(|e| self.fail("cannot store the run", e))?;
        pause_before_commit();
        tx.commit()
            .map_err(|e| self.fail("cannot store the run", e))?;
        Ok(id)
    }

    fn runs(&self) -> anyhow::Result<Vec<RunHead>> {
        let rows = self
            .client
            .borrow_mut()
            .query(
                "SELECT id, label, commit_hash, started_unix FROM runs ORDER BY id",
                &[],
            )
            .map_err(|e| self.fail("cannot list the runs", e))?;
        Ok(rows
            .iter()
            .map(|r| RunHead {
                id: r.get(0),
                label: r.get(1),
                commit: r.get(2),
                started_unix: r.get(3),
            })
            .collect())
    }

    fn load(&self, id: i64) -> anyhow::Result<Run> {
        load(&mut self.client.borrow_mut(), id, &self.name)
    }
}

/// Writes `run`'s rows in `tx`; the run's id. A figure's samples go in one statement.
fn insert(tx: &mut Transaction<'_>, run: &Run) -> Result<i64, postgres::Error> {
    let s = &run.stamp;
    let run_id: i64 = tx
        .query_one(
            "INSERT INTO runs (label, commit_hash, started_unix, finished_unix, linklab_version,
                 qemu_version, tools, host_load_start, host_load_end, suite, repeat)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) RETURNING id",
            &[
                &s.label,
                &s.commit,
                &s.started_unix,
                &s.finished_unix,
                &s.linklab_version,
                &s.qemu_version,
                &s.tools,
                &s.host_load_start,
                &s.host_load_end,
                &s.suite,
                &i64::from(s.repeat),
            ],
        )?
        .get(0);
    let entry = tx.prepare(
        "INSERT INTO entries (run_id, name, kind, board, elf, elf_sha256, profile, failed)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id",
    )?;
    let figure = tx.prepare(
        "INSERT INTO figures (entry_id, name, unit, better, rule)
         VALUES ($1, $2, $3, $4, $5) RETURNING id",
    )?;
    let samples = tx.prepare(
        "INSERT INTO samples (figure_id, seq, value)
         SELECT $1, s.n - 1, s.value FROM unnest($2::float8[]) WITH ORDINALITY AS s(value, n)",
    )?;
    for e in &run.entries {
        let entry_id: i64 = tx
            .query_one(
                &entry,
                &[
                    &run_id,
                    &e.name,
                    &e.kind,
                    &e.board,
                    &e.elf,
                    &e.elf_sha256,
                    &e.profile,
                    &e.failed,
                ],
            )?
            .get(0);
        for f in &e.figures {
            let (better, rule) = (f.better.word(), f.rule.word());
            let figure_id: i64 = tx
                .query_one(&figure, &[&entry_id, &f.name, &f.unit, &better, &rule])?
                .get(0);
            tx.execute(&samples, &[&figure_id, &f.samples])?;
        }
    }
    Ok(run_id)
}

/// The run `id`, whole, in three queries (its stamp, its entries, their figures with their
/// samples).
fn load(client: &mut Client, id: i64, name: &str) -> anyhow::Result<Run> {
    let fail = |e| fail(name, "cannot load a run", e);
    let r = client
        .query_opt(
            "SELECT label, commit_hash, started_unix, finished_unix, linklab_version,
                    qemu_version, tools, host_load_start, host_load_end, suite, repeat
             FROM runs WHERE id = $1",
            &[&id],
        )
        .map_err(fail)?
        .with_context(|| format!("--db {name}: no run {id}"))?;
    let stamp = Stamp {
        label: r.get(0),
        commit: r.get(1),
        started_unix: r.get(2),
        finished_unix: r.get(3),
        linklab_version: r.get(4),
        qemu_version: r.get(5),
        tools: r.get(6),
        host_load_start: r.get(7),
        host_load_end: r.get(8),
        suite: r.get(9),
        repeat: u32::try_from(r.get::<_, i64>(10)).unwrap_or(0),
    };
    let entries = client
        .query(
            "SELECT id, name, kind, board, elf, elf_sha256, profile, failed
             FROM entries WHERE run_id = $1 ORDER BY id",
            &[&id],
        )
        .map_err(fail)?;
    let figures = client
        .query(
            "SELECT f.entry_id, f.name, f.unit, f.better, f.rule,
                    coalesce(array_agg(s.value ORDER BY s.seq) FILTER (WHERE s.seq IS NOT NULL),
                             '{}'::float8[])
             FROM figures f JOIN entries e ON e.id = f.entry_id
             LEFT JOIN samples s ON s.figure_id = f.id
             WHERE e.run_id = $1 GROUP BY f.id ORDER BY f.id",
            &[&id],
        )
        .map_err(fail)?;
    let mut out = Vec::new();
    for r in &entries {
        let mut e = EntryResult::new(r.get(1), r.get(2), r.get(3));
        e.elf = r.get(4);
        e.elf_sha256 = r.get(5);
        e.profile = r.get(6);
        e.failed = r.get(7);
        out.push((r.get::<_, i64>(0), e));
    }
    for f in &figures {
        let entry_id: i64 = f.get(0);
        let better = Better::parse(f.get(3)).context("a figure's better is not lower/higher")?;
        let rule = Rule::parse(f.get(4)).context("a figure's rule is unknown")?;
        let figure = Figure::new(f.get(1), f.get(2), better, rule, f.get(5));
        if let Some((_, e)) = out.iter_mut().find(|(id, _)| *id == entry_id) {
            e.figures.push(figure);
        }
    }
    Ok(Run {
        id: Some(id),
        stamp,
        entries: out.into_iter().map(|(_, e)| e).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_is_hidden() {
        assert_eq!(
            redacted("postgres://farm:s3cret@db.lab:5432/track?sslmode=disable"),
            "postgres://farm:***@db.lab:5432/track?sslmode=disable"
        );
        assert_eq!(
            redacted("postgresql://farm@db/track"),
            "postgresql://farm@db/track"
        );
        assert_eq!(redacted("postgres://db/track"), "postgres://db/track");
        assert_eq!(
            redacted("postgres://db/track?password=s3cret&connect_timeout=5"),
            "postgres://db/track?password=***&connect_timeout=5"
        );
        assert_eq!(redacted("track.sqlite"), "track.sqlite");
    }
}
