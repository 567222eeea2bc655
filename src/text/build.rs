//! What the reader hands over as it reads a text, and the builders that make something of
//! it: a tree of [`Value`](crate::Value)s here, Lua tables in the Lua bridge.

use std::borrow::Cow;
use std::vec::Drain;

/// Makes values out of what the [`Reader`](super::reader::Reader) finds, in text order: each
/// scalar as it is read, each array and object once its last element is. The reader has
/// already decoded the format's tags (a double's hexfloat, a byte string's characters, an
/// `["a", ...]` escape) and checked everything but what only the builder can see.
pub(crate) trait Build<'a> {
    /// What one value of the text becomes.
    type Value;
    /// What one object key becomes.
    type Key;

    /// `null`.
    fn null(&mut self) -> Self::Value;
    /// `true` or `false`.
    fn bool(&mut self, b: bool) -> Self::Value;
    /// An integer that fits an `i64`.
    fn int(&mut self, i: i64) -> Self::Value;
    /// An integer above `i64::MAX`.
    fn uint(&mut self, u: u64) -> Self::Value;
    /// A double, from a tag or typed as a decimal.
    fn double(&mut self, d: f64) -> Self::Value;
    /// A string, borrowed from the text when it has no escapes.
    fn string(&mut self, s: Cow<'a, str>) -> Self::Value;
    /// A byte string.
    fn bytes(&mut self, b: Vec<u8>) -> Self::Value;
    /// An object key, borrowed from the text when it has no escapes.
    fn key(&mut self, k: Cow<'a, str>) -> Self::Key;
    /// An array of the elements given, in order.
    fn array(&mut self, items: Drain<'_, Self::Value>) -> Self::Value;
    /// An object of the members given, in text order; `Err((i, j))` when members `i` and
    /// `j` (counted in text order) have the same key.
    fn object(
        &mut self,
        members: Drain<'_, (Self::Key, Self::Value)>,
    ) -> Result<Self::Value, (usize, usize)>;
    /// A Lua table of the tags `t`, `s`, `r` and `c` from its content, an array made by
    /// [`Build::array`], which starts at byte `at` of the text (for builders that check
    /// more once the whole text is read, and place what they find there); `Err` says what
    /// the tag expects.
    fn table(&mut self, tag: u8, content: Self::Value, at: usize) -> Result<Self::Value, String>;

    /// [`Build::array`] of the elements at `items[base..]`, which it takes out of `items`:
    /// for builders that can move them out at once rather than one at a time.
    fn array_of(&mut self, items: &mut Vec<Self::Value>, base: usize) -> Self::Value {
        self.array(items.drain(base..))
    }

    /// `levels` arrays opened one inside the other close at once, each with one element:
    /// the innermost holds the value at `items[base]`, which the outermost takes the place
    /// of. For builders that keep such a run in one piece.
    fn arrays_of_one(&mut self, items: &mut Vec<Self::Value>, base: usize, levels: usize) {
        for _ in 0..levels {
            let value = self.array_of(items, base);
            items.push(value);
        }
    }

    /// [`Build::object`] of the members at `members[base..]`, which it takes out of
    /// `members` (also on `Err`).
    fn object_of(
        &mut self,
        members: &mut Vec<(Self::Key, Self::Value)>,
        base: usize,
    ) -> Result<Self::Value, (usize, usize)> {
        self.object(members.drain(base..))
    }

    // For builders that make a container before its contents: the reader says where each
    // starts, and what became of an array that turned out to be a tag.

    /// An array starts; its elements follow, and then [`Build::array`], [`Build::table`],
    /// [`Build::unescape`] or [`Build::drop_array`] ends it.
    fn begin_array(&mut self) {}
    /// An object starts; its members follow, and then [`Build::object`].
    fn begin_object(&mut self) {}
    /// The array begun last was `["d", x]` or `["b", x]`, which the reader decodes itself:
    /// the builder forgets it and its first element.
    fn drop_array(&mut self) {}
    /// The array begun last was the escape `["a", content]`: `content` stands for it.
    fn unescape(&mut self, content: Self::Value) -> Self::Value {
        content
    }
}
