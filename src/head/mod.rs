//! Saves' heads: the `meta` of a save file read from its first bytes (a compressed save
//! decompressed only that far), and folders of saves listed from their heads with where
//! each stands against a chain, for a game's load menu, a fleet scan or `save-upgrade
//! list`.
//!
//! Format revision 3 writes `meta` first (`docs/FORMAT.md`, "Reading the head"), so a
//! save's version, writer, game and mods are in the first few hundred bytes of its text,
//! however large its data.

mod list;
mod read;

pub use list::{list, list_each, Listed, Listing, Status};
pub use read::{read, read_with, Head, FIRST_READ};
