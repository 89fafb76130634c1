//! Destination address filter: own unicast, broadcast, a multicast list, promiscuous.

use crate::frame::MacAddr;

/// Maximum number of multicast addresses in the filter list.
pub const MAX_MULTICAST: usize = 16;

/// The multicast list is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FilterFull;

/// Decides which good frames the MAC passes to the stack, by destination address.
#[derive(Clone, Debug)]
pub struct AddressFilter {
    /// Our own unicast address.
    pub address: MacAddr,
    /// Accept every frame (a bridge, a capture).
    pub promiscuous: bool,
    /// Accept every group address (e.g. for IPv6 neighbour discovery).
    pub all_multicast: bool,
    /// Accept broadcast (on by default).
    pub broadcast: bool,
    multicast: [MacAddr; MAX_MULTICAST],
    multicast_len: usize,
}

impl AddressFilter {
    /// Own address and broadcast; no multicast; not promiscuous.
    pub const fn new(address: MacAddr) -> Self {
        AddressFilter {
            address,
            promiscuous: false,
            all_multicast: false,
            broadcast: true,
            multicast: [MacAddr([0; 6]); MAX_MULTICAST],
            multicast_len: 0,
        }
    }

    /// Adds a group address to the list (no-op if present).
    pub fn add_multicast(&mut self, addr: MacAddr) -> Result<(), FilterFull> {
        if self.multicast().contains(&addr) {
            return Ok(());
        }
        let slot = self
            .multicast
            .get_mut(self.multicast_len)
            .ok_or(FilterFull)?;
        *slot = addr;
        self.multicast_len += 1;
        Ok(())
    }

    /// Removes a group address from the list; returns whether it was there.
    pub fn remove_multicast(&mut self, addr: MacAddr) -> bool {
        let len = self.multicast_len;
        match self.multicast[..len].iter().position(|a| *a == addr) {
            Some(i) => {
                self.multicast.copy_within(i + 1..len, i);
                self.multicast_len -= 1;
                true
            }
            None => false,
        }
    }

    /// The current multicast list.
    pub fn multicast(&self) -> &[MacAddr] {
        &self.multicast[..self.multicast_len]
    }

    /// True if a frame to `dst` is for us.
    pub fn accepts(&self, dst: MacAddr) -> bool {
        if self.promiscuous || dst == self.address {
            return true;
        }
        if dst.is_broadcast() {
            return self.broadcast;
        }
        dst.is_multicast() && (self.all_multicast || self.multicast().contains(&dst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_rules() {
        let me = MacAddr([2, 0, 0, 0, 0, 1]);
        let other = MacAddr([2, 0, 0, 0, 0, 2]);
        let group = MacAddr([0x01, 0x00, 0x5E, 0, 0, 1]);
        let mut f = AddressFilter::new(me);
        assert!(f.accepts(me));
        assert!(f.accepts(MacAddr::BROADCAST));
        assert!(!f.accepts(other));
        assert!(!f.accepts(group));
        f.add_multicast(group).unwrap();
        assert!(f.accepts(group));
        assert!(f.remove_multicast(group));
        assert!(!f.accepts(group));
        f.all_multicast = true;
        assert!(f.accepts(group));
        f.broadcast = false;
        assert!(!f.accepts(MacAddr::BROADCAST));
        f.promiscuous = true;
        assert!(f.accepts(other) && f.accepts(MacAddr::BROADCAST));
        let mut f = AddressFilter::new(me);
        for i in 0..MAX_MULTICAST {
            f.add_multicast(MacAddr([1, 0, 0, 0, 0, i as u8])).unwrap();
        }
        assert_eq!(
            f.add_multicast(MacAddr([1, 0, 0, 0, 1, 0])),
            Err(FilterFull)
        );
    }
}
