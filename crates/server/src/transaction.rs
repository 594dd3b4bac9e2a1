//! MULTI state: the commands queued since MULTI, each an owned copy of its
//! arguments plus the table row it resolved to when it was queued.

use roaringd_resp::{Args, Span};

use crate::command_table::Entry;

/// One queued command.
#[derive(Debug)]
pub struct Queued {
    /// The resolved row (subcommand row for container commands).
    pub entry: &'static Entry,
    /// Every argument, concatenated.
    pub buf: Vec<u8>,
    /// Where each argument lies in `buf`.
    pub spans: Vec<Span>,
}

impl Queued {
    /// Copies `args` (all of them, name included).
    pub fn new(entry: &'static Entry, args: &Args<'_>) -> Self {
        let total: usize = args.all().map(<[u8]>::len).sum();
        let mut buf = Vec::with_capacity(total);
        let mut spans = Vec::with_capacity(args.len());
        for a in args.all() {
            let start = buf.len();
            buf.extend_from_slice(a);
            spans.push(Span {
                start,
                end: buf.len(),
            });
        }
        Queued { entry, buf, spans }
    }

    /// The arguments, positioned at 0.
    pub fn args(&self) -> Args<'_> {
        Args::new(&self.buf, &self.spans)
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
