//! The document of `linklab sweep`: every attempt at every offered rate, and what they mean
//! (the knee, the limit above it, the peak, the collapse), with its text lines.

pub mod analysis;
mod document;
mod step;
pub mod text;

pub use document::{limited_at, LimitedAt, SweepReport};
pub use step::{
    describe_all, KneeRule, Limit, Step, DEFAULT_CONFIRM, DEFAULT_TOLERANCE_PCT, KNEE_LOSS_PCT,
};
