//! The SQLite store: one file, its schema ([`super::sqlite_schema`]) created on first use and
//! moved forward by numbered migrations (`PRAGMA user_version`), each run written in one transaction. A file
//! that is not SQLite, is corrupt or has a newer schema is refused with one line naming it,
//! and left as it was. Writers wait for each other (a busy timeout), so two runs writing at
//! once both land.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use rusqlite::{params, Connection, OpenFlags, TransactionBehavior};

use linklab_results::track::{Better, Figure, Rule};

use super::backend::{pause_before_commit, RunHead, Store};
use super::sqlite_schema::MIGRATIONS;
use crate::run::{EntryResult, Run};
use crate::stamp::Stamp;

/// What an SQLite file starts with.
const HEADER: &[u8; 16] = b"SQLite format 3\0";

/// An open SQLite store.
pub struct Sqlite {
    conn: Connection,
    path: PathBuf,
}

impl Sqlite {
    /// Opens (creates) the store at `path`, brought to the latest schema.
    pub fn open(path: &Path) -> anyhow::Result<Sqlite> {
        let name = path.display();
        if let Ok(bytes) = std::fs::read(path).map(|b| b.get(..16).map(<[u8]>::to_vec)) {
            match bytes {
                Some(h) if h == HEADER => {}
                None if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) => {}
                _ => bail!("--db {name}: not an SQLite database (left as it is)"),
            }
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags(path, flags)
            .with_context(|| format!("--db {name}: cannot open"))?;
        conn.busy_timeout(Duration::from_secs(120))?;
        let store = Sqlite {
            conn,
            path: path.to_path_buf(),
        };
        store.check()?;
        store.migrate()?;
        Ok(store)
    }

    /// One line for a corrupt file.
    fn check(&self) -> anyhow::Result<()> {
        let name = self.path.display();
        let verdict: Result<String, _> = self
            .conn
            .query_row("PRAGMA quick_check", [], |r| r.get::<_, String>(0));
        match verdict {
            Ok(v) if v == "ok" => Ok(()),
            Ok(v) => bail!("--db {name}: corrupt ({v}); left as it is"),
            Err(e) => bail!("--db {name}: corrupt or not an SQLite database ({e}); left as it is"),
        }
    }

    fn version(conn: &Connection) -> anyhow::Result<usize> {
        let v: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        Ok(v.max(0) as usize)
    }

