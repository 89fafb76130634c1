//! Puts the linker script where the linker finds it and links with it.
fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("zynq7000.x"), include_bytes!("zynq7000.x")).expect("write zynq7000.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg-bins=-Tzynq7000.x");
    // The embassy image logs through defmt: its table goes in the ELF's .defmt section.
    println!("cargo:rustc-link-arg-bin=fw-zynq7000-embassy=-Tdefmt.x");
    // The minimal image, built for size, folds identical functions (lld's ICF; firmware
    // README, "The minimal image's profile"): Rust promises no function an address of its own.
    println!("cargo:rustc-link-arg-bin=fw-zynq7000-minimal=--icf=all");
    println!("cargo:rerun-if-changed=zynq7000.x");
}
