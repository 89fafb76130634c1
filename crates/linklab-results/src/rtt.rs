//! The document of `linklab rtt`: round trips and inter-arrival times per probe size.

mod distribution;
mod document;
pub mod text;

pub use distribution::{new_histogram, Distribution};
pub use document::{RttReport, SizeReport};
