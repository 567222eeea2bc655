//! lua-cjson (Debian's `lua-cjson` package, a C module for Lua 5.4) loaded into the Lua
//! that savechain vendors, for benchmarks that set savechain beside it.
//!
//! ```text
//! apt-get install lua-cjson
//! RUSTFLAGS="-C link-arg=-rdynamic" cargo bench --bench lua
//! ```
//!
//! The module is a shared library that calls the Lua C API (`lua_pushnumber`, ...) and
//! expects the program that loads it to provide those functions. The vendored Lua is linked
//! into the bench binary statically, so the binary must export its symbols: it has to be
//! linked with `-rdynamic`, or `require("cjson")` fails with an undefined symbol. [`load`]
//! says why it failed; the benches then leave lua-cjson out rather than fail.
//!
//! lua-cjson allocates its own buffers with the C `malloc` (the whole input's length as a
//! scratch buffer when decoding, the growing output when encoding), outside Lua's heap and
//! Rust's allocator. [`count_c_allocations`] routes its `malloc`, `realloc`, `calloc` and
//! `free` to the counting stand-ins of `support/alloc.rs`, by rewriting the module's
//! entries in its global offset table (Linux on x86-64 only; elsewhere those buffers are
//! not counted, and the benches say so).
//!
//! Benchmarks include this file with `#[path = "support/cjson.rs"] mod cjson;` (and
//! `support/alloc.rs` as `mod alloc`).

#![allow(dead_code)]

use mlua::{Function, Lua};

/// Where Debian's package puts the module (`cjson.so`), unless
/// `SAVECHAIN_BENCH_CJSON_DIR` says otherwise.
pub const DEFAULT_DIR: &str = "/usr/lib/x86_64-linux-gnu/lua/5.4";

/// lua-cjson in a Lua state of its own.
pub struct Cjson {
    pub lua: Lua,
    /// `cjson.decode`.
    pub decode: Function,
    /// `cjson.encode`.
    pub encode: Function,
    /// `cjson._VERSION`.
    pub version: String,
    /// How many of the module's references to the C allocator now go through the counting
    /// allocator, or why none do.
    pub c_allocations: Result<usize, String>,
}

/// The folder to load `cjson.so` from.
pub fn dir() -> String {
    std::env::var("SAVECHAIN_BENCH_CJSON_DIR").unwrap_or_else(|_| DEFAULT_DIR.to_string())
}

/// Loads lua-cjson into a new Lua state (the vendored Lua, with C modules allowed), or
/// says why it cannot.
pub fn load() -> Result<Cjson, String> {
    let dir = dir();
    // SAFETY: a state that may load C modules; the only one loaded is lua-cjson, built for
    // Lua 5.4, the version vendored.
    let lua = unsafe { Lua::unsafe_new() };
    let package: mlua::Table = lua.globals().get("package").map_err(|e| e.to_string())?;
    package
        .set("cpath", format!("{dir}/?.so"))
        .map_err(|e| e.to_string())?;
    let loaded: mlua::Result<(Function, Function, String)> = lua
        .load("local cjson = require('cjson') return cjson.decode, cjson.encode, cjson._VERSION")
        .eval();
    let (decode, encode, version) = match loaded {
        Ok(found) => found,
        Err(e) => {
            let mut why =
                format!("require(\"cjson\") with package.cpath = \"{dir}/?.so\" failed: {e}");
            if why.contains("undefined symbol") {
                why.push_str(
                    "\n(the bench binary does not export Lua's symbols: build it with \
                     RUSTFLAGS=\"-C link-arg=-rdynamic\")",
                );
            } else if why.contains("not found") || why.contains("No such file") {
                why.push_str("\n(install it with `apt-get install lua-cjson`)");
            }
            return Err(why);
        }
    };
    let c_allocations = count_c_allocations("cjson");
    Ok(Cjson {
        lua,
        decode,
        encode,
        version,
        c_allocations,
    })
}

/// Routes the C allocator calls of the loaded shared object whose path contains `needle`
/// to the counting stand-ins of `support/alloc.rs`. Returns how many references were
/// rerouted (already rerouted ones count too).
pub fn count_c_allocations(needle: &str) -> Result<usize, String> {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        use super::alloc;
        use std::ffi::c_void;
        type Malloc = unsafe extern "C" fn(usize) -> *mut c_void;
        type Calloc = unsafe extern "C" fn(usize, usize) -> *mut c_void;
        type Realloc = unsafe extern "C" fn(*mut c_void, usize) -> *mut c_void;
        type Free = unsafe extern "C" fn(*mut c_void);
        let stand_ins: [(&[u8], usize); 4] = [
            (b"malloc", alloc::malloc as Malloc as usize),
            (b"calloc", alloc::calloc as Calloc as usize),
            (b"realloc", alloc::realloc as Realloc as usize),
            (b"free", alloc::free as Free as usize),
        ];
        // SAFETY: the object is loaded and stays loaded while its Lua state holds it;
        // its table entries for these functions are replaced by functions with the same
        // signatures that forward to them.
        unsafe { got::reroute(needle, &stand_ins) }
    }
    #[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
    {
        let _ = needle;
        Err("only on Linux on x86-64".to_string())
    }
}

