//! Frames with a wrong checksum, sent to the firmware by a raw (AF_PACKET) socket on the
//! lab's TAP: a UDP echo request with a bad UDP checksum, a TCP SYN to the HTTP port with a
//! bad TCP checksum, an ICMP echo request with a bad IPv4 header checksum. Each must be
//! dropped (no answer) and counted (`/stats` `mac.rx_checksum_errors`: the firmware's MAC
//! checks them, smoltcp does not); the same frames with right checksums, sent after, must be
//! answered, so "no answer" means dropped, not lost.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use linklab_mac::checksum;
use linklab_perf::device_config::DeviceConfig;
use linklab_results::emu::blast::{BadChecksums, ChecksumCase};
use serde_json::Value;

use super::lab::{Lab, TAP};

const HOST_IP: [u8; 4] = [198, 18, 0, 1];
const DEVICE_IP: [u8; 4] = [198, 18, 0, 2];
/// How long to wait for an answer that must not come.
const SILENCE: Duration = Duration::from_millis(500);
/// How long to wait for an answer that must come.
const ANSWER: Duration = Duration::from_secs(5);

/// One probe: the frame and how to recognise the device's answer to it.
#[derive(Clone, Copy, Debug)]
enum Probe {
    /// UDP to the echo port from `port`.
    UdpEcho { port: u16 },
    /// TCP SYN to port 80 from `port`.
    TcpSyn { port: u16 },
    /// ICMP echo request with identifier `id`.
    Ping { id: u16 },
}

impl Probe {
    fn name(self) -> &'static str {
        match self {
            Probe::UdpEcho { .. } => "udp_checksum",
            Probe::TcpSyn { .. } => "tcp_checksum",
            Probe::Ping { .. } => "ipv4_header_checksum",
        }
    }

    /// The frame with right checksums, and the offset of the byte to spoil for the wrong one.
    fn frame(self, host_mac: [u8; 6], device_mac: [u8; 6]) -> (Vec<u8>, usize) {
        let (proto, l4): (u8, Vec<u8>) = match self {
            Probe::UdpEcho { port } => {
                let payload = b"linklab checksum probe";
                let mut u = vec![0u8; 8];
                u[0..2].copy_from_slice(&port.to_be_bytes());
                u[2..4].copy_from_slice(&7u16.to_be_bytes());
                u[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
                u.extend_from_slice(payload);
                (17, u)
            }
            Probe::TcpSyn { port } => {
                let mut t = vec![0u8; 20];
                t[0..2].copy_from_slice(&port.to_be_bytes());
                t[2..4].copy_from_slice(&80u16.to_be_bytes());
                t[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
                t[12] = 5 << 4;
                t[13] = 0x02; // SYN
                t[14..16].copy_from_slice(&8192u16.to_be_bytes());
                (6, t)
            }
            Probe::Ping { id } => {
                let mut i = vec![8u8, 0, 0, 0];
                i.extend_from_slice(&id.to_be_bytes());
                i.extend_from_slice(&1u16.to_be_bytes());
                i.extend_from_slice(b"linklab");
                let c = !checksum::sum(&i);
                i[2..4].copy_from_slice(&c.to_be_bytes());
                (1, i)
            }
        };
        let mut f = Vec::with_capacity(14 + 20 + l4.len());
        f.extend_from_slice(&device_mac);
        f.extend_from_slice(&host_mac);
        f.extend_from_slice(&[0x08, 0x00]);
        let total = (20 + l4.len()) as u16;
        f.extend_from_slice(&[0x45, 0]);
        f.extend_from_slice(&total.to_be_bytes());
        f.extend_from_slice(&[0, 0, 0x40, 0, 64, proto, 0, 0]);
        f.extend_from_slice(&HOST_IP);
        f.extend_from_slice(&DEVICE_IP);
        f.extend_from_slice(&l4);
        checksum::fill(&mut f);
        let spoil = match self {
            Probe::UdpEcho { .. } => 14 + 20 + 6,
            Probe::TcpSyn { .. } => 14 + 20 + 16,
            Probe::Ping { .. } => 14 + 10,
        };
        (f, spoil)
    }

    /// True if `frame` is the device's answer to this probe.
    fn answered_by(self, frame: &[u8]) -> bool {
        if frame.len() < 14 + 20 + 8 || frame[12..14] != [0x08, 0x00] {
            return false;
        }
        let ip = &frame[14..];
        if ip[12..16] != DEVICE_IP || ip[16..20] != HOST_IP {
            return false;
        }
        let l4 = &ip[usize::from(ip[0] & 0x0f) * 4..];
        let be = |i: usize| l4.get(i..i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
        match self {
            Probe::UdpEcho { port } => ip[9] == 17 && be(0) == Some(7) && be(2) == Some(port),
            Probe::TcpSyn { port } => {
                ip[9] == 6
                    && be(0) == Some(80)
                    && be(2) == Some(port)
                    && l4.get(13).is_some_and(|f| f & 0x12 == 0x12)
            }
            Probe::Ping { id } => ip[9] == 1 && l4[0] == 0 && be(4) == Some(id),
        }
    }
}

/// An AF_PACKET socket on the TAP inside the lab's namespace (made on a thread inside it).
fn packet_socket(lab: &Lab) -> anyhow::Result<OwnedFd> {
    let path = lab.netns().to_string();
    lab.in_netns(move || -> anyhow::Result<OwnedFd> {
        let proto = (libc::ETH_P_ALL as u16).to_be();
        // SAFETY: plain socket creation; the fd is owned below.
        let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, i32::from(proto)) };
        if fd < 0 {
            bail!(
                "cannot open a packet socket: {}",
                std::io::Error::last_os_error()
            );
        }
        // SAFETY: a fresh fd we own.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let name = std::ffi::CString::new(TAP)?;
        // SAFETY: a NUL-terminated name.
        let index = unsafe { libc::if_nametoindex(name.as_ptr()) };
        if index == 0 {
            bail!("no interface {TAP} in {path}");
        }
        // SAFETY: zeroed sockaddr_ll is valid; fields set below.
        let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
        sll.sll_family = libc::AF_PACKET as u16;
        sll.sll_protocol = proto;
        sll.sll_ifindex = index as i32;
        // SAFETY: binding our socket to a valid sockaddr_ll of the right size.
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sll as *const libc::sockaddr_ll).cast(),
                std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
            )
        };
        if r != 0 {
            bail!(
                "cannot bind the packet socket to {TAP}: {}",
                std::io::Error::last_os_error()
            );
        }
        Ok(fd)
    })?
}