    /// Runs the migrations the file has not had, in one transaction (another process may
    /// be migrating it too: the version is read again under the write lock).
    fn migrate(&self) -> anyhow::Result<()> {
        let name = self.path.display();
        let latest = MIGRATIONS.len();
        let newer = |v: usize| {
            anyhow::anyhow!(
                "--db {name}: schema version {v} is newer than this linklab's {latest} (a newer linklab wrote it); left as it is"
            )
        };
        let v = Self::version(&self.conn)?;
        if v > latest {
            return Err(newer(v));
        }
        if v == latest {
            return Ok(());
        }
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let v = Self::version(&tx)?;
        if v > latest {
            return Err(newer(v));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(v) {
            tx.execute_batch(sql)
                .with_context(|| format!("--db {name}: migration to version {}", i + 1))?;
        }
        tx.pragma_update(None, "user_version", latest as i64)?;
        tx.commit()?;
        Ok(())
    }
}

impl Store for Sqlite {
    fn insert_run(&mut self, run: &Run) -> anyhow::Result<i64> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let s = &run.stamp;
        tx.execute(
            "INSERT INTO runs (label, commit_hash, started_unix, finished_unix, linklab_version,
                 qemu_version, tools, host_load_start, host_load_end, suite, repeat)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                s.label,
                s.commit,
                s.started_unix,
                s.finished_unix,
                s.linklab_version,
                s.qemu_version,
                s.tools,
                s.host_load_start,
                s.host_load_end,
                s.suite,
                s.repeat
            ],
        )?;
        let run_id = tx.last_insert_rowid();
        for e in &run.entries {
            tx.execute(
                "INSERT INTO entries (run_id, name, kind, board, elf, elf_sha256, profile, failed)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![
                    run_id,
                    e.name,
                    e.kind,
                    e.board,
                    e.elf,
                    e.elf_sha256,
                    e.profile,
                    e.failed
                ],
            )?;
            let entry_id = tx.last_insert_rowid();
            for f in &e.figures {
                tx.execute(
                    "INSERT INTO figures (entry_id, name, unit, better, rule)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![entry_id, f.name, f.unit, f.better.word(), f.rule.word()],
                )?;
                let figure_id = tx.last_insert_rowid();
                for (seq, v) in f.samples.iter().enumerate() {
                    tx.execute(
                        "INSERT INTO samples (figure_id, seq, value) VALUES (?1, ?2, ?3)",
                        params![figure_id, seq as i64, v],
                    )?;
                }
            }
        }
        pause_before_commit();
        tx.commit()
            .with_context(|| format!("--db {}: cannot store the run", self.path.display()))?;
        Ok(run_id)
    }

    fn runs(&self) -> anyhow::Result<Vec<RunHead>> {
        let mut q = self
            .conn
            .prepare("SELECT id, label, commit_hash, started_unix FROM runs ORDER BY id")?;
        let rows = q.query_map([], |r| {
            Ok(RunHead {
                id: r.get(0)?,
                label: r.get(1)?,
                commit: r.get(2)?,
                started_unix: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    fn load(&self, id: i64) -> anyhow::Result<Run> {
        let stamp = self.conn.query_row(
            "SELECT label, commit_hash, started_unix, finished_unix, linklab_version,
                    qemu_version, tools, host_load_start, host_load_end, suite, repeat
             FROM runs WHERE id = ?1",
            [id],
            |r| {
                Ok(Stamp {
                    label: r.get(0)?,
                    commit: r.get(1)?,
                    started_unix: r.get(2)?,
                    finished_unix: r.get(3)?,
                    linklab_version: r.get(4)?,
                    qemu_version: r.get(5)?,
                    tools: r.get(6)?,
                    host_load_start: r.get(7)?,
                    host_load_end: r.get(8)?,
                    suite: r.get(9)?,
                    repeat: r.get(10)?,
                })
            },
        )?;
        Ok(Run {
            id: Some(id),
            stamp,
            entries: self.entries(id)?,
        })
    }
}

impl Sqlite {
    fn entries(&self, run_id: i64) -> anyhow::Result<Vec<EntryResult>> {
        let mut q = self.conn.prepare(
            "SELECT id, name, kind, board, elf, elf_sha256, profile, failed
             FROM entries WHERE run_id = ?1 ORDER BY id",
        )?;
        let rows = q.query_map([run_id], |r| {
            let mut e = EntryResult::new(
                &r.get::<_, String>(1)?,
                &r.get::<_, String>(2)?,
                &r.get::<_, String>(3)?,
            );
            e.elf = r.get(4)?;
            e.elf_sha256 = r.get(5)?;
            e.profile = r.get(6)?;
            e.failed = r.get(7)?;
            Ok((r.get::<_, i64>(0)?, e))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, mut e) = row?;
            e.figures = self.figures(id)?;
            out.push(e);
        }
        Ok(out)
    }

    fn figures(&self, entry_id: i64) -> anyhow::Result<Vec<Figure>> {
        let mut q = self.conn.prepare(
            "SELECT id, name, unit, better, rule FROM figures WHERE entry_id = ?1 ORDER BY id",
        )?;
        let rows = q.query_map([entry_id], |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })?;
        let mut samples = self
            .conn
            .prepare("SELECT value FROM samples WHERE figure_id = ?1 ORDER BY seq")?;
        let mut out = Vec::new();
        for row in rows {
            let (id, name, unit, better, rule) = row?;
            let values = samples
                .query_map([id], |r| r.get::<_, f64>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            let better = Better::parse(&better).context("a figure's better is not lower/higher")?;
            let rule = Rule::parse(&rule).context("a figure's rule is unknown")?;
            out.push(Figure::new(&name, &unit, better, rule, values));
        }
        Ok(out)
    }
}
