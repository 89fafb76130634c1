//! `--db`, the store every verb of `linklab track` reads or writes.

use linklab_track::store::DEFAULT_DB;

/// `--db`: the store.
#[derive(clap::Args, Debug, Clone)]
pub struct DbArg {
    /// The store: an SQLite file, or a PostgreSQL URL (postgres://USER@HOST/DB); created
    /// with its schema on first use.
    #[arg(long, value_name = "FILE|URL", default_value = DEFAULT_DB)]
    pub db: String,
}

impl DbArg {
    /// The store's name as printed: a URL's password hidden.
    pub fn shown(&self) -> String {
        linklab_track::store::shown(&self.db)
    }
}
