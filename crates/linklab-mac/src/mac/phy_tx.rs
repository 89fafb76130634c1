//! Where the MAC hands finished transmissions: [`PhyTx`].

#[cfg(doc)]
use crate::checksum;
#[cfg(doc)]
use crate::tx::TxFormat;

/// Where the MAC hands finished transmissions: the PHY (or a simulator's wire, or a TAP).
pub trait PhyTx {
    /// Sends one transmission; `wire` is exactly what goes out in the configured
    /// [`TxFormat`] (with preamble and FCS for [`TxFormat::Wire`]).
    fn transmit(&mut self, wire: &[u8]);

    /// Transmissions the PHY or driver dropped since start (no buffer or FIFO room in
    /// time), where it counts them; 0 where it does not.
    fn dropped(&mut self) -> u64 {
        0
    }

    /// True if a full-size transmission would be taken now without waiting or dropping
    /// (a free buffer, FIFO room); PHYs that cannot tell say true.
    fn ready(&mut self) -> bool {
        true
    }

    /// True if the PHY completes the TCP and UDP checksums of the IPv4 frames it is handed
    /// (a NIC with transmit checksum offload, e.g. virtio-net with `VIRTIO_NET_F_CSUM`):
    /// then the MAC's checksum offload writes only their pseudo-header sums
    /// ([`checksum::fill_partial`]) and the NIC finds them with
    /// [`checksum::l4_checksum_field`]. False (the default): the MAC fills them in.
    fn completes_l4_checksums(&mut self) -> bool {
        false
    }

    /// A buffer of at least `len` bytes that the PHY sends from (a DMA descriptor's), for
    /// the MAC to build the next transmission in place and then hand over with
    /// [`PhyTx::transmit_buffer`]: the frame is then never copied. None (the default, or no
    /// buffer free): the MAC builds it in its own buffer and calls [`PhyTx::transmit`].
    /// The buffer stays the MAC's until `transmit_buffer`; the MAC asks for no other
    /// meanwhile.
    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        let _ = len;
        None
    }

    /// Sends the first `len` bytes of the buffer [`PhyTx::tx_buffer`] lent last.
    fn transmit_buffer(&mut self, len: usize) {
        let _ = len;
    }
}

impl<F: FnMut(&[u8])> PhyTx for F {
    fn transmit(&mut self, wire: &[u8]) {
        self(wire)
    }
}
