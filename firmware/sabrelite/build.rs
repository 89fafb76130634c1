//! Links every image with sabrelite.x (the board's memory, then linklab-cortex-a9's
//! sections); the embassy image also with defmt's table, the minimal one with lld's
//! identical-code folding (firmware README, "The minimal image's profile").
fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    std::fs::write(out.join("sabrelite.x"), include_bytes!("sabrelite.x"))
        .expect("write sabrelite.x");
    println!("cargo:rustc-link-search={}", out.display());
    let args = [
        ("", "-Tsabrelite.x"),
        ("fw-sabrelite-embassy", "-Tdefmt.x"),
        ("fw-sabrelite-minimal", "--icf=all"),
    ];
    for (bin, arg) in args {
        match bin {
            "" => println!("cargo:rustc-link-arg-bins={arg}"),
            _ => println!("cargo:rustc-link-arg-bin={bin}={arg}"),
        }
    }
    println!("cargo:rerun-if-changed=sabrelite.x");
}
