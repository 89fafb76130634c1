//! The Teensy 4.1's runtime: imxrt-rt's linker script for the i.MX RT1062 booting from the
//! board's 8 MB FlexSPI flash. The 512 KB of FlexRAM split 128 KB of ITCM (the code, copied
//! from flash at boot) and 384 KB of DTCM (statics and the stack: the data cache does not
//! cover DTCM, and the ENET's DMA reaches it, so the driver's rings and the RX queue need no
//! cache maintenance); defmt's table.
use imxrt_rt::{Family, FlexRamBanks, Memory, RuntimeBuilder};

fn main() {
    RuntimeBuilder::from_flexspi(Family::Imxrt1060, 8 * 1024 * 1024)
        .flexram_banks(FlexRamBanks {
            ocram: 0,
            itcm: 4,
            dtcm: 12,
        })
        .data(Memory::Dtcm)
        .bss(Memory::Dtcm)
        .uninit(Memory::Dtcm)
        .stack_size(32 * 1024)
        .build()
        .expect("imxrt-rt's linker script");
    println!("cargo:rustc-link-arg=-Timxrt-link.x");
    println!("cargo:rustc-link-arg=-Tdefmt.x");
}
