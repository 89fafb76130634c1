//! Stock `ping`, every request answered: the one place its arguments and its check live.
//!
//! Included by linklab's tests (`common::ping`) and, by path, by linklab-embassy-test's: it
//! needs nothing but std.
//!
//! Two rules of iputils' ping shape it. Without a deadline (`-w`), ping waits for the last
//! reply only max(2 × the largest round trip seen, the interval), and a reply later than that
//! (a loaded host) counts as lost; so a deadline is always given. With a deadline, ping sends
//! until it has COUNT replies, and its summary may count one more request, still in flight at
//! the end, as lost; so each `icmp_seq` 1..=COUNT is looked for instead of the summary.

/// One `ping -n -c COUNT -w DEADLINE [EXTRA...] DEST` whose every request must be answered.
pub struct Ping<'a> {
    dest: &'a str,
    count: u32,
    deadline_s: u32,
    extra: &'a [&'a str],
}

impl<'a> Ping<'a> {
    /// COUNT echo requests to DEST, with a 10 s deadline and ping's default interval.
    pub fn new(dest: &'a str, count: u32) -> Ping<'a> {
        Ping {
            dest,
            count,
            deadline_s: 10,
            extra: &[],
        }
    }

    /// More of ping's options (`-i 0.05`, `-s 1472`); never `-c` or `-w`, which this owns.
    pub fn with(mut self, extra: &'a [&'a str]) -> Ping<'a> {
        assert!(
            !extra.iter().any(|a| *a == "-c" || *a == "-w"),
            "Ping owns -c and -w: {extra:?}"
        );
        self.extra = extra;
        self
    }

    /// A longer deadline, for a device whose round trips are seconds (an emulated chip).
    pub fn deadline(mut self, seconds: u32) -> Ping<'a> {
        self.deadline_s = seconds;
        self
    }

    /// Ping's whole command line.
    fn argv(&self) -> Vec<String> {
        let mut argv: Vec<String> = ["ping", "-n", "-c"].map(String::from).to_vec();
        argv.push(self.count.to_string());
        argv.push("-w".into());
        argv.push(self.deadline_s.to_string());
        argv.extend(self.extra.iter().map(|a| a.to_string()));
        argv.push(self.dest.into());
        argv
    }

    /// Runs ping through `run` (the caller's namespace or device; it returns ping's stdout)
    /// and panics unless each request got its reply. Returns ping's output.
    pub fn assert_answered(&self, run: impl FnOnce(&[&str]) -> Vec<u8>) -> String {
        let argv = self.argv();
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let text = String::from_utf8_lossy(&run(&argv)).into_owned();
        let missing = unanswered(&text, self.count);
        assert!(
            missing.is_empty(),
            "{argv:?}: no reply to icmp_seq {missing:?}:\n{text}"
        );
        text
    }
}

/// The sequence numbers in 1..=`count` that ping's output shows no reply to.
fn unanswered(ping_output: &str, count: u32) -> Vec<u32> {
    (1..=count)
        .filter(|seq| {
            let seq = format!("icmp_seq={seq} ");
            !ping_output
                .lines()
                .any(|l| l.contains(" bytes from ") && l.contains(&seq))
        })
        .collect()
}
