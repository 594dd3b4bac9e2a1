//! MULTI state: the commands queued since MULTI, each an owned copy of its
//! arguments plus the table row it resolved to when it was queued.

use roaringd_resp::{Args, Span};

use crate::command_table::Entry;

/// Owned copies of request arguments, readable as [`Args`].
#[derive(Debug, Default)]
pub struct OwnedArgs {
    /// Every argument, concatenated.
    buf: Vec<u8>,
    /// Where each argument lies in `buf`.
    spans: Vec<Span>,
}

impl OwnedArgs {
    /// Copies `args` (index 0 of the result is their first).
    pub fn new<'a>(args: impl Iterator<Item = &'a [u8]>) -> Self {
        let args: Vec<&[u8]> = args.collect();
        let mut buf = Vec::with_capacity(args.iter().map(|a| a.len()).sum());
        let mut spans = Vec::with_capacity(args.len());
        for a in args {
            let start = buf.len();
            buf.extend_from_slice(a);
            spans.push(Span {
                start,
                end: buf.len(),
            });
        }
        OwnedArgs { buf, spans }
    }

    /// The arguments, positioned at 0.
    pub fn args(&self) -> Args<'_> {
        Args::new(&self.buf, &self.spans)
    }
}

/// One queued command.
#[derive(Debug)]
pub struct Queued {
    /// The resolved row (subcommand row for container commands).
    pub entry: &'static Entry,
    /// Every argument, the name included.
    pub owned: OwnedArgs,
}

impl Queued {
    /// Copies `args` (all of them, name included).
    pub fn new(entry: &'static Entry, args: &Args<'_>) -> Self {
        Queued {
            entry,
            owned: OwnedArgs::new(args.all()),
        }
    }

    /// The arguments, positioned at 0.
    pub fn args(&self) -> Args<'_> {
        self.owned.args()
    }
}

/// State between MULTI and EXEC/DISCARD.
#[derive(Debug, Default)]
pub struct MultiState {
    /// Commands in order.
    pub queued: Vec<Queued>,
    /// Set when a command failed to queue (unknown, arity, ...): EXEC then
    /// replies EXECABORT.
    pub aborted: bool,
}
