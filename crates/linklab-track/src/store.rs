//! Where runs are kept: the [`Store`] trait every backend implements with the same schema
//! (docs/track.md), and [`open`], which picks the backend from `--db`: an SQLite file
//! ([`super::sqlite`], the default) or a PostgreSQL server's URL ([`super::postgres`], one
//! store for a farm's many writers).

use anyhow::bail;

use super::figure::Run;

/// `--db`: the store.
#[derive(clap::Args, Debug, Clone)]
pub struct DbArg {
    /// The store: an SQLite file, or a PostgreSQL URL (postgres://USER@HOST/DB); created
    /// with its schema on first use.
    #[arg(long, value_name = "FILE|URL", default_value = "linklab-track.sqlite")]
    pub db: String,
}

impl DbArg {
    /// The store's name as printed: a URL's password hidden.
    pub fn shown(&self) -> String {
        super::postgres::redacted(&self.db)
    }
}

/// A stored run's head: enough to find it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunHead {
    /// The run's id (runs are numbered in the order they were stored).
    pub id: i64,
    /// Its label.
    pub label: String,
    /// The commit of the tree measured.
    pub commit: String,
    /// When it started, Unix seconds.
    pub started_unix: f64,
}

/// A store of runs.
pub trait Store {
    /// Stores `run` whole, in one transaction; its id.
    fn insert_run(&mut self, run: &Run) -> anyhow::Result<i64>;
    /// Every run's head, oldest first.
    fn runs(&self) -> anyhow::Result<Vec<RunHead>>;
    /// The run with `id`, whole.
    fn load(&self, id: i64) -> anyhow::Result<Run>;
}

/// Opens the store `db` names (created on first use).
pub fn open(db: &str) -> anyhow::Result<Box<dyn Store>> {
    if super::postgres::is_url(db) {
        return Ok(Box::new(super::postgres::Postgres::open(db)?));
    }
    Ok(Box::new(super::sqlite::Sqlite::open(
        std::path::Path::new(db),
    )?))
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
