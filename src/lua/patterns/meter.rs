//! What matching costs and why it stops: the [`Meter`] that every step of a match is charged
//! to, and [`Fail`], the reasons a match or a string function returns no results. The
//! matcher charges and fails; the Lua-facing functions settle the bill with the budget.

/// Steps taken by one call of a primitive, and how many it may take.
pub(super) struct Meter {
    /// Steps charged so far.
    pub(super) steps: u64,
    /// Steps the call may take: what is left of the sandbox's budget.
    pub(super) allowance: u64,
}

impl Meter {
    /// Adds `steps`, failing once the allowance is spent.
    #[inline]
    pub(super) fn charge(&mut self, steps: u64) -> Result<(), Fail> {
        self.steps += steps;
        if self.steps > self.allowance {
            Err(Fail::Budget)
        } else {
            Ok(())
        }
    }
}

/// Why a primitive did not return its results.
pub(super) enum Fail {
    /// An error Lua raises at the caller (a bad argument, a malformed pattern); the wrapper
    /// raises the message.
    Raise(String),
    /// The instruction budget ran out.
    Budget,
    /// Lua itself failed (out of memory, usually).
    Lua(mlua::Error),
}

impl From<mlua::Error> for Fail {
    fn from(e: mlua::Error) -> Fail {
        Fail::Lua(e)
    }
}

/// An error Lua raises at the caller with `message`.
pub(super) fn raise(message: impl Into<String>) -> Fail {
    Fail::Raise(message.into())
}
