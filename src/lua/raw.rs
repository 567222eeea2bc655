//! Rust run on Lua's raw stack, with panics kept out of Lua's C frames, and the bytes of
//! the strings it finds there.

use std::ffi::c_int;
use std::panic::{self, AssertUnwindSafe};

use mlua::{ffi, FromLuaMulti, IntoLuaMulti, Lua};

use crate::error::Result;
use crate::text::scan::any_short_word;

/// Runs `f` on the raw stack of `lua`, `args` pushed at slots 1, 2, ...; returns what `f`
/// leaves on the stack, as `T`, and what `f` returned.
///
/// A panic in `f` is caught before it reaches Lua's C frames (the stack is emptied) and
/// resumed once out of them. A Lua error raised in `f` (running out of memory while making
/// tables) unwinds its frames by longjmp and comes back as an error.
///
/// # Safety
///
/// `f` and the frames it calls must own nothing with a destructor wherever a Lua function
/// it calls can raise an error: their state lives outside, in what the closure borrows.
pub(super) unsafe fn on_stack<T: FromLuaMulti, R>(
    lua: &Lua,
    args: impl IntoLuaMulti,
    f: impl FnOnce(*mut ffi::lua_State) -> R,
) -> Result<(T, R)> {
    let mut out = None;
    let mut panicked = None;
    let ran = lua.exec_raw::<T>(args, |state| {
        match panic::catch_unwind(AssertUnwindSafe(|| f(state))) {
            Ok(r) => out = Some(r),
            Err(payload) => {
                panicked = Some(payload);
                ffi::lua_settop(state, 0);
            }
        }
    });
    if let Some(payload) = panicked {
        panic::resume_unwind(payload);
    }
    let values = ran?;
    let out = out.expect("f returned, or a Lua error or a panic ended it");
    Ok((values, out))
}

/// The bytes of the Lua string at `idx`.
///
/// The slice borrows Lua's memory: valid while the string stays reachable (here, as a key
/// or value of a table nobody modifies during the walk, or on the stack).
pub(super) unsafe fn lua_bytes<'a>(l: *mut ffi::lua_State, idx: c_int) -> &'a [u8] {
    let mut len = 0usize;
    let p = ffi::lua_tolstring(l, idx, &mut len);
    std::slice::from_raw_parts(p.cast::<u8>(), len)
}

/// The bytes of a Lua string as text, if they are UTF-8. Short ASCII strings, nearly every
/// key and string of a save, are known to be with a word or two, without the UTF-8 check's
/// loop.
#[inline]
pub(super) fn as_text(bytes: &[u8]) -> Option<&str> {
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    if bytes.len() <= 16 && !any_short_word(bytes, |x| x & HIGHS) {
        // SAFETY: every byte is below 0x80, so the bytes are ASCII, which is UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::as_text;

    /// Every byte at every place of strings of 0 to 40 bytes, and characters of two to four
    /// bytes cut anywhere: text exactly where the bytes are UTF-8.
    #[test]
    fn as_text_is_utf8_exactly() {
        for len in 0..=40 {
            for at in 0..len {
                for b in 0..=255u8 {
                    let mut bytes = vec![b'x'; len];
                    bytes[at] = b;
                    assert_eq!(
                        as_text(&bytes),
                        std::str::from_utf8(&bytes).ok(),
                        "{bytes:?}"
                    );
                }
            }
        }
        for c in ['\u{e9}', '\u{20ac}', '\u{1f680}'] {
            let mut buf = [0; 4];
            let encoded = c.encode_utf8(&mut buf).as_bytes();
            for len in 0..=20 {
                for cut in 1..=encoded.len() {
                    let mut bytes = vec![b'x'; len];
                    bytes.extend_from_slice(&encoded[..cut]);
                    assert_eq!(
                        as_text(&bytes),
                        std::str::from_utf8(&bytes).ok(),
                        "{bytes:?}"
                    );
                }
            }
        }
    }
}
