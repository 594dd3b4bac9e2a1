//! `Ctx`: what a handler works on — the open store transaction (already
//! locked on the command's keys), the selected database, the client's state
//! and the shared server state.

use crate::client::Client;
use crate::error::CommandError;
use crate::state::Server;

/// Handler context for one command.
pub struct Ctx<'a> {
    /// Selected database (a copy of `client.db` taken at dispatch; SELECT
    /// changes `client.db`).
    pub db: u16,
    /// The calling client.
    pub client: &'a mut Client,
    /// Shared server state.
    pub server: &'a Server,
    /// The store transaction, for commands flagged `Write` or `Readonly`.
    pub(crate) txn: Option<&'a mut roaringd_store::Txn>,
    /// See [`Ctx::may_stream`].
    pub(crate) may_stream: bool,
}

impl<'a> Ctx<'a> {
    /// The open store transaction. It holds the locks of every key the
    /// command's key spec names (or the global lock exclusively for rows
    /// flagged `Exclusive`); the dispatcher commits it after an `Ok` reply
    /// and drops it (no effect) after an error.
    ///
    /// # Errors
    /// `ERR` if the row is flagged neither `Write` nor `Readonly` (a table bug).
    pub fn txn(&mut self) -> Result<&mut roaringd_store::Txn, CommandError> {
        self.txn.as_deref_mut().ok_or(CommandError::err(
            "internal error: command has no store transaction",
        ))
    }

    /// True when the handler may return a [`crate::Reply::Stream`]
    /// ([`crate::stream`]): the command runs alone, or in a pipeline group
    /// that writes nothing after it (its key then stays as the command saw
    /// it until the group's commit, where the stream's snapshot is taken).
    /// False in EXEC.
    pub fn may_stream(&self) -> bool {
        self.may_stream
    }

    /// The reply-size ceiling of the commands whose reply size their
    /// arguments choose: `max-reply-bytes`, or the normal clients'
    /// `client-output-buffer-limit` hard limit when that is set and lower
    /// (a reply over it would only get the client disconnected).
    pub fn max_reply_bytes(&self) -> u64 {
        use std::sync::atomic::Ordering::Relaxed;
        let hot = &self.server.hot;
        let max = hot.max_reply_bytes.load(Relaxed);
        match hot.obuf_hard.load(Relaxed) {
            0 => max,
            hard => max.min(hard),
        }
    }
}
