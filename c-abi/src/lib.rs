//! savechain for C and C++ engines: a C ABI over the library, declared in
//! `include/savechain.h` (made from these sources by cbindgen; `tests/header.rs` checks it
//! is up to date).
//!
//! Every call that can fail returns a `savechain_status` and, given a non-NULL
//! `savechain_error **`, stores there an error the caller frees (NULL on success). Every
//! object handed out has its free function. No panic crosses the boundary: one is caught
//! and returned as `SAVECHAIN_ERROR_INTERNAL`. The library keeps no global state a
//! caller sees: a chain is an object of its own, and each upgrade runs its Lua steps in
//! sandboxes of its own.

mod args;
mod chain;
mod codec;
mod error;
mod head;
mod store;
mod strings;
mod text;
mod upgrade;
mod version;

pub use chain::{
    savechain_chain, savechain_chain_add_mods, savechain_chain_free, savechain_chain_latest,
    savechain_chain_new, savechain_chain_oldest, savechain_chain_set_game,
    savechain_chain_set_limits,
};
pub use codec::{SAVECHAIN_CODEC_GZIP, SAVECHAIN_CODEC_NONE, SAVECHAIN_CODEC_ZSTD};
pub use error::{
    savechain_error, savechain_error_free, savechain_lua_failure, savechain_status,
    savechain_status_name,
};
pub use head::{savechain_head, savechain_read_head};
pub use store::{savechain_store_file, savechain_store_file_compressed};
pub use text::{
    savechain_format, savechain_read_meta, savechain_text_free, SAVECHAIN_COMPACT,
    SAVECHAIN_DECIMAL, SAVECHAIN_PRETTY,
};
pub use upgrade::{
    savechain_mod, savechain_report, savechain_report_free, savechain_step, savechain_upgrade_file,
    savechain_upgrade_text, SAVECHAIN_COMPRESS_GZIP, SAVECHAIN_COMPRESS_NONE,
    SAVECHAIN_COMPRESS_ZSTD, SAVECHAIN_DRY_RUN, SAVECHAIN_KEEP_GOING, SAVECHAIN_REPLACE_OUTPUT,
    SAVECHAIN_STRICT,
};
pub use version::{
    SAVECHAIN_ABI_VERSION, SAVECHAIN_FORMAT_REVISION, SAVECHAIN_VERSION_MAJOR,
    SAVECHAIN_VERSION_MINOR, SAVECHAIN_VERSION_NUMBER, SAVECHAIN_VERSION_PATCH,
};

/// The version of savechain this library is, as a NUL-terminated string ("0.1.0"), static:
/// the library's own, where `SAVECHAIN_VERSION` is the header's.
#[no_mangle]
pub extern "C" fn savechain_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// The header's version macros are the crate's version, and its format revision the
// library's: a release that changes one and not the other does not build.
const _: () = {
    const fn number(digits: &str) -> u32 {
        let bytes = digits.as_bytes();
        let mut value = 0;
        let mut i = 0;
        while i < bytes.len() {
            assert!(bytes[i].is_ascii_digit(), "a version part is digits");
            value = value * 10 + (bytes[i] - b'0') as u32;
            i += 1;
        }
        value
    }
    // Whether `needle` is somewhere in `haystack`.
    const fn contains(haystack: &str, needle: &str) -> bool {
        let (haystack, needle) = (haystack.as_bytes(), needle.as_bytes());
        let mut start = 0;
        while start + needle.len() <= haystack.len() {
            let mut i = 0;
            while i < needle.len() && haystack[start + i] == needle[i] {
                i += 1;
            }
            if i == needle.len() {
                return true;
            }
            start += 1;
        }
        false
    }
    assert!(
        contains(
            include_str!("../cbindgen.toml"),
            concat!(
                "\n#define SAVECHAIN_VERSION \"",
                env!("CARGO_PKG_VERSION"),
                "\""
            )
        ),
        "cbindgen.toml's SAVECHAIN_VERSION is not the crate's version"
    );
    assert!(
        SAVECHAIN_VERSION_MAJOR == number(env!("CARGO_PKG_VERSION_MAJOR")),
        "SAVECHAIN_VERSION_MAJOR (src/version.rs) is not the crate's"
    );
    assert!(
        SAVECHAIN_VERSION_MINOR == number(env!("CARGO_PKG_VERSION_MINOR")),
        "SAVECHAIN_VERSION_MINOR (src/version.rs) is not the crate's"
    );
    assert!(
        SAVECHAIN_VERSION_PATCH == number(env!("CARGO_PKG_VERSION_PATCH")),
        "SAVECHAIN_VERSION_PATCH (src/version.rs) is not the crate's"
    );
    assert!(
        SAVECHAIN_FORMAT_REVISION as u64 == savechain::FORMAT_REVISION,
        "SAVECHAIN_FORMAT_REVISION (src/version.rs) is not the library's format revision"
    );
    assert!(
        SAVECHAIN_VERSION_NUMBER
            == SAVECHAIN_VERSION_MAJOR * 1_000_000
                + SAVECHAIN_VERSION_MINOR * 1000
                + SAVECHAIN_VERSION_PATCH,
        "SAVECHAIN_VERSION_NUMBER (src/version.rs) is not major * 1000000 + minor * 1000 + patch"
    );
};

// A chain is used by many threads at once (the header says so).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<savechain::upgrade::Chain>();
};
