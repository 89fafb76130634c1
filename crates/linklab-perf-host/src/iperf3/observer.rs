//! What a host test tells while it runs ([`Observer`]): the text and `-J` views print it
//! in iperf3's layout; [`Quiet`] ignores it.

use linklab_perf::iperf::Params;

use super::report::{ControlInfo, HostInterval, HostReport, ServerOutput, StreamInfo, TestText};
use super::sockets::BufferSizes;

/// What a host test reports while it runs; the CLI prints it in iperf3's layout. Every
/// method has a default that ignores the event.
pub trait Observer {
    /// Something iperf3 would print as `warning: ...`.
    fn warning(&mut self, _msg: &str) {}
    /// The control connection is up (client) or accepted with its cookie (server).
    fn connected(&mut self, _c: &ControlInfo) {}
    /// Server: the client's parameters, before streams are created.
    fn params(&mut self, _p: &Params, _text: &TestText) {}
    /// A data stream is connected.
    fn stream(&mut self, _s: &StreamInfo) {}
    /// All streams are up; the test clock starts.
    fn started(&mut self, _p: &Params, _buffers: &BufferSizes) {}
    /// A `-i` interval ended.
    fn interval(&mut self, _iv: &HostInterval) {}
    /// Server: the test ended (TEST_END), before the results exchange: our own figures.
    fn finished(&mut self, _r: &HostReport) {}
    /// Server: the client asked for our output; what to send.
    fn server_output(&mut self) -> Option<ServerOutput> {
        None
    }
}

/// An observer that ignores everything.
pub struct Quiet;

impl Observer for Quiet {}
