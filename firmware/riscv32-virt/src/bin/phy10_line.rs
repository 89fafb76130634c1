//! The soft-PHY image for QEMU's riscv32 `virt` machine: the MCU is its own 10BASE-T PHY.
//! Line samples come in as captures (a virtio-net device stands in for the sampler's DMA:
//! `linklab_virtio_net::capture`), and the capture-complete interrupt takes a grant of the
//! MAC's RX queue and runs linklab-phy10's `RxInterrupt` on the capture straight into it,
//! committing the bytes after the SFD (FCS included) or cancelling; the MAC checks the FCS
//! (`MacConfig::decoding_phy`). To transmit, linklab-phy10's encoder writes the MAC's wire
//! bytes (preamble, SFD, frame, FCS) as Manchester samples at 2x (two cells per bit, as an
//! SPI/I2S TX DMA shifts them) into the sampler's transmit buffer. Above the MAC, the same
//! main loop, smoltcp and apps as every linklab image; `/stats` adds the PHY's counters.
//!
//! The other end of the sampler is `linklab emu riscv32-virt --image soft-phy`, which puts frames from a TAP
//! on the line and decodes what this image sends.
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;
use core::sync::atomic::{AtomicBool, Ordering};

use fw_riscv32_virt::board::{
    halt, handle_trap, report_panic, virtio_slots, VirtBoard, CONFIG_ADDR,
};
use fw_riscv32_virt::{cpu, plic, timer, uart};
use linklab_firmware::stats::PhyFigures;
use linklab_firmware::RX_QUEUE;
use linklab_mac::PhyTx;
use linklab_phy10::{encode_frame, Capture, Oversample, RxInterrupt};
use linklab_virtio_net::capture::CaptureDevice;
use linklab_virtio_net::{probe, InitError, Slot};

/// Words of one capture buffer: a 1530-byte transmission (preamble, SFD, a VLAN-tagged
/// full-length frame, FCS) at 8x with the transmitter 2 % fast, its idle tail, and the
/// 3-word virtio header: 12.8 KB. `linklab emu` sends nothing longer.
const RX_WORDS: usize = 3200;
/// Words of one transmit buffer: the same transmission at 2x plus TP_IDL, and the header.
const TX_WORDS: usize = 800;
/// The transmitter's factor: two cells per bit, exact half-bit edges.
const TX_OVERSAMPLE: Oversample = Oversample::X2;

/// Where the sampler's configuration sits: `PHY1` then the oversampling factor (written by
/// `linklab emu riscv32-virt --image soft-phy` after the device's configuration blob).
const PHY_CONFIG_ADDR: usize = CONFIG_ADDR + 0x80;
/// The factor when no configuration was given.
const DEFAULT_OVERSAMPLE: u8 = 4;

type Sampler = CaptureDevice<RX_WORDS, TX_WORDS>;

/// The sampler and the receive interrupt's PHY half, shared by the trap handler (RX) and the
/// main loop (TX, interrupts masked).
struct Phy {
    sampler: Sampler,
    rx: RxInterrupt,
    tx_frames: u64,
}

struct Shared(UnsafeCell<MaybeUninit<Phy>>);
// SAFETY: single hart; every access is in the trap handler (interrupts off) or inside
// `cpu::without_interrupts`, and only after `PHY_READY` is set.
unsafe impl Sync for Shared {}
static PHY: Shared = Shared(UnsafeCell::new(MaybeUninit::uninit()));
static PHY_READY: AtomicBool = AtomicBool::new(false);

/// Brings the sampler in `slot` up and builds the PHY in `place`, field by field, so that
/// the sampler's buffers (77 KB) are zeroed where they live: built by value and moved into
/// the static, they held 77 KB of `main_entry`'s frame for the firmware's life.
///
/// # Safety
/// `slot` is the sampler, used by nothing else; nothing else reaches `place` meanwhile.
unsafe fn build_phy(
    place: &mut MaybeUninit<Phy>,
    slot: Slot,
    os: Oversample,
) -> Result<&mut Phy, InitError> {
    let at = place.as_mut_ptr();
    // SAFETY: `at` points to the (uninitialised) PHY; each field is written once, through a
    // raw pointer and without reading it, before the whole is assumed initialised; the
    // sampler's contract is forwarded from the caller.
    unsafe {
        Sampler::new_in(&mut *addr_of_mut!((*at).sampler).cast(), slot)?;
        addr_of_mut!((*at).rx).write(RxInterrupt::new(os));
        addr_of_mut!((*at).tx_frames).write(0);
        Ok(place.assume_init_mut())
    }
}

