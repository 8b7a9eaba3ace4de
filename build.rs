//! Link options for the release binary (and the `profiling` build, which
//! inherits the release profile): they make the program file smaller
//! without touching the code the compiler produced. See the README,
//! "Performance", "Binary size", for what each bought.
//!
//! - `--icf=all`: functions the linker finds identical, byte for byte, are
//!   kept once (generic code instantiated for types with the same layout
//!   often is). Rust gives no function two promises of a distinct address.
//! - `-z pack-relative-relocs`: the relocations a position-independent
//!   program needs at load are stored packed (DT_RELR) instead of 24 bytes
//!   each; glibc 2.36 or later reads them (Debian 12 and later).
//!
//! Both are options of LLD, Rust's default linker on x86-64 Linux; the
//! debug build links as before, so `cargo test` is unchanged.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    if release && linux {
        println!("cargo::rustc-link-arg-bins=-Wl,--icf=all");
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}
