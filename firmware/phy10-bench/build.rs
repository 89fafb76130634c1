//! Links with the riscv32 virt board's linker script (the bring-up this image reuses).
use std::path::PathBuf;

fn main() {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::copy("../riscv32-virt/link.x", out.join("link.x")).expect("copy link.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rustc-link-arg=-Tlink.x");
    println!("cargo:rerun-if-changed=../riscv32-virt/link.x");
}
