//! The line's options (`linklab emu BOARD --image soft-phy ...`), checked, and what they put
//! in the configuration blob.

use linklab_results::bail_usage;

/// The soft-PHY line's options as a user gives them (with `--image soft-phy`); unset ones
/// take their defaults ([`LineOptions::resolve`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LineOptions {
    /// The device's sampler: samples per bit, 4..=8 (default 4).
    pub oversample: Option<u8>,
    /// Transmitter clock offset toward the device, ppm, within ±[`MAX_DRIFT_PPM`]
    /// (default 0).
    pub drift: Option<i32>,
    /// Peak edge jitter toward the device, in receiver samples, at most [`max_jitter`] of the
    /// factor (default 0).
    pub jitter: Option<f64>,
    /// Probability that each sample toward the device is flipped, 0..1 (default 0).
    pub noise: Option<f64>,
    /// Do not pace the line at 10 Mbit/s: frames go as fast as the device takes them (the
    /// CPU-bound ceiling).
    pub no_pace: bool,
    /// First put a fixed set of malformed captures on the line, to show the firmware counts
    /// each and goes on.
    pub bad_captures: bool,
}

impl LineOptions {
    /// The line's settings for an image with a soft-PHY line (`line`), else None; options
    /// given for an image without one are one usage line.
    pub fn resolve(&self, line: bool) -> anyhow::Result<Option<LineSettings>> {
        if !line {
            let given = [
                (self.oversample.is_some(), "--oversample"),
                (self.drift.is_some(), "--drift"),
                (self.jitter.is_some(), "--jitter"),
                (self.noise.is_some(), "--noise"),
                (self.no_pace, "--no-pace"),
                (self.bad_captures, "--bad-captures"),
            ];
            if let Some((_, flag)) = given.iter().find(|(on, _)| *on) {
                bail_usage!("{flag}: only with --image soft-phy (the soft-PHY line's option)");
            }
            return Ok(None);
        }
        let args = LineSettings {
            oversample: self.oversample.unwrap_or(4),
            drift: self.drift.unwrap_or(0),
            jitter: self.jitter.unwrap_or(0.0),
            noise: self.noise.unwrap_or(0.0),
            no_pace: self.no_pace,
            bad_captures: self.bad_captures,
        };
        args.validate()?;
        Ok(Some(args))
    }
}

/// The soft-PHY line's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LineSettings {
    /// The device's sampler: samples per bit.
    pub oversample: u8,
    /// Transmitter clock offset toward the device, ppm.
    pub drift: i32,
    /// Peak edge jitter toward the device, in receiver samples.
    pub jitter: f64,
    /// Probability that each sample toward the device is flipped.
    pub noise: f64,
    /// The line is not paced at 10 Mbit/s.
    pub no_pace: bool,
    /// Malformed captures first.
    pub bad_captures: bool,
}

/// The widest drift accepted: the range the decoder's goals verified.
pub const MAX_DRIFT_PPM: i32 = 5000;
/// Where the sampler's configuration goes, after the device's blob (firmware's
/// `PHY_CONFIG_ADDR - CONFIG_ADDR`).
const PHY_CONFIG_OFFSET: usize = 0x80;

/// The largest jitter the decoder takes at `oversample` with at most one frame lost in
/// 10 000 (linklab-phy10's README: goal points and limits, transmitter at 2x).
pub fn max_jitter(oversample: u8) -> f64 {
    match oversample {
        4 => 0.25,
        5..=7 => 0.5,
        _ => 1.0,
    }
}

impl LineSettings {
    /// Checks the jitter against the factor, and the other settings' ranges.
    pub fn validate(&self) -> anyhow::Result<()> {
        if !(4..=8).contains(&self.oversample) {
            bail_usage!("--oversample {}: out of range (4..=8)", self.oversample);
        }
        if !(-MAX_DRIFT_PPM..=MAX_DRIFT_PPM).contains(&self.drift) {
            bail_usage!(
                "--drift {}: out of range ({}..={MAX_DRIFT_PPM} ppm)",
                self.drift,
                -MAX_DRIFT_PPM
            );
        }
        if !(0.0..1.0).contains(&self.noise) {
            bail_usage!("--noise {}: out of range (0..1)", self.noise);
        }
        let max = max_jitter(self.oversample);
        if !(0.0..=max).contains(&self.jitter) {
            bail_usage!(
                "--jitter {}: out of range at --oversample {} (accepted: 0..={max} samples, what the decoder takes)",
                self.jitter,
                self.oversample
            );
        }
        Ok(())
    }

    /// The configuration blob: the device's, then `PHY1` and the sampler's factor.
    pub fn blob(&self, device: &[u8]) -> Vec<u8> {
        let mut blob = device.to_vec();
        blob.resize(PHY_CONFIG_OFFSET, 0);
        blob.extend_from_slice(b"PHY1");
        blob.push(self.oversample);
        blob
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jitter_is_bounded_by_the_factor() {
        let args = |oversample, jitter| LineSettings {
            oversample,
            drift: 0,
            jitter,
            noise: 0.0,
            no_pace: false,
            bad_captures: false,
        };
        assert!(args(4, 0.25).validate().is_ok());
        assert!(args(4, 0.3).validate().is_err());
        assert!(args(5, 0.5).validate().is_ok());
        assert!(args(8, 1.0).validate().is_ok());
        assert!(args(8, -0.1).validate().is_err());
        assert!(args(8, f64::NAN).validate().is_err());
    }

    #[test]
    fn the_blob_carries_the_factor_after_the_device_config() {
        let b = LineSettings {
            oversample: 5,
            drift: 0,
            jitter: 0.0,
            noise: 0.0,
            no_pace: false,
            bad_captures: false,
        }
        .blob(&[9; 32]);
        assert_eq!(&b[..32], &[9; 32]);
        assert_eq!(&b[0x80..], b"PHY1\x05");
    }
}