fn send(fd: &OwnedFd, frame: &[u8]) -> anyhow::Result<()> {
    // SAFETY: sending from a valid buffer on a bound packet socket.
    let n = unsafe { libc::send(fd.as_raw_fd(), frame.as_ptr().cast(), frame.len(), 0) };
    if n != frame.len() as isize {
        bail!(
            "cannot send a raw frame: {}",
            std::io::Error::last_os_error()
        );
    }
    Ok(())
}

/// Reads frames until `probe`'s answer arrives (true) or `wait` passes (false).
fn answered(fd: &OwnedFd, probe: Probe, wait: Duration) -> anyhow::Result<bool> {
    let deadline = Instant::now() + wait;
    let mut buf = [0u8; 2048];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Ok(false);
        }
        let ms = left.as_millis().clamp(1, 1000) as i32;
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut pfd, 1, ms) } <= 0 {
            continue;
        }
        // SAFETY: receiving into a buffer we own.
        let n = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                libc::MSG_DONTWAIT,
            )
        };
        if n > 0 && probe.answered_by(&buf[..n as usize]) {
            return Ok(true);
        }
    }
}

fn checksum_errors(stats: &Value) -> anyhow::Result<u64> {
    stats["mac"]["rx_checksum_errors"]
        .as_u64()
        .context("/stats has no mac.rx_checksum_errors")
}

/// Sends the three spoiled frames and their right twins; the outcome, and whether every
/// spoiled one was dropped and counted and every right one answered.
pub fn probe(lab: &Lab, host_mac: [u8; 6]) -> anyhow::Result<(BadChecksums, anyhow::Result<()>)> {
    let fd = packet_socket(lab)?;
    let device_mac = DeviceConfig::DEFAULT.mac;
    let before = checksum_errors(&lab.stats()?)?;
    let base = 40_000 + (std::process::id() % 10_000) as u16;
    let probes = [
        Probe::UdpEcho { port: base },
        Probe::TcpSyn { port: base + 1 },
        Probe::Ping { id: base + 2 },
    ];
    let mut cases = Vec::new();
    let mut verdict = Ok(());
    for p in probes {
        let (good, spoil) = p.frame(host_mac, device_mac);
        let mut bad = good.clone();
        bad[spoil] ^= 0x01;
        send(&fd, &bad)?;
        let bad_answered = answered(&fd, p, SILENCE)?;
        send(&fd, &good)?;
        let good_answered = answered(&fd, p, ANSWER)?;
        if verdict.is_ok() && (bad_answered || !good_answered) {
            verdict = Err(anyhow::anyhow!(
                "--blast: {}: the frame with a wrong checksum was {}answered, the right one {}answered",
                p.name(),
                if bad_answered { "" } else { "not " },
                if good_answered { "" } else { "not " }
            ));
        }
        cases.push(ChecksumCase {
            case: p.name().into(),
            wrong_answered: bad_answered,
            right_answered: good_answered,
        });
    }
    let counted = checksum_errors(&lab.stats()?)? - before;
    if verdict.is_ok() && counted != probes.len() as u64 {
        verdict = Err(anyhow::anyhow!(
            "--blast: {counted} checksum errors counted for {} wrong frames",
            probes.len()
        ));
    }
    let outcome = BadChecksums {
        sent_wrong: probes.len() as u64,
        counted,
        cases,
    };
    Ok((outcome, verdict))
}
