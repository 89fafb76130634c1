//! Puts the linker script where the linker finds it, for this crate only.
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("link.x", out.join("link.x")).expect("copy link.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    // The embassy image logs through defmt: its table goes in the ELF's .defmt section.
    println!("cargo:rustc-link-arg-bin=fw-riscv32-virt-embassy=-Tdefmt.x");
    // The minimal image, built for size, folds identical functions (lld's ICF; firmware
    // README, "The minimal image's profile"): Rust promises no function an address of its own.
    println!("cargo:rustc-link-arg-bin=fw-riscv32-virt-minimal=--icf=all");
    println!("cargo:rerun-if-changed=link.x");
}
