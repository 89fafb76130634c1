//! The lab: the device (smoltcp and the apps) on the scripted wire, and the host's clients
//! that answer it as a kernel does.

use linklab_perf::apps::DeviceApps;
use linklab_perf::http::NoRoutes;
use linklab_perf::rules::NextFrame;
use linklab_perf_host::apps::host_buffers;
use smoltcp::iface::{Config, Interface, SocketSet, SocketStorage};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol, IpAddress,
    IpCidr, Ipv4Packet, TcpControl, TcpPacket,
};

use crate::wire::*;

/// One TCP client on the host (or a ghost), as far as the handshake goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Client {
    /// SYN sent, nothing back yet.
    Connecting,
    /// SYN-ACK received and acknowledged: it believes it is connected.
    Connected,
    /// Reset by the device.
    Reset,
}

/// The device (smoltcp + the apps) and the peers on the wire.
pub struct Lab {
    pub iface: Interface,
    pub wire: Wire,
    pub sockets: SocketSet<'static>,
    pub apps: DeviceApps<'static>,
    pub now: Instant,
    /// Host clients by port.
    pub clients: Vec<(u16, Client)>,
    /// Host clients that exchange data (see [`Lab::talk`]), by port.
    pub talks: Vec<(u16, Talk)>,
}

/// A host client's side of a connection that carries data: what it sent and what came.
#[derive(Default)]
pub struct Talk {
    /// Our next sequence number.
    pub seq: u32,
    /// The device's next sequence number (what we acknowledge).
    pub ack: u32,
    /// The device's bytes, in order.
    pub got: Vec<u8>,
}

