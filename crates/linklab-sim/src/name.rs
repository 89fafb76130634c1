//! The error of the `FromStr` impls for the simulator's named values (profiles, rates,
//! duplex modes): one line naming what was given and what is accepted.

use std::fmt;

/// A name `FromStr` does not know, with the names it accepts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownName {
    what: &'static str,
    given: String,
    accepted: Vec<&'static str>,
}

impl UnknownName {
    /// `given` is not a `what` (e.g. "rate"); `accepted` are the names that are.
    pub fn new(
        what: &'static str,
        given: &str,
        accepted: impl IntoIterator<Item = &'static str>,
    ) -> Self {
        UnknownName {
            what,
            given: given.to_string(),
            accepted: accepted.into_iter().collect(),
        }
    }
}

impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown {} {:?} (accepted: {})",
            self.what,
            self.given,
            self.accepted.join(", ")
        )
    }
}

impl std::error::Error for UnknownName {}
