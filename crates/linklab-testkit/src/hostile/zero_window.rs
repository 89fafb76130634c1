//! A slow download and a zero-window reader hold the HTTP sockets: the reader gives way, the
//! download never does.

use super::*;

/// A slow download (/1MB.txt read at 100 kB/s, 10 s; see [`PacedDownload`]) and a reader
/// whose window is shut hold both HTTP sockets: a new client evicts the reader, never the
/// download; then with two downloads holding both, new SYNs are refused and both downloads
/// complete whole.
pub fn a_download_stays_a_zero_window_reader_goes(dev: &Device) {
    let before = counter(&dev.stats(), "http", "evicted");
    let url = format!("http://{DEVICE}/1MB.txt");
    let download = || PacedDownload::start(&dev.ns, &url, 100_000);
    // So the downloads are paced by curl's reading.
    let rmem = dev.ns.small_receive_buffers();
    let first = download();
    let mut reader = in_netns(&dev.ns, zero_window_reader);
    // Both hold their sockets before the clock starts: on a loaded machine curl may take a
    // while to connect, and a free socket would let the new client in without an eviction.
    let held = wait_until(Duration::from_secs(5), || established_to(dev, 80) == 2);
    assert!(held, "the download and the reader did not both connect");
    // The reader's 4 kB window fills at once; then it is idle, with the device's bytes
    // unacknowledged (the sending grace).
    std::thread::sleep(SENDING_GRACE + Duration::from_millis(750));
    let started = Instant::now();
    let out = dev.curl(&["-m", "3", "--fail"], "/10kB.txt");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "200",
        "{out:?}; connections: {}; {}",
        connections_to(dev, 80),
        dev.stats()
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(
        was_reset(&mut reader, Duration::from_secs(1)),
        "the zero-window reader was not evicted; connections: {}; {}",
        connections_to(dev, 80),
        dev.stats()
    );
    let second = download();
    let both = wait_until(Duration::from_secs(5), || established_to(dev, 80) == 2);
    assert!(both, "the second download did not connect");
    // Both sockets carry a download being acknowledged: new clients are refused.
    for _ in 0..3 {
        let out = dev.curl(&["-m", "2"], "/10kB.txt");
        assert!(
            !out.status.success(),
            "a new client got in: {out:?}; connections: {}",
            connections_to(dev, 80)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
    for d in [first, second] {
        let (status, bytes) = d.finish(Duration::from_secs(40));
        assert!(
            status.is_some_and(|s| s.success()) && bytes == 1_000_000,
            "the download was cut: curl {status:?} after {bytes} bytes"
        );
    }
    dev.ns.set_receive_buffers(&rmem);
    let stats = dev.stats();
    assert_eq!(counter(&stats, "http", "evicted") - before, 1, "{stats}");
    assert_counters_conserve(&stats);
}

/// What `ss` shows of the host's TCP connections to the device's `port` (for failure messages).
fn connections_to(dev: &Device, port: u16) -> String {
    let out = dev.run(&["ss", "-tni", "dport", &format!("= :{port}")]);
    String::from_utf8_lossy(&out).into_owned()
}

/// TCP connections the host has established to the device's `port` (per `ss`).
fn established_to(dev: &Device, port: u16) -> usize {
    let out = dev.run(&[
        "ss",
        "-Htn",
        "state",
        "established",
        "dport",
        "=",
        &format!(":{port}"),
    ]);
    String::from_utf8_lossy(&out).lines().count()
}

/// A client that asks for /1MB.txt with a 4 kB receive buffer and never reads.
fn zero_window_reader() -> TcpStream {
    use socket2::{Domain, Socket, Type};
    let s = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    s.set_recv_buffer_size(2048).unwrap();
    let device: SocketAddr = format!("{DEVICE}:80").parse().unwrap();
    s.connect_timeout(&device.into(), Duration::from_secs(3))
        .unwrap();
    let mut stream: TcpStream = s.into();
    stream
        .write_all(b"GET /1MB.txt HTTP/1.1\r\nHost: reader\r\n\r\n")
        .unwrap();
    stream
}
