//! What a probe run tells as it goes ([`Event`]), to whoever watches it ([`Watch`]): a
//! command line prints a line per service and per step and draws its progress line; a test
//! may log them, or watch nothing.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use linklab_results::probe::{ProbeReport, Service, StepRecord};

use super::plan::Iperf;

/// One thing that happened in a probe run.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// Run `run` of `runs` begins: `host` resolved to `address`, `budget` to end by `end`.
    Begins {
        /// Which run, from 1.
        run: u32,
        /// How many runs in all.
        runs: u32,
        /// The host as given.
        host: &'a str,
        /// The address it resolved to.
        address: IpAddr,
        /// The run's time budget.
        budget: Duration,
        /// When the budget ends.
        end: Instant,
        /// How many steps the run counts: discovery, then each of
        /// [`super::plan::Step::ALL`] (a step skipped is not begun).
        steps: usize,
    },
    /// Step `index` of the run's `steps` begins (discovery is step 1).
    StepBegins {
        /// Which step, from 1.
        index: usize,
        /// Its name (`discovery`, then the names of [`super::plan::Step`]).
        name: &'a str,
    },
    /// Discovery found these services, one entry each in a fixed order (before the run
    /// ends with an error when none answered).
    Discovered(&'a [Service]),
    /// This iperf measures TCP and UDP.
    IperfChosen(&'a Iperf),
    /// A step ended: done, skipped (and why) or failed.
    StepEnded(&'a StepRecord),
    /// The run is over: its steps ended, or discovery found nothing.
    Ends,
    /// A step is still running [`super::watchdog::OVERRUN`] past the budget: `partial` is what
    /// was measured, its failures ending with `what`. Told from the watchdog's thread while
    /// the step runs on (it ends when its own timeouts end it); a program that must not wait
    /// longer (a command line) keeps `partial` and ends the process here.
    Overrun {
        /// What was measured, with the failure.
        partial: &'a ProbeReport,
        /// The failure: which step overran.
        what: &'a str,
    },
}

/// Who watches a probe run: told every [`Event`], from the run's thread and (for
/// [`Event::Overrun`]) from its watchdog's. Any `Fn(Event)` that is `Sync` watches.
pub trait Watch: Sync {
    /// `event` happened.
    fn event(&self, event: Event<'_>);
}

impl<F: Fn(Event<'_>) + Sync> Watch for F {
    fn event(&self, event: Event<'_>) {
        self(event)
    }
}
