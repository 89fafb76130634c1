//! A memory for every figure of a build: `linklab track`'s library. A suite ([`suite`]) names
//! what to measure — firmware images booted in QEMU and counted on their own ISA, live devices
//! probed, the simulator — and [`measure::measure`] measures it into a [`run::Run`] (every
//! figure with its samples, and the run's stamp), which a [`store`] keeps (an SQLite file, or a
//! PostgreSQL server for a farm's many writers). [`compare`] judges one run against another
//! figure by figure (worse, better or unchanged beyond each figure's noise); [`walk`] measures
//! each commit of a range in a worktree of its own and names the commit where each figure
//! stepped; [`history`] draws every figure's history as a page, [`readme`] a run as a README's
//! table; [`import`] stores a run measured elsewhere. The `linklab track` command is a thin
//! front end over these; docs/track.md says what each verb does.
//!
//! A tool of your own can keep its figures in a track store — beside the runs `linklab track`
//! stores there — and judge the last two runs by the same rules:
//!
//! ```no_run
//! use linklab_results::track::{Better, Figure, Rule, TrackEntry, TrackRun};
//! use linklab_track::compare::{compare, worse, Thresholds};
//! use linklab_track::{import, store};
//!
//! fn main() -> anyhow::Result<()> {
//!     let mut db = store::open("figures.sqlite")?;
//!     let entry = TrackEntry {
//!         name: "my-board".into(),
//!         kind: "image".into(),
//!         board: "my-board".into(),
//!         failed: None,
//!         figures: vec![Figure::new("flash_bytes", "B", Better::Lower, Rule::Exact, vec![35_984.0])],
//!     };
//!     let run = import::from_document(TrackRun::new("v1.3", "", vec![entry]), "my tool");
//!     db.insert_run(&run)?;
//!     let runs = store::last(db.as_ref(), 2)?;
//!     let rows = compare(&runs[0], &runs[1], Thresholds::default());
//!     for name in worse(&rows) {
//!         eprintln!("worse: {name}");
//!     }
//!     Ok(())
//! }
//! ```

pub mod compare;
mod device;
pub mod history;
pub mod image;
pub mod import;
pub mod instruments;
pub mod measure;
pub mod readme;
pub mod run;
mod sim;
pub mod stamp;
pub mod store;
pub mod suite;
pub mod tables;
pub mod walk;