/// Rewriting entries of a loaded shared object's global offset table: the object calls
/// `malloc` through a slot the dynamic linker filled with the address of the C library's
/// `malloc`; the slot is given another address.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod got {
    use std::ffi::{c_int, c_void, CStr};

    const DT_NULL: i64 = 0;
    const DT_PLTRELSZ: i64 = 2;
    const DT_STRTAB: i64 = 5;
    const DT_SYMTAB: i64 = 6;
    const DT_RELA: i64 = 7;
    const DT_RELASZ: i64 = 8;
    const DT_JMPREL: i64 = 23;
    const R_X86_64_GLOB_DAT: u64 = 6;
    const R_X86_64_JUMP_SLOT: u64 = 7;

    #[repr(C)]
    struct Dyn {
        tag: i64,
        val: u64,
    }

    #[repr(C)]
    struct Rela {
        offset: u64,
        info: u64,
        addend: i64,
    }

    #[repr(C)]
    struct Sym {
        name: u32,
        info: u8,
        other: u8,
        shndx: u16,
        value: u64,
        size: u64,
    }

    struct Search<'a> {
        needle: &'a str,
        /// Load address and dynamic section of each object found.
        found: Vec<(u64, *const Dyn)>,
    }

    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: usize,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: `data` is the `Search` passed to `dl_iterate_phdr`, `info` what the
        // dynamic linker describes the object with.
        let (search, info) = unsafe { (&mut *(data as *mut Search), &*info) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: a NUL-terminated path.
        let name = unsafe { CStr::from_ptr(info.dlpi_name) }.to_string_lossy();
        if !name.contains(search.needle) {
            return 0;
        }
        for i in 0..info.dlpi_phnum as usize {
            // SAFETY: `dlpi_phnum` program headers at `dlpi_phdr`.
            let ph = unsafe { &*info.dlpi_phdr.add(i) };
            if ph.p_type == libc::PT_DYNAMIC {
                search
                    .found
                    .push((info.dlpi_addr, (info.dlpi_addr + ph.p_vaddr) as *const Dyn));
            }
        }
        0
    }

    pub unsafe fn reroute(needle: &str, stand_ins: &[(&[u8], usize)]) -> Result<usize, String> {
        let mut search = Search {
            needle,
            found: Vec::new(),
        };
        // SAFETY: `visit` reads what it is given and writes only `search`.
        unsafe { libc::dl_iterate_phdr(Some(visit), &mut search as *mut Search as *mut c_void) };
        let Some(&(base, dynamic)) = search.found.first() else {
            return Err(format!("no loaded object's path contains {needle:?}"));
        };
        // The dynamic linker has made most addresses in the dynamic section absolute;
        // an address below the load address is still relative.
        let abs = |p: u64| if p < base { p + base } else { p };
        let (mut strtab, mut symtab) = (0, 0);
        let (mut rela, mut relasz, mut jmprel, mut pltrelsz) = (0, 0, 0, 0);
        let mut entry = dynamic;
        loop {
            // SAFETY: the dynamic section, ended by DT_NULL.
            let d = unsafe { &*entry };
            match d.tag {
                DT_NULL => break,
                DT_STRTAB => strtab = abs(d.val),
                DT_SYMTAB => symtab = abs(d.val),
                DT_RELA => rela = abs(d.val),
                DT_RELASZ => relasz = d.val,
                DT_JMPREL => jmprel = abs(d.val),
                DT_PLTRELSZ => pltrelsz = d.val,
                _ => {}
            }
            // SAFETY: not past DT_NULL.
            entry = unsafe { entry.add(1) };
        }
        if strtab == 0 || symtab == 0 {
            return Err("the object has no dynamic symbol table".to_string());
        }
        // SAFETY: `sysconf` has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
        let mut rerouted = 0;
        for (table, size) in [(rela, relasz), (jmprel, pltrelsz)] {
            if table == 0 {
                continue;
            }
            let count = size as usize / std::mem::size_of::<Rela>();
            // SAFETY: the relocation table the dynamic section describes.
            let relocations = unsafe { std::slice::from_raw_parts(table as *const Rela, count) };
            for r in relocations {
                let kind = r.info & 0xffff_ffff;
                if kind != R_X86_64_GLOB_DAT && kind != R_X86_64_JUMP_SLOT {
                    continue;
                }
                // SAFETY: the symbol the relocation names, and its NUL-terminated name.
                let name = unsafe {
                    let sym = &*(symtab as *const Sym).add((r.info >> 32) as usize);
                    CStr::from_ptr((strtab + sym.name as u64) as *const libc::c_char)
                };
                let Some(&(_, to)) = stand_ins.iter().find(|(n, _)| *n == name.to_bytes()) else {
                    continue;
                };
                let slot = (base + r.offset) as *mut usize;
                let start = (slot as u64) & !(page - 1);
                let len = (slot as u64 + 8 - start) as usize;
                // SAFETY: the pages holding the slot (read-only after relocation with full
                // RELRO), made writable. They are left writable: without RELRO they may
                // share a page with the object's data, which must stay writable.
                unsafe {
                    if libc::mprotect(
                        start as *mut c_void,
                        len,
                        libc::PROT_READ | libc::PROT_WRITE,
                    ) != 0
                    {
                        return Err(format!("mprotect: {}", std::io::Error::last_os_error()));
                    }
                    slot.write_volatile(to);
                }
                rerouted += 1;
            }
        }
        if rerouted == 0 {
            return Err("the object calls none of malloc, calloc, realloc, free".to_string());
        }
        Ok(rerouted)
    }
}
