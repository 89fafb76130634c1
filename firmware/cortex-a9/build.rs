//! Puts the shared sections (`cortex-a9.x`) where the linker finds them: a board's linker
//! script defines its MEMORY regions RAM and UNCACHED, then `INCLUDE cortex-a9.x`.
fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("cortex-a9.x"), include_bytes!("cortex-a9.x"))
        .expect("write cortex-a9.x");
    println!("cargo:rustc-link-search={}", out.display());
    println!("cargo:rerun-if-changed=cortex-a9.x");
}
