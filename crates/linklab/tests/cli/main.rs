//! The CLI's tests that need neither root nor a peer beyond loopback: the command line's
//! voice (`cli`), `linklab bench` in the simulator, `linklab iperf` against stock iperf3 on
//! loopback (`iperf_cli`, `iperf_options`, iperf3's own release checklist), and the
//! simulator's prediction tables in `docs/sim.md`.
//!
//! One module per area (a former test file of its own), so a test keeps its name:
//! `cargo nextest run -E 'binary(cli) & test(/^MODULE::/)'` runs one area.

mod bench;
mod cli;
mod iperf_checklist;
mod iperf_cli;
mod iperf_options;
mod predict_tables;
