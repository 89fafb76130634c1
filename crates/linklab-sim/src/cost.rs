//! The device's MCU cost model: what each part of the device's work costs in time. The
//! write-up's profiles set it from quoted times ([`crate::profile`]); a counted profile is
//! data ([`crate::counts`]) that [`CostModel::counted`] turns into time at a clock.
//!
//! The device CPU is one resource. An interrupt preempts the main loop; the main loop
//! (smoltcp + the application) runs only when no interrupt runs. With a bit-banged PHY the
//! receive interrupt samples the whole frame (the CPU is busy from the interrupt's entry to
//! the frame's last bit) and transmitting a frame keeps the CPU busy for the frame's wire
//! time; a DMA PHY does neither.

use crate::counts::{Clock, CountedProfile, LoopShape};

/// How the PHY moves bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhyKind {
    /// The CPU samples/drives the line itself (Niccle): frames occupy the CPU.
    BitBanged,
    /// A DMA engine moves the bits; the CPU only runs the post-processing interrupt.
    Dma,
}

/// The device's cost model (all times in nanoseconds, per-byte costs in picoseconds).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct CostModel {
    /// Bit-banged or DMA PHY.
    pub phy: PhyKind,
    /// Time from the first edge of a transmission to the first instruction of the RX
    /// interrupt (ns).
    pub irq_latency_ns: u64,
    /// RX interrupt post-processing after the frame's last bit: fixed part (ns).
    pub isr_fixed_ns: u64,
    /// RX interrupt post-processing: per captured byte (ps).
    pub isr_per_byte_ps: u64,
    /// Main loop (smoltcp + application) per received frame or timer poll: fixed part (ns).
    pub main_fixed_ns: u64,
    /// Main loop per received frame on top of `main_fixed_ns` (ns; 0 in the Niccle profiles,
    /// whose fitted fixed part covers both).
    pub main_rx_frame_ns: u64,
    /// Main loop per received byte (ps).
    pub main_per_byte_ps: u64,
    /// Per transmitted frame (smoltcp egress, MAC, driver; ns), paid by the CPU after the
    /// iteration that made it and before the frame leaves (0 in the Niccle profiles).
    pub tx_frame_ns: u64,
    /// Per transmitted byte (ps; 0 in the Niccle profiles).
    pub tx_per_byte_ps: u64,
    /// One main-loop pass ingests every frame committed when it starts, paying
    /// `main_fixed_ns` once (linklab's firmware); false: one frame per pass (the Niccle fit,
    /// whose fixed cost was fitted per frame).
    pub rx_batch: bool,
    /// When what the apps queue leaves: in the same pass (linklab's main loop) or in the
    /// next (an embassy executor, whose runner sends before the apps' tasks run).
    pub shape: LoopShape,
}

/// What a counted profile's time depends on besides the counts and the clock: the
/// transfer the device runs.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Workload {
    /// Share of the received frame bytes the device copies off their word (0..=1; the
    /// firmware counts it per transfer: the receive figure's slow mode is ~1).
    pub rx_misaligned: f64,
    /// Share of the transmitted frame bytes copied off their word (0..=1).
    pub tx_misaligned: f64,
    /// The device's HTTP server generates what it sends (curl against it).
    pub http_sender: bool,
    /// A soft PHY decoding at this factor instead of the image's (`--phy samples
    /// --oversample N`).
    pub oversample: Option<u8>,
}

/// Bytes the simulator charges per frame beyond the frame itself: the counts are per frame
/// byte (Ethernet header through payload, as the MAC counts them), the simulator's interrupt
/// and transmit costs are charged on the wire image (+ preamble, SFD and FCS) and the main
/// loop's on the committed capture (+ one byte of bit shift): the fixed parts are lowered by
/// what the per-byte parts then add, so a frame costs what was counted.
const WIRE_EXTRA: f64 = 12.0;
/// See [`WIRE_EXTRA`]: a raw capture on the byte wire.
const CAPTURE_EXTRA: f64 = 13.0;

impl CostModel {
    /// RX interrupt post-processing time for `captured` bytes.
    pub fn isr_ns(&self, captured: usize) -> u64 {
        self.isr_fixed_ns + self.isr_per_byte_ps * captured as u64 / 1000
    }

    /// Main-loop time for one iteration that handles a received transmission of `len`
    /// bytes (0 for a timer poll).
    pub fn main_ns(&self, len: usize) -> u64 {
        if len == 0 {
            return self.main_fixed_ns;
        }
        self.main_fixed_ns + self.main_rx_frame_ns + self.main_per_byte_ps * len as u64 / 1000
    }

    /// CPU time for transmitting a frame of `len` bytes (beyond what the iteration cost).
    pub fn tx_ns(&self, len: usize) -> u64 {
        self.tx_frame_ns + self.tx_per_byte_ps * len as u64 / 1000
    }

    /// The cost model of a counted profile at `clock` for `work`: a DMA NIC (virtio-net, the
    /// LAN9118, or a soft PHY's capture DMA), no interrupt latency beyond the counted
    /// instructions. An error if `work` asks for a decoding factor that was not counted.
    pub fn counted(
        counts: &CountedProfile,
        clock: Clock,
        work: &Workload,
    ) -> Result<CostModel, String> {
        let p = &counts.parts;
        let mut isr_per_byte = p.isr_per_rx_byte;
        if let Some(factor) = work.oversample {
            let d = counts.decoder.as_ref().ok_or_else(|| {
                format!(
                    "profile {} decodes nothing: --oversample is for a soft PHY",
                    counts.profile
                )
            })?;
            let at = |f: u8| {
                d.per_bit(f).ok_or_else(|| {
                    let counted: Vec<String> =
                        d.per_wire_bit.iter().map(|(f, _)| f.to_string()).collect();
                    format!(
                        "--oversample {f}: the decoder was counted at {}x only",
                        counted.join("x, ")
                    )
                })
            };
            // The image's interrupt decoded at its own factor: swap that decoder for this one.
            isr_per_byte += (at(factor)? - at(d.image_oversample)?) * 8.0;
        }
        let rx_byte = p.main_per_rx_byte + work.rx_misaligned * p.main_per_misaligned_byte;
        let mut tx_byte = p.main_per_tx_byte + work.tx_misaligned * p.main_per_misaligned_byte;
        if work.http_sender {
            tx_byte += p.http_per_tx_byte;
        }
        let tx_frame = p.main_per_tx_frame + p.isr_per_tx_frame;
        Ok(CostModel {
            phy: PhyKind::Dma,
            irq_latency_ns: 0,
            isr_fixed_ns: clock.ns(p.isr_per_rx_frame - WIRE_EXTRA * isr_per_byte),
            isr_per_byte_ps: clock.ps(isr_per_byte),
            main_fixed_ns: clock.ns(p.main_per_pass),
            main_rx_frame_ns: clock.ns(p.main_per_rx_frame - CAPTURE_EXTRA * rx_byte),
            main_per_byte_ps: clock.ps(rx_byte),
            tx_frame_ns: clock.ns(tx_frame - WIRE_EXTRA * tx_byte),
            tx_per_byte_ps: clock.ps(tx_byte),
            rx_batch: true,
            shape: counts.device.shape,
        })
    }
}
