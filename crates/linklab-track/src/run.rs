//! What a run of a suite holds: its stamp, and per entry of the suite the figures measured
//! (linklab-results' [`Figure`]: each with every sample, its unit, which way is better and
//! the rule that compares it), or why the entry has none.

use linklab_results::track::Figure;

use super::stamp::Stamp;

/// One entry of the suite in one run: what was measured and its figures, or why not.
#[derive(Clone, Debug, PartialEq)]
pub struct EntryResult {
    /// The entry's name in the suite.
    pub name: String,
    /// `image`, `device` or `sim`.
    pub kind: String,
    /// The board (images), empty for the others.
    pub board: String,
    /// The ELF booted (images).
    pub elf: Option<String>,
    /// The ELF's SHA-256, in hex (images).
    pub elf_sha256: Option<String>,
    /// The build profile the ELF was built with (`release`, `minimal`, or `given` for an
    /// ELF the suite names).
    pub profile: Option<String>,
    /// Why the entry has no figures, if it failed.
    pub failed: Option<String>,
    /// The figures.
    pub figures: Vec<Figure>,
}

impl EntryResult {
    /// An entry of `kind` with nothing measured yet.
    pub fn new(name: &str, kind: &str, board: &str) -> EntryResult {
        EntryResult {
            name: name.into(),
            kind: kind.into(),
            board: board.into(),
            elf: None,
            elf_sha256: None,
            profile: None,
            failed: None,
            figures: Vec::new(),
        }
    }

    /// The figure called `name`.
    pub fn figure(&self, name: &str) -> Option<&Figure> {
        self.figures.iter().find(|f| f.name == name)
    }
}

/// One run of a suite: its stamp and its entries.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// The store's id of the run (None before it is stored).
    pub id: Option<i64>,
    /// Label, time, versions, host load.
    pub stamp: Stamp,
    /// Each entry of the suite.
    pub entries: Vec<EntryResult>,
}

impl Run {
    /// The entry called `name`.
    pub fn entry(&self, name: &str) -> Option<&EntryResult> {
        self.entries.iter().find(|e| e.name == name)
    }
}
