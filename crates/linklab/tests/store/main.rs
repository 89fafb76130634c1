//! The CLI's tests of `linklab track`'s store: suites, compare, report, table, walk over the
//! repository's history, and the store on SQLite and on the tests' own PostgreSQL server.
//!
//! One module per area (a former test file of its own), so a test keeps its name:
//! `cargo nextest run -E 'binary(store) & test(/^MODULE::/)'` runs one area.

mod track_compare;
mod track_postgres;
mod track_report;
mod track_store;
mod track_suite;
mod track_table;
mod track_walk;
