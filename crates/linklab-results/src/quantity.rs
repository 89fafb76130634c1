//! A number with its unit, as the documents carry their figures.

use serde::{Deserialize, Serialize};

/// A number and its unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    /// The number.
    pub value: f64,
    /// Its unit: `s`, `bit/s`, `bytes`, `us`.
    pub unit: String,
}

impl Quantity {
    /// `value` in `unit`.
    pub fn new(value: f64, unit: &str) -> Quantity {
        Quantity {
            value,
            unit: unit.into(),
        }
    }
}
