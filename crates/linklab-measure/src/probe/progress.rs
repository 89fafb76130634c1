//! The progress line: on a terminal, one line on stderr redrawn twice a second with the step
//! that runs and the time left of `--duration`; when stderr is not a terminal, nothing (stderr
//! then carries only the error line, and stdout says each step as it ends).

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the line shows.
struct State {
    step: String,
    index: usize,
    total: usize,
    done: bool,
}

/// The progress line and the stdout lines printed under it.
pub struct Progress {
    state: Arc<Mutex<State>>,
    enabled: bool,
    end: Instant,
    ticker: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    /// A line for a run that ends at `end`; drawn only when `enabled` (stderr is a terminal).
    pub fn new(enabled: bool, end: Instant, total: usize) -> Progress {
        let state = Arc::new(Mutex::new(State {
            step: "discovery".into(),
            index: 0,
            total,
            done: false,
        }));
        let ticker = enabled.then(|| {
            let state = Arc::clone(&state);
            std::thread::spawn(move || loop {
                {
                    let s = state.lock().unwrap_or_else(|e| e.into_inner());
                    if s.done {
                        return;
                    }
                    draw(&s, end);
                }
                std::thread::sleep(Duration::from_millis(500));
            })
        });
        Progress {
            state,
            enabled,
            end,
            ticker,
        }
    }

    /// Step `index` of the total, named `step`, is starting.
    pub fn step(&self, index: usize, step: &str) {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.step = step.into();
        s.index = index;
        if self.enabled {
            draw(&s, self.end);
        }
    }

    /// Prints `line` on stdout, the progress line erased under it and drawn again after.
    pub fn println(&self, line: &str) {
        let s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if self.enabled {
            clear();
        }
        println!("{line}");
        let _ = std::io::stdout().flush();
        if self.enabled && !s.done {
            draw(&s, self.end);
        }
    }

    /// Erases the line for good.
    pub fn finish(&mut self) {
        {
            let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
            s.done = true;
        }
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        if self.enabled {
            clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

fn draw(s: &State, end: Instant) {
    let left = end.saturating_duration_since(Instant::now()).as_secs();
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2Kprobe: step {}/{}: {} · {left} s left",
        s.index, s.total, s.step
    );
    let _ = err.flush();
}

fn clear() {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r\x1b[2K");
    let _ = err.flush();
}
