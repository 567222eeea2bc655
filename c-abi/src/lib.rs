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

/// The version of savechain this library is, as a NUL-terminated string ("0.1.0"), static.
#[no_mangle]
pub extern "C" fn savechain_version() -> *const std::ffi::c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

// A chain is used by many threads at once (the header says so).
const _: () = {
    const fn shared<T: Send + Sync>() {}
    shared::<savechain::upgrade::Chain>();
};