/// Runs `f` on the PHY with interrupts masked (None before it is up).
fn with_phy<R>(f: impl FnOnce(&mut Phy) -> R) -> Option<R> {
    cpu::without_interrupts(|| {
        if PHY_READY.load(Ordering::Acquire) {
            // SAFETY: initialised (PHY_READY) and not aliased: interrupts are masked.
            Some(f(unsafe { (*PHY.0.get()).assume_init_mut() }))
        } else {
            None
        }
    })
}

/// The PHY's counters for `/stats`.
fn phy_figures() -> PhyFigures {
    with_phy(|p| {
        let rx = p.rx.counters();
        let s = p.sampler.counters();
        PhyFigures {
            captures: rx.frames + rx.truncated + rx.empty + rx.link_pulses + rx.noise + rx.missed,
            frames: rx.frames,
            truncated: rx.truncated,
            empty: rx.empty,
            link_pulses: rx.link_pulses,
            noise: rx.noise,
            missed: rx.missed,
            bad_captures: s.bad_length,
            tx_frames: p.tx_frames,
            tx_dropped: s.tx_dropped,
        }
    })
    .unwrap_or_default()
}

/// The capture-complete interrupt: each capture decoded straight into a MAC grant.
fn on_captures(phy: &mut Phy) {
    let rx = &mut phy.rx;
    phy.sampler.on_interrupt(|words, samples| {
        let capture = Capture::new(words, samples);
        let producer = RX_QUEUE.producer();
        match producer.grant() {
            // A frame (or one cut short) is committed, FCS included; 0 cancels.
            Ok(mut grant) => {
                let n = rx.receive(&capture, grant.buf());
                grant.commit(n);
            }
            Err(_) => {
                if rx.receive_without_grant(&capture) {
                    producer.record_missed();
                }
            }
        }
    });
}

/// The trap handler (called from `entry.S` with interrupts off).
#[no_mangle]
extern "C" fn trap_handler() {
    handle_trap(|irq| {
        if PHY_READY.load(Ordering::Acquire) {
            // SAFETY: as in `with_phy`; we are in the trap handler.
            let phy = unsafe { (*PHY.0.get()).assume_init_mut() };
            if irq == phy.sampler.irq() {
                on_captures(phy);
            }
        }
    });
}

/// The MAC's transmit side: the wire bytes Manchester-encoded into the sampler's transmit
/// buffer (interrupts masked while the shared device is touched).
struct EncodingTx;

impl PhyTx for EncodingTx {
    fn transmit(&mut self, wire: &[u8]) {
        with_phy(|p| {
            let mut encoded = false;
            p.sampler.transmit_with(|words| {
                let n = encode_frame(wire, TX_OVERSAMPLE, words).ok();
                encoded = n.is_some();
                n
            });
            if encoded {
                p.tx_frames += 1;
            }
        });
    }
}

/// The sampler's factor from the configuration `linklab emu` wrote, else the default.
fn oversample() -> Oversample {
    let mut blob = [0u8; 5];
    for (i, b) in blob.iter_mut().enumerate() {
        // SAFETY: RAM inside the region the linker script keeps free for the blobs.
        *b = unsafe { core::ptr::read_volatile((PHY_CONFIG_ADDR + i) as *const u8) };
    }
    let factor = if &blob[..4] == b"PHY1" {
        blob[4]
    } else {
        DEFAULT_OVERSAMPLE
    };
    match Oversample::new(factor) {
        Some(os) if factor >= 4 => os,
        _ => {
            uart::write("linklab firmware: sampler factor out of 4..=8, using 4\n");
            Oversample::X4
        }
    }
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let mut board = VirtBoard {
        nic_ready: &PHY_READY,
        phy: Some(phy_figures),
    };
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut board, CONFIG_ADDR) };
    let os = oversample();
    // SAFETY: the virtio-mmio window of `virt`; unused slots read zero.
    let Some(slot) = (unsafe { probe(virtio_slots()) }) else {
        uart::write("linklab firmware: no sampler (-device virtio-net-device)\n");
        halt();
    };
    // SAFETY: found by probe, brought up once; interrupts are still off and PHY_READY is
    // not set: the only reference to PHY.
    let phy = match unsafe { build_phy(&mut *PHY.0.get(), slot, os) } {
        Ok(phy) => phy,
        Err(_) => {
            uart::write("linklab firmware: the sampler (virtio-net) refused the driver\n");
            halt();
        }
    };
    if phy.sampler.start().is_err() {
        uart::write("linklab firmware: cannot post the capture buffers\n");
        halt();
    }
    plic::enable(slot.irq);
    PHY_READY.store(true, Ordering::Release);
    timer::disarm();
    cpu::enable_machine_interrupts();
    let digit = [b'0' + os.get()];
    uart::write("linklab firmware: soft PHY, linklab-phy10 decoding at ");
    uart::write(core::str::from_utf8(&digit).unwrap_or("?"));
    uart::write("x\n");
    linklab_firmware::run_soft_phy(board, EncodingTx, config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    report_panic(info)
}
