//! The line `linklab track run` and `walk` print on stderr as each entry's measuring begins.

use linklab_track::measure::Progress;

/// Prints the line for `progress`.
pub fn tell(progress: Progress<'_>) {
    match progress {
        Progress::Image(e) => eprintln!("track: measuring {} ...", e.name),
        Progress::Device(d) => eprintln!("track: probing {} at {} ...", d.name, d.address),
        Progress::Sim(s) => eprintln!("track: simulating {} ...", s.name),
    }
}
