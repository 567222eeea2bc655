//! Puts Lua inside libsavechain_c.a, and names the shared library's ABI.
//!
//! The library's Lua (mlua's `vendored`, built by lua-src) is linked "unbundled": a Rust
//! program gets it from its build folder, but a static library would leave it out, and a C
//! program linking libsavechain_c.a would need an archive from deep inside target/. So this
//! crate builds the same Lua sources (the same lua-src release as mlua's) once more and
//! bundles that archive, under a name of its own: the static library is then whole, and the
//! shared library takes its Lua from either copy (the linker pulls each object once; none
//! of Lua's symbols are exported).
//!
//! On Linux the shared library's soname is `libsavechain.so.<ABI>`, the name it is
//! installed under (install.sh), so that a program linked against it loads only a library
//! of the same ABI.

// The header's version constants: SAVECHAIN_ABI_VERSION, the one the soname carries.
#[allow(dead_code)]
mod version {
    include!("src/version.rs");
}

fn main() {
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let artifacts = lua_src::Build::new()
        .out_dir(out.join("lua"))
        .build(lua_src::Lua54);
    let built = artifacts.lib_dir().join("liblua5.4.a");
    let ours = out.join("libsavechain_lua54.a");
    std::fs::copy(&built, &ours).expect("lua-src built liblua5.4.a");
    println!("cargo:rustc-link-search=native={}", out.display());
    println!("cargo:rustc-link-lib=static:+bundle=savechain_lua54");

    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!(
            "cargo:rustc-cdylib-link-arg=-Wl,-soname,libsavechain.so.{}",
            version::SAVECHAIN_ABI_VERSION
        );
    }
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/version.rs");
}
