//! `print` in the sandbox: the lines a script prints are collected, bounded, for the game to
//! take ([`super::Sandbox::take_printed`]); nothing is written anywhere, since a game that
//! embeds savechain owns its standard streams.

use std::cell::RefCell;
use std::rc::Rc;

use mlua::{Lua, Table};

use crate::lua::chunk::{kept, Chunk};

/// Bytes of printed text (each line counting its newline) kept between two takes; what is
/// printed after that is dropped, with a note.
pub const PRINT_LIMIT: usize = 64 << 10;

/// The note that ends the lines once [`PRINT_LIMIT`] was reached.
const CUT_NOTE: &str = "[savechain: more print output was dropped; 64 KiB are kept]";

/// Lines printed since the last take.
#[derive(Default)]
pub(super) struct Printed {
    lines: Vec<String>,
    /// Bytes kept so far, a newline counted for each line.
    bytes: usize,
    /// Set once something was dropped: the rest is dropped too.
    cut: bool,
}

impl Printed {
    /// Adds the line made of `parts` joined by tabs, as Lua's `print` writes it; a part
    /// with newlines makes several lines. Only what fits under [`PRINT_LIMIT`] is read, so a
    /// script printing a huge string in a loop costs O(limit) here in all.
    fn add(&mut self, parts: impl Iterator<Item = mlua::Result<mlua::String>>) -> mlua::Result<()> {
        if self.cut {
            return Ok(());
        }
        // One byte more than fits, to tell whether it all did (the newline needs one).
        let room = PRINT_LIMIT - self.bytes;
        let mut line: Vec<u8> = Vec::new();
        for (i, part) in parts.enumerate() {
            if line.len() > room {
                break;
            }
            if i > 0 {
                line.push(b'\t');
            }
            let part = part?;
            let bytes = part.as_bytes();
            let take = bytes.len().min(room + 1 - line.len().min(room + 1));
            line.extend_from_slice(&bytes[..take]);
        }
        let fits = line.len() < room;
        if !fits {
            // The start of a line that does not fit is kept, if any of it does.
            line.truncate(room.saturating_sub(1));
        }
        if fits || !line.is_empty() {
            self.bytes += line.len() + 1;
            for piece in line.split(|&b| b == b'\n') {
                self.lines.push(String::from_utf8_lossy(piece).into_owned());
            }
        }
        if !fits {
            self.cut = true;
            self.lines.push(CUT_NOTE.to_string());
        }
        Ok(())
    }

    /// The lines so far, and a fresh allowance.
    pub(super) fn take(&mut self) -> Vec<String> {
        std::mem::take(self).lines
    }
}

/// Lua 5.4's `print` over `collect`: each argument through `tostring` (so `__tostring` and
/// `__name` count, and the global `tostring` may be replaced without effect, as in Lua 5.4).
/// Stripped of line information like the pattern wrappers, so that an error raised inside
/// `tostring` does not name this chunk.
const PRINT: &str = r#"
local collect, tostring, select = ...
return function(...)
  local n = select('#', ...)
  local parts = { ... }
  for i = 1, n do parts[i] = tostring(parts[i]) end
  collect(parts, n)
end
"#;

/// Makes the global `print` collect into `printed`.
pub(super) fn install(lua: &Lua, printed: Rc<RefCell<Printed>>) -> mlua::Result<()> {
    let collect = kept(lua, "print collect", || {
        lua.create_function(move |_, (parts, n): (Table, usize)| {
            printed
                .borrow_mut()
                .add((1..=n).map(|i| parts.raw_get::<mlua::String>(i)))
        })
    })?;
    // Stripped of line information, it adds no position of its own to errors.
    static CHUNK: Chunk = Chunk::of_crate("=savechain print", PRINT, true);
    let print: mlua::Function = CHUNK.load_kept(lua)?.call((
        collect,
        lua.globals().get::<mlua::Function>("tostring")?,
        lua.globals().get::<mlua::Function>("select")?,
    ))?;
    lua.globals().raw_set("print", print)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(printed: &mut Printed, lua: &Lua, parts: &[&[u8]]) {
        printed
            .add(parts.iter().map(|p| lua.create_string(p)))
            .unwrap();
    }

    #[test]
    fn lines_are_kept_up_to_the_limit_then_cut_once() {
        let lua = Lua::new();
        let mut printed = Printed::default();
        add(&mut printed, &lua, &[b"a", b"b\nc"]);
        add(&mut printed, &lua, &[]);
        add(&mut printed, &lua, &[b"\xff"]);
        assert_eq!(printed.lines, ["a\tb", "c", "", "\u{fffd}"]);
        assert_eq!(printed.bytes, 6 + 1 + 2);
        // Exactly full: the newline of the last line is the last byte.
        let fill = vec![b'x'; PRINT_LIMIT - printed.bytes - 1];
        add(&mut printed, &lua, &[&fill]);
        assert_eq!(printed.bytes, PRINT_LIMIT);
        assert!(!printed.cut);
        add(&mut printed, &lua, &[b""]);
        assert!(printed.cut);
        add(&mut printed, &lua, &[b"later"]);
        let lines = printed.take();
        assert_eq!(lines.last().map(String::as_str), Some(CUT_NOTE));
        assert_eq!(lines.iter().filter(|l| *l == CUT_NOTE).count(), 1);
        assert!(!lines.iter().any(|l| l == "later"));
        assert_eq!(lines.len(), 6);
        // A fresh allowance after a take.
        add(&mut printed, &lua, &[b"again"]);
        assert_eq!(printed.take(), ["again"]);
    }

    #[test]
    fn a_line_too_long_keeps_its_start() {
        let lua = Lua::new();
        let mut printed = Printed::default();
        let long = vec![b'y'; 3 * PRINT_LIMIT];
        add(&mut printed, &lua, &[b"start", &long, b"never read"]);
        let lines = printed.take();
        assert_eq!(lines.len(), 2);
        assert!(lines[0].starts_with("start\tyyy"));
        assert_eq!(lines[0].len() + 1, PRINT_LIMIT);
        assert_eq!(lines[1], CUT_NOTE);
    }
}
