//! Puts memory.x (and an empty device.x) where cortex-m-rt's link.x finds them, for this
//! crate only.
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("memory.x", out.join("memory.x")).expect("copy memory.x");
    // cortex-m-rt's `device` feature includes device.x for the handlers' weak aliases; the
    // board's own table (src/lib.rs's __INTERRUPTS) names DefaultHandler alone.
    std::fs::write(
        out.join("device.x"),
        "/* mps2-an385: every device interrupt goes to DefaultHandler (src/lib.rs). */\n",
    )
    .expect("write device.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    // The embassy image logs through defmt: its table goes in the ELF's .defmt section.
    println!("cargo:rustc-link-arg-bin=fw-mps2-an385-embassy=-Tdefmt.x");
    // The minimal and compact images, built for size, fold identical functions (lld's ICF;
    // firmware README, "The minimal image's profile"): Rust promises no function an address
    // of its own.
    for bin in ["fw-mps2-an385-minimal", "fw-mps2-an385-compact"] {
        println!("cargo:rustc-link-arg-bin={bin}=--icf=all");
    }
    println!("cargo:rerun-if-changed=memory.x");
}
