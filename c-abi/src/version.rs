// The version macros of savechain.h, but SAVECHAIN_VERSION: cbindgen makes no macro of a
// string, so that one is written in cbindgen.toml. build.rs includes this file too (the
// soname carries SAVECHAIN_ABI_VERSION), so it holds constants alone; lib.rs checks them,
// and cbindgen.toml's string, against the crate's version when it compiles.

/// The major part of `SAVECHAIN_VERSION` (the string "0.1.0", in the header's first lines).
pub const SAVECHAIN_VERSION_MAJOR: u32 = 0;

/// The minor part of `SAVECHAIN_VERSION`.
pub const SAVECHAIN_VERSION_MINOR: u32 = 1;

/// The patch part of `SAVECHAIN_VERSION`.
pub const SAVECHAIN_VERSION_PATCH: u32 = 0;

/// `SAVECHAIN_VERSION` as one number, major * 1000000 + minor * 1000 + patch, for `#if
/// SAVECHAIN_VERSION_NUMBER >= 1000`.
pub const SAVECHAIN_VERSION_NUMBER: u32 = 1000;

/// The major version of this C ABI: raised whenever a function, struct or enum value of
/// this header is removed or changed, never when one is added. It is the number in the
/// shared library's soname (`libsavechain.so.0`), so a program linked against one ABI
/// never loads a library of another.
pub const SAVECHAIN_ABI_VERSION: u32 = 0;

/// The revision of the save format (docs/FORMAT.md) this library reads and writes.
pub const SAVECHAIN_FORMAT_REVISION: u32 = 3;
