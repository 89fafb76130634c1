//! `--device-sends`: the device sends each file to the host's TCP sink (its bytes from the
//! bench payload), from the device's send buffer (two segments unless the profile says
//! otherwise) with Nagle off, as linklab's firmware serves curl and iperf3 `-R`.

use linklab_perf::http::expected_crc32;
use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::socket::tcp;
use smoltcp::wire::IpAddress;

use super::{
    device_socket, failed, next_file, take_port, App, AppEvent, DownloadResult, NextFile, Phase,
};

/// One `--device-sends` transfer: the file's bytes from `connect` until the host has
/// acknowledged all of them and the FIN, and closed its side.
pub(super) struct Upload {
    pub(super) handle: SocketHandle,
    pub(super) sent: u64,
    started_ns: u64,
}

impl App {
    /// `--device-sends`: one transfer of a file to the host's sink; returns true if the
    /// phase changed (step again). The result's CRC32 is the file's; the simulator replaces
    /// it with what the host's sink computed over the bytes it received.
    pub(super) fn step_put(
        &mut self,
        now: u64,
        iface: &mut Interface,
        sockets: &mut SocketSet<'static>,
        events: &mut Vec<AppEvent>,
    ) -> bool {
        let Phase::Put { file, rep, current } = &mut self.phase else {
            return false;
        };
        let bench = match next_file(&self.files, self.gets, file, rep, events) {
            NextFile::Transfer(b) => b,
            NextFile::Stepped => return true,
            NextFile::AllDone => {
                self.phase = Phase::Done;
                return true;
            }
        };
        let upload = match current {
            Some(u) => u,
            None => {
                let mut socket = device_socket(1024, self.send_buffer);
                // linklab's firmware turns Nagle off (see its README).
                socket.set_nagle_enabled(false);
                let port = take_port(&mut self.next_port);
                let remote = (IpAddress::Ipv4(self.host_ip), crate::host::SINK_PORT);
                if let Err(e) = socket.connect(iface.context(), remote, port) {
                    events.push(AppEvent::Download(failed(
                        bench,
                        now,
                        now,
                        format!("connect: {e}"),
                    )));
                    *rep += 1;
                    return true;
                }
                current.insert(Upload {
                    handle: sockets.add(socket),
                    sent: 0,
                    started_ns: now,
                })
            }
        };
        let socket = sockets.get_mut::<tcp::Socket>(upload.handle);
        let total = bench.len;
        while upload.sent < total && socket.can_send() {
            let offset = upload.sent;
            let n = socket
                .send(|buf| {
                    let n = buf.len().min((total - offset) as usize);
                    linklab_perf::payload::fill(offset, &mut buf[..n]);
                    (n, n)
                })
                .unwrap_or(0);
            if n == 0 {
                break;
            }
            upload.sent += n as u64;
            self.last_progress_ns = now;
        }
        if upload.sent == total && socket.send_queue() == 0 {
            socket.close();
        }
        let done = upload.sent == total
            && socket.send_queue() == 0
            // The host's FIN too, so that the socket leaves `closing` only after this
            // iteration's egress has acknowledged it.
            && matches!(socket.state(), tcp::State::TimeWait | tcp::State::Closed);
        let broken = !done && !socket.is_open();
        if !done && !broken {
            return false;
        }
        let seconds = (now - upload.started_ns) as f64 / 1e9;
        let result = if done {
            DownloadResult {
                path: bench.path.to_string(),
                bytes: total,
                body_bytes: total,
                seconds,
                bytes_per_s: if seconds > 0.0 {
                    total as f64 / seconds
                } else {
                    0.0
                },
                crc32: expected_crc32(bench),
                expected_crc32: expected_crc32(bench),
                status: 200,
                error: None,
            }
        } else {
            let mut r = failed(bench, upload.started_ns, now, "connection closed".into());
            r.bytes = upload.sent;
            r
        };
        self.closing.push(upload.handle);
        events.push(AppEvent::Download(result));
        *current = None;
        *rep += 1;
        true
    }
}
