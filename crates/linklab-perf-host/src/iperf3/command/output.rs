//! Where `linklab iperf` writes, as iperf3's `iperf_printf` does: stdout or `--logfile`
//! (appended), each line prefixed with `--timestamps` and, on the client, `-T title:  `;
//! flushed at every line with `--forceflush` or a log file; on a server whose client asked
//! with `--get-server-output`, each line also kept to send with the results.

use std::fs::File;
use std::io::{self, Write};
use std::path::Path;

use crate::command_error::CommandError;
use crate::dates;

/// The output of one `linklab iperf` run.
pub struct Printer {
    out: Box<dyn Write>,
    /// `-T`: prefix of client lines.
    title: Option<String>,
    /// `--timestamps`: strftime format of the line prefix.
    timestamps: Option<String>,
    /// Flush after every line.
    flush: bool,
    /// Lines kept for `--get-server-output`.
    capture: Option<String>,
}

impl Printer {
    /// Writes to `logfile` (appended) or stdout.
    pub fn new(
        logfile: Option<&Path>,
        title: Option<String>,
        timestamps: Option<String>,
        forceflush: bool,
    ) -> Result<Self, CommandError> {
        let out: Box<dyn Write> = match logfile {
            Some(p) => Box::new(File::options().append(true).create(true).open(p).map_err(
                |e| CommandError::failed(format!("unable to open log file {}: {e}", p.display())),
            )?),
            None => Box::new(io::stdout()),
        };
        Ok(Self {
            out,
            title,
            timestamps,
            flush: forceflush || logfile.is_some(),
            capture: None,
        })
    }

    /// Writes `text` (one or more lines, or a piece of one) with the line prefixes.
    pub fn print(&mut self, text: &str) {
        let mut line = String::new();
        if let Some(fmt) = &self.timestamps {
            line.push_str(&dates::local_time(fmt));
        }
        if let Some(t) = &self.title {
            line.push_str(t);
            line.push_str(":  ");
        }
        line.push_str(text);
        if let Some(c) = &mut self.capture {
            c.push_str(&line);
        }
        let _ = self.out.write_all(line.as_bytes());
        if self.flush {
            let _ = self.out.flush();
        }
    }

    /// Writes `text` followed by a newline.
    pub fn line(&mut self, text: &str) {
        self.print(&format!("{text}\n"));
    }

    /// Writes without prefixes (iperf3's plain `printf` lines and JSON documents).
    pub fn raw(&mut self, text: &str) {
        let _ = self.out.write_all(text.as_bytes());
        let _ = self.out.flush();
    }

    /// Flushes what is buffered.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }

    /// Starts (or stops) keeping the lines printed, for `--get-server-output`.
    pub fn capture(&mut self, on: bool) {
        self.capture = on.then(String::new);
    }

    /// The lines kept since [`capture`](Self::capture).
    pub fn captured(&self) -> Option<&str> {
        self.capture.as_deref()
    }
}