impl Lab {
    pub fn new() -> Lab {
        let mut wire = Wire::default();
        let now = Instant::from_secs(100);
        let mut iface = Interface::new(Config::new(DEVICE_MAC.into()), &mut wire, now);
        iface.update_ip_addrs(|a| a.push(IpCidr::new(IpAddress::Ipv4(DEVICE_IP), 24)).unwrap());
        let mut sockets = SocketSet::new(Vec::<SocketStorage>::new());
        let apps = DeviceApps::new(&mut sockets, host_buffers(8192));
        let mut lab = Lab {
            iface,
            wire,
            sockets,
            apps,
            now,
            clients: Vec::new(),
            talks: Vec::new(),
        };
        // The host asks for the device's address first, as a kernel does before its first
        // SYN: the device learns the host's from the request.
        let ask = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Request,
            source_hardware_addr: HOST_MAC,
            source_protocol_addr: HOST_IP,
            target_hardware_addr: EthernetAddress([0; 6]),
            target_protocol_addr: DEVICE_IP,
        };
        let frame = ethernet(
            EthernetAddress::BROADCAST,
            HOST_MAC,
            EthernetProtocol::Arp,
            ask.buffer_len(),
            |b| ask.emit(&mut ArpPacket::new_unchecked(b)),
        );
        lab.wire.to_device.push_back(frame);
        lab.poll();
        lab
    }

    /// One pass of the device (ingress with the SYN rule, the apps, egress), then the host's
    /// answers to what it sent: ARP replies for the host, ACKs of SYN-ACKs, resets noted.
    pub fn poll(&mut self) {
        self.device_pass();
        for frame in std::mem::take(&mut self.wire.from_device) {
            self.host_sees(&frame);
        }
    }

    /// One pass of the device; what it sent stays on the wire (`wire.from_device`).
    pub fn device_pass(&mut self) {
        let Lab {
            iface,
            wire,
            sockets,
            apps,
            now,
            ..
        } = self;
        apps.poll_ingress(iface, wire, sockets, *now, |w: &mut Wire| {
            w.to_device
                .front()
                .map_or(NextFrame::Empty, |f| NextFrame::of(f))
        });
        apps.poll(sockets, &mut NoRoutes, *now);
        apps.poll_egress(iface, wire, sockets, *now);
    }

    pub fn host_sees(&mut self, frame: &[u8]) {
        let eth = EthernetFrame::new_checked(frame).unwrap();
        match eth.ethertype() {
            EthernetProtocol::Arp => {
                let arp = ArpRepr::parse(&ArpPacket::new_checked(eth.payload()).unwrap()).unwrap();
                if let Some(reply) = arp_reply(&arp) {
                    self.wire.to_device.push_back(reply);
                }
            }
            EthernetProtocol::Ipv4 => {
                let ip = Ipv4Packet::new_checked(eth.payload()).unwrap();
                assert_eq!(ip.dst_addr(), HOST_IP, "only the host is ever reached");
                let tcp = TcpPacket::new_checked(ip.payload()).unwrap();
                let port = tcp.dst_port();
                let Some(c) = self.clients.iter_mut().find(|(p, _)| *p == port) else {
                    return;
                };
                let talk = self.talks.iter_mut().find(|(p, _)| *p == port);
                if let Some((_, t)) = talk.filter(|_| c.1 == Client::Connected && !tcp.rst()) {
                    // A talking client takes the device's bytes in order and acknowledges.
                    if tcp.seq_number().0 as u32 == t.ack && !tcp.payload().is_empty() {
                        t.got.extend_from_slice(tcp.payload());
                        t.ack = t.ack.wrapping_add(tcp.payload().len() as u32);
                        let (seq, ack, from) = (t.seq, t.ack, tcp.src_port());
                        self.wire.to_device.push_back(data_segment(
                            HOST_IP,
                            port,
                            from,
                            TcpControl::None,
                            seq,
                            Some(ack),
                            &[],
                        ));
                    }
                    return;
                }
                if tcp.rst() {
                    c.1 = Client::Reset;
                } else if tcp.syn() && tcp.ack() && c.1 == Client::Connecting {
                    c.1 = Client::Connected;
                    let ack = tcp.seq_number().0 as u32 + 1;
                    let from = tcp.src_port();
                    if let Some((_, t)) = self.talks.iter_mut().find(|(p, _)| *p == port) {
                        t.seq = ISN + 1;
                        t.ack = ack;
                    }
                    self.wire.to_device.push_back(segment(
                        HOST_IP,
                        port,
                        from,
                        TcpControl::None,
                        Some(ack),
                    ));
                }
            }
            _ => {}
        }
    }

    /// Queues a SYN from host port `port` to the device's `to` (not yet polled).
    pub fn syn(&mut self, port: u16, to: u16) {
        self.clients.push((port, Client::Connecting));
        self.wire
            .to_device
            .push_back(segment(HOST_IP, port, to, TcpControl::Syn, None));
    }

    /// Queues a SYN from host port `port` to the device's `to` for a client that exchanges
    /// data ([`Lab::send`], [`Lab::got`]).
    pub fn talk(&mut self, port: u16, to: u16) {
        self.talks.push((port, Talk::default()));
        self.syn(port, to);
    }

    /// Queues `bytes` from talking client `port` to the device's `to` (not yet polled).
    pub fn send(&mut self, port: u16, to: u16, bytes: &[u8]) {
        let (_, t) = self.talks.iter_mut().find(|(p, _)| *p == port).unwrap();
        let frame = data_segment(
            HOST_IP,
            port,
            to,
            TcpControl::Psh,
            t.seq,
            Some(t.ack),
            bytes,
        );
        t.seq = t.seq.wrapping_add(bytes.len() as u32);
        self.wire.to_device.push_back(frame);
    }

    /// The bytes talking client `port` received.
    pub fn got(&self, port: u16) -> &[u8] {
        &self.talks.iter().find(|(p, _)| *p == port).unwrap().1.got
    }

    /// Queues a spoofed SYN from a ghost.
    pub fn ghost_syn(&mut self, port: u16, to: u16) {
        self.wire
            .to_device
            .push_back(segment(GHOST_IP, port, to, TcpControl::Syn, None));
    }

    pub fn client(&self, port: u16) -> Client {
        self.clients.iter().find(|(p, _)| *p == port).unwrap().1
    }

    pub fn wait(&mut self, ms: u64) {
        self.now += Duration::from_millis(ms);
        self.poll();
    }

    pub fn counter(&self, app: &str, name: &str) -> u64 {
        let (_, _, v) = self
            .apps
            .counters()
            .into_iter()
            .find(|(a, n, _)| *a == app && *n == name)
            .unwrap();
        v
    }
}
