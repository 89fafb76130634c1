//! Picks the machine by the target: riscv32imac links with the riscv32 virt board's linker
//! script (the bring-up this image reuses); thumbv6m (QEMU `microbit`) and thumbv8m.main
//! (QEMU `mps2-an505`) with cortex-m-rt's link.x over the machine's memory map. Sets
//! `cfg(phy10_machine = "...")` for src/main.rs.
use std::path::PathBuf;

/// microbit (nRF51822): 256 KiB flash at 0, 16 KiB RAM.
const MICROBIT_MEMORY: &str = "MEMORY\n{\n  FLASH : ORIGIN = 0x00000000, LENGTH = 256K\n  RAM : ORIGIN = 0x20000000, LENGTH = 16K\n}\n";
/// mps2-an505 booted secure: code SSRAM1 through its secure alias (0x1000_0000, where QEMU
/// starts the core), 4 MiB of data SSRAM2/3 through theirs (0x3800_0000).
const MPS2_AN505_MEMORY: &str = "MEMORY\n{\n  FLASH : ORIGIN = 0x10000000, LENGTH = 4M\n  RAM : ORIGIN = 0x38000000, LENGTH = 4M\n}\n";

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let target = std::env::var("TARGET").expect("TARGET");
    println!("cargo::rustc-check-cfg=cfg(phy10_machine, values(\"riscv32-virt\", \"microbit\", \"mps2-an505\"))");
    let memory = if target.starts_with("riscv32") {
        std::fs::copy("../riscv32-virt/link.x", out.join("link.x")).expect("copy link.x");
        println!("cargo:rustc-cfg=phy10_machine=\"riscv32-virt\"");
        None
    } else if target.starts_with("thumbv6m") {
        println!("cargo:rustc-cfg=phy10_machine=\"microbit\"");
        Some(MICROBIT_MEMORY)
    } else if target.starts_with("thumbv8m.main") {
        println!("cargo:rustc-cfg=phy10_machine=\"mps2-an505\"");
        Some(MPS2_AN505_MEMORY)
    } else {
        panic!(
            "fw-phy10-bench: no machine for target {target} (riscv32imac, thumbv6m, thumbv8m.main)"
        );
    };
    if let Some(memory) = memory {
        std::fs::write(out.join("memory.x"), memory).expect("write memory.x");
    }
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    println!("cargo:rerun-if-changed=../riscv32-virt/link.x");
    println!("cargo:rerun-if-changed=build.rs");
}
