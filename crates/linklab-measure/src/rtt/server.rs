//! The echo server of `linklab rtt -s`: a plain RFC 862 echo server on UDP and TCP (what comes
//! in goes back out).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};

use anyhow::Context;

/// An echo server bound to one address, UDP and TCP.
pub struct EchoServer {
    udp: UdpSocket,
    tcp: TcpListener,
}

impl EchoServer {
    /// Binds `addr` for UDP and TCP; one clear sentence when either is refused.
    pub fn bind(addr: SocketAddr) -> anyhow::Result<EchoServer> {
        let hint = if addr.port() < 1024 {
            " (ports below 1024 need root; choose another with -p)"
        } else {
            ""
        };
        let udp =
            UdpSocket::bind(addr).with_context(|| format!("could not bind UDP {addr}{hint}"))?;
        let tcp =
            TcpListener::bind(addr).with_context(|| format!("could not bind TCP {addr}{hint}"))?;
        Ok(EchoServer { udp, tcp })
    }

    /// Echoes until the process is stopped: every datagram back to its sender, every TCP
    /// connection in a thread of its own. A failed accept is handed to `accept_failed` and the
    /// server goes on.
    pub fn serve(self, mut accept_failed: impl FnMut(io::Error)) {
        let udp = self.udp;
        std::thread::spawn(move || echo_udp(&udp));
        for conn in self.tcp.incoming() {
            match conn {
                Ok(stream) => {
                    std::thread::spawn(move || {
                        let _ = echo_tcp(stream);
                    });
                }
                Err(e) => accept_failed(e),
            }
        }
    }
}

/// Echoes every datagram back to its sender; errors on one datagram never stop the loop.
fn echo_udp(sock: &UdpSocket) {
    let mut buf = vec![0u8; 65536];
    loop {
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = sock.send_to(&buf[..n], from);
        }
    }
}

/// Echoes one TCP connection until the peer closes it.
fn echo_tcp(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = vec![0u8; 65536];
    loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        stream.write_all(&buf[..n])?;
    }
}
