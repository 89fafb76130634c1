//! Where runs are kept: the [`Store`] trait every backend implements with the same tables
//! (docs/track.md), each backend with its schema in its own SQL dialect
//! ([`sqlite_schema`], [`postgres_schema`]), and [`open`], which picks the backend from the
//! store's name: an SQLite file ([`sqlite`], the default) or a PostgreSQL server's URL
//! ([`postgres`], one store for a farm's many writers).

mod backend;
pub mod postgres;
pub mod postgres_schema;
pub mod sqlite;
pub mod sqlite_schema;

use anyhow::bail;

pub use backend::{RunHead, Store};

use crate::run::Run;

/// The store an unnamed `--db` opens: an SQLite file in the current folder.
pub const DEFAULT_DB: &str = "linklab-track.sqlite";

/// Opens the store `db` names (created on first use): a PostgreSQL URL
/// (`postgres://USER@HOST/DB`), else an SQLite file.
pub fn open(db: &str) -> anyhow::Result<Box<dyn Store>> {
    if postgres::is_url(db) {
        return Ok(Box::new(postgres::Postgres::open(db)?));
    }
    Ok(Box::new(sqlite::Sqlite::open(std::path::Path::new(db))?))
}

/// The store's name as printed: a URL's password hidden.
pub fn shown(db: &str) -> String {
    postgres::redacted(db)
}

/// The latest run labelled `label`.
pub fn by_label(store: &dyn Store, label: &str) -> anyhow::Result<Run> {
    let heads = store.runs()?;
    match heads.iter().rev().find(|h| h.label == label) {
        Some(h) => store.load(h.id),
        None => bail!("no run labelled {label:?} in the store"),
    }
}

/// The last `n` runs, oldest first.
pub fn last(store: &dyn Store, n: usize) -> anyhow::Result<Vec<Run>> {
    let heads = store.runs()?;
    if heads.len() < n {
        bail!("--last {n}: the store holds {} run(s)", heads.len());
    }
    heads[heads.len() - n..]
        .iter()
        .map(|h| store.load(h.id))
        .collect()
}

/// Every run, oldest first.
pub fn all(store: &dyn Store) -> anyhow::Result<Vec<Run>> {
    store.runs()?.iter().map(|h| store.load(h.id)).collect()
}

#[cfg(test)]
mod tests {
    use super::{postgres_schema, sqlite_schema};

    /// Each table of a migration with its columns' names, in order.
    fn tables(sql: &str) -> Vec<(String, Vec<String>)> {
        let mut out = Vec::new();
        for statement in sql.split(';') {
            let Some(rest) = statement.trim().strip_prefix("CREATE TABLE ") else {
                continue;
            };
            let (name, body) = rest.split_once('(').unwrap();
            let columns = body
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("PRIMARY KEY") && *l != ")")
                .map(|l| l.split_whitespace().next().unwrap().to_string())
                .collect();
            out.push((name.trim().to_string(), columns));
        }
        out
    }

    #[test]
    fn both_dialects_make_the_same_tables_and_columns() {
        for (s, p) in sqlite_schema::MIGRATIONS
            .iter()
            .zip(postgres_schema::MIGRATIONS)
        {
            assert_eq!(tables(s), tables(p));
        }
        let first = tables(sqlite_schema::MIGRATIONS[0]);
        let names: Vec<&str> = first.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["runs", "entries", "figures", "samples"]);
        assert_eq!(first[3].1, ["figure_id", "seq", "value"]);
        // The indexes are written alike in both.
        assert_eq!(sqlite_schema::MIGRATIONS[1], postgres_schema::MIGRATIONS[1]);
    }

    #[test]
    fn postgresql_ids_are_identity_columns_and_numbers_64_bit() {
        let sql = postgres_schema::MIGRATIONS[0];
        assert_eq!(
            sql.matches("id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY")
                .count(),
            3
        );
        assert!(!sql.contains("INTEGER") && !sql.contains(" REAL"));
    }
}
