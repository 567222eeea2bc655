//! include/savechain.h is what cbindgen makes of src/ today: a change to the ABI changes
//! the header in the same commit. `SAVECHAIN_BLESS=1 cargo test -p savechain-c --test
//! header` rewrites it.

use std::path::Path;

#[test]
fn the_header_is_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let config = cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).unwrap();
    let mut made = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen reads src/")
        .write(&mut made);
    let path = crate_dir.join("include/savechain.h");
    if std::env::var_os("SAVECHAIN_BLESS").is_some() {
        std::fs::write(&path, &made).unwrap();
        return;
    }
    let checked_in = std::fs::read(&path).unwrap_or_default();
    assert!(
        checked_in == made,
        "include/savechain.h is not what cbindgen makes of src/: run \
         SAVECHAIN_BLESS=1 cargo test -p savechain-c --test header, and read the difference"
    );
}
