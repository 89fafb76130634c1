//! Spoofed frames from hosts that do not exist, written on the kernel side of a TAP with an
//! AF_PACKET socket inside the test's namespace: SYNs and UDP datagrams whose sources never
//! answer ARP (the hostile-peer cases of tests/hostile.rs and tests/emu.rs).

use serde_json::Value;

use super::{in_netns, Netns};

/// The device the frames go to.
#[derive(Clone, Copy, Debug)]
pub struct Device {
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its IPv4 address.
    pub ip: [u8; 4],
}

/// The Internet checksum of `chunks` laid end to end.
pub fn checksum(chunks: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for c in chunks {
        for pair in c.chunks(2) {
            let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
            sum += u32::from(word);
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet + IPv4 frame from `src` (an address nobody answers ARP for) to the device.
pub fn ipv4_frame(to: Device, src: [u8; 4], protocol: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&to.mac);
    f.extend_from_slice(&[0x02, 0x66, 0x66, src[1], src[2], src[3]]);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + l4.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protocol, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&to.ip);
    let c = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(l4);
    f
}

fn pseudo(to: Device, src: [u8; 4], protocol: u8, len: usize) -> Vec<u8> {
    let mut p = src.to_vec();
    p.extend_from_slice(&to.ip);
    p.extend_from_slice(&[0, protocol]);
    p.extend_from_slice(&(len as u16).to_be_bytes());
    p
}

/// A TCP SYN from `src:src_port` to the device's `dst_port`.
pub fn spoofed_syn(to: Device, src: [u8; 4], src_port: u16, dst_port: u16) -> Vec<u8> {
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&src_port.to_be_bytes());
    tcp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    tcp[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x02; // SYN
    tcp[14..16].copy_from_slice(&64240u16.to_be_bytes());
    let c = checksum(&[&pseudo(to, src, 6, tcp.len()), &tcp]);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4_frame(to, src, 6, &tcp)
}

/// A UDP datagram from `src:src_port` to the device's `dst_port`.
pub fn spoofed_udp(
    to: Device,
    src: [u8; 4],
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut udp = vec![0u8; 8];
    udp[0..2].copy_from_slice(&src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    udp.extend_from_slice(payload);
    let c = checksum(&[&pseudo(to, src, 17, udp.len()), &udp]);
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    ipv4_frame(to, src, 17, &udp)
}

/// Sends raw Ethernet frames out of the kernel side of the TAP `tap` in `ns`.
pub fn inject(ns: &Netns, tap: &str, frames: Vec<Vec<u8>>) {
    let ifname = tap.to_string();
    in_netns(ns, move || {
        let name = std::ffi::CString::new(ifname).unwrap();
        // SAFETY: plain socket/sendto calls on a socket we own, with valid buffers.
        unsafe {
            let index = libc::if_nametoindex(name.as_ptr());
            assert!(index > 0, "no such interface");
            let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
            assert!(fd >= 0, "AF_PACKET: {}", std::io::Error::last_os_error());
            let mut addr: libc::sockaddr_ll = std::mem::zeroed();
            addr.sll_family = libc::AF_PACKET as u16;
            addr.sll_ifindex = index as i32;
            addr.sll_halen = 6;
            for f in &frames {
                let n = libc::sendto(
                    fd,
                    f.as_ptr().cast(),
                    f.len(),
                    0,
                    (&addr as *const libc::sockaddr_ll).cast(),
                    std::mem::size_of::<libc::sockaddr_ll>() as u32,
                );
                assert_eq!(n, f.len() as isize, "{}", std::io::Error::last_os_error());
            }
            libc::close(fd);
        }
    });
}

/// Sends "hello" to UDP echo on `device` every 500 ms for up to 5 s: whether it came back,
/// and after how long.
pub fn udp_echo_answered(ns: &Netns, device: &str) -> (bool, std::time::Duration) {
    use std::time::{Duration, Instant};
    let to = format!("{device}:7");
    in_netns(ns, move || {
        let sock = std::net::UdpSocket::bind("198.18.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(5) {
            sock.send_to(b"hello", &to).unwrap();
            let mut buf = [0u8; 16];
            if let Ok((n, _)) = sock.recv_from(&mut buf) {
                return (&buf[..n] == b"hello", started.elapsed());
            }
        }
        (false, started.elapsed())
    })
}

/// Sockets neither established nor listening in /stats's list.
pub fn stuck(stats: &Value) -> usize {
    stats["tcp"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| !matches!(s["state"].as_str(), Some("ESTABLISHED" | "LISTEN")))
        .count()
}

/// No TCP socket is stuck half-open or closing (per /stats's socket list).
pub fn assert_nothing_stuck(stats: &Value) {
    let stuck: Vec<&Value> = stats["tcp"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| {
            let st = s["state"].as_str().unwrap_or("");
            st != "ESTABLISHED" && st != "LISTEN"
        })
        .collect();
    // The /stats request's own connection is ESTABLISHED; anything else is stuck.
    assert!(stuck.is_empty(), "stuck sockets: {stuck:?}");
}
