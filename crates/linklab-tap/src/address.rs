//! Gives a TAP's kernel side (any network interface) an IPv4 address and prefix and brings it
//! up (SIOCSIFADDR, SIOCSIFNETMASK, SIOCSIFFLAGS), as `ip addr add` and `ip link set up` would.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use crate::tap::ifreq_named;

fn sockaddr(ip: Ipv4Addr) -> libc::sockaddr {
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: 0,
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(ip.octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: sockaddr_in and sockaddr have the same size; this is how the ioctls take it.
    unsafe { std::mem::transmute::<libc::sockaddr_in, libc::sockaddr>(sin) }
}

fn ioctl(fd: &OwnedFd, request: libc::Ioctl, req: &mut libc::ifreq) -> io::Result<()> {
    // SAFETY: the SIOC*IF* ioctls read and write one `ifreq`, which outlives the call.
    if unsafe { libc::ioctl(fd.as_raw_fd(), request, req as *mut libc::ifreq) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Sets `ip/prefix` on interface `name` (the kernel side of a TAP, say) and brings it up.
pub fn set_ipv4(name: &str, ip: Ipv4Addr, prefix: u8) -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments.
    let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a fresh descriptor we own.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_addr = sockaddr(ip);
    ioctl(&fd, libc::SIOCSIFADDR, &mut req)?;
    let mask = if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix))
    };
    let mut req = ifreq_named(name)?;
    req.ifr_ifru.ifru_netmask = sockaddr(Ipv4Addr::from(mask));
    ioctl(&fd, libc::SIOCSIFNETMASK, &mut req)?;
    let mut req = ifreq_named(name)?;
    ioctl(&fd, libc::SIOCGIFFLAGS, &mut req)?;
    // SAFETY: SIOCGIFFLAGS filled the flags member of the union.
    unsafe {
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
    }
    ioctl(&fd, libc::SIOCSIFFLAGS, &mut req)
}
