//! Puts memory.x (the RP2350's boot blocks included) where cortex-m-rt's link.x finds it;
//! links defmt's table; sets `chip_rp2350` for the shared src/main.rs
//! (../rp2040-soft-phy/src/main.rs).
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    println!("cargo::rustc-check-cfg=cfg(chip_rp2350)");
    println!("cargo:rustc-cfg=chip_rp2350");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=--nmagic");
    println!("cargo:rustc-link-arg=-Tlink.x");
    println!("cargo:rustc-link-arg=-Tdefmt.x");
    println!("cargo:rerun-if-changed=memory.x");
}
