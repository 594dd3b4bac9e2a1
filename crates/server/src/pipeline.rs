//! Group commit for pipelined data commands.
//!
//! Consecutive data commands (rows flagged `Write` or `Readonly`, not
//! `Exclusive`) found in one read buffer run as ONE store transaction: the
//! union of their keys is locked once, they run in order (each reading the
//! effects of the previous ones), and one commit makes them durable before
//! any of their replies is written. For other clients this is a valid
//! serialization (the batch is applied at once; no reply was sent before the
//! commit), and it turns N lock round-trips and N write batches into one.
//!
//! Anything else (connection/server commands, MULTI state, auth, commands
//! the user's ACL refuses, inline requests, errors found before execution)
//! ends the batch and runs alone.

use std::time::Instant;

use roaringd_resp::{Args, Span};

use crate::client::Client;
use crate::command_table::{Entry, Flag};
use crate::dispatch;
use crate::reply::Reply;
use crate::state::Server;

/// Most commands in one group.
const MAX_COMMANDS: usize = 64;
/// Most keys locked by one group.
const MAX_KEYS: usize = 256;

/// What [`Batch::try_push`] did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Push {
    /// Queued in the group.
    Grouped,
    /// Not queued: it runs alone, after the group.
    Alone,
    /// Not queued: its keys must be read into memory first.
    Cold,
}

/// Pending data commands of one read buffer, reused across reads.
#[derive(Default)]
pub struct Batch {
    /// `(entry, first span, end span)` per command, into `spans`.
    cmds: Vec<(&'static Entry, usize, usize)>,
    /// Every argument of every pending command, as absolute ranges of the
    /// read buffer.
    spans: Vec<Span>,
    /// Key positions scratch.
    idx: Vec<usize>,
    /// Keys of the pending commands: (db, span index).
    keys: Vec<(u16, usize)>,
    replies: Vec<Reply>,
    /// Scratch of a group's attempt: the commands whose edit the
    /// write-back tier took (`dispatch::Settled::of_attempt`).
    taken: Vec<usize>,
}

/// Prefetches the data entries that the group's commands of one element
/// (`CommandSpec::seek`) read, all of them before any runs, so that their
/// cache misses overlap (`Store::prefetch_seeks`). Nothing for a group
/// with fewer than two such commands.
fn prefetch_seeks(
    server: &Server,
    db: u16,
    buf: &[u8],
    cmds: &[(&'static Entry, usize, usize)],
    spans: &[Span],
) {
    let seeks: Vec<(u16, &[u8], &[u8])> = cmds
        .iter()
        .filter_map(|&(e, a, b)| {
            let (key, element) = e.spec.seek_of(&Args::new(buf, &spans[a..b]))?;
            Some((db, key, element))
        })
        .collect();
    if seeks.len() > 1 {
        server.store.prefetch_seeks(&seeks);
    }
}

impl Batch {
    /// True when nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.cmds.is_empty()
    }

    /// Queues the request whose argument spans (relative to `base` in `buf`)
    /// are `spans`, if it can join a group. [`Push::Alone`] (nothing
    /// queued) when it must run alone; the caller then flushes first.
    /// [`Push::Cold`] (nothing queued) when some of its keys are not
    /// resident in the memory tier (`Store::is_resident`): they are in
    /// `client.cold`, for the connection to read in before it runs the
    /// request; `client.warmed` skips that check once.
    pub fn try_push(
        &mut self,
        server: &Server,
        client: &mut Client,
        buf: &[u8],
        base: usize,
        spans: &[Span],
    ) -> Push {
        if client.multi.is_some()
            || dispatch::needs_auth(server, client)
            || server.acl.generation() != client.acl_gen
            || spans.is_empty()
        {
            return Push::Alone;
        }
        let args = Args::new(&buf[base..], spans);
        let Ok(entry) = dispatch::resolve(client, &args) else {
            return Push::Alone;
        };
        let spec = entry.spec;
        if !(spec.has(Flag::Write) || spec.has(Flag::Readonly))
            || spec.has(Flag::Exclusive)
            || !spec.arity_ok(args.len())
            || client.user.check(entry, &args).is_err()
        {
            return Push::Alone;
        }
        self.idx.clear();
        spec.keys.extract(&args, &mut self.idx);
        if !std::mem::take(&mut client.warmed) {
            let db = client.db;
            // The key of the group's last command was resident as it joined
            // (a pipeline on one key asks once).
            let last = self
                .keys
                .last()
                .map(|&(d, i)| (d, &buf[self.spans[i].range()]));
            client.cold.clear();
            for &i in &self.idx {
                let key = args.get(i).unwrap_or_default();
                if last != Some((db, key)) && !server.store.is_resident(db, key) {
                    client.cold.push((db, key.to_vec()));
                }
            }
            if !client.cold.is_empty() {
                return Push::Cold;
            }
        }
        if self.cmds.len() >= MAX_COMMANDS || self.keys.len() + self.idx.len() > MAX_KEYS {
            return Push::Alone;
        }
        let first = self.spans.len();
        self.spans.extend(spans.iter().map(|s| Span {
            start: s.start + base,
            end: s.end + base,
        }));
        for &i in &self.idx {
            self.keys.push((client.db, first + i));
        }
        self.cmds.push((entry, first, self.spans.len()));
        Push::Grouped
    }

    /// Runs the pending commands as one transaction and appends their
    /// replies to `out`, in order.
    pub fn flush(&mut self, server: &Server, client: &mut Client, buf: &[u8], out: &mut Vec<u8>) {
        match self.cmds.len() {
            0 => return,
            1 => {
                let (entry, a, b) = self.cmds[0];
                let args = Args::new(buf, &self.spans[a..b]);
                dispatch::execute_entry(server, client, entry, args, out);
            }
            _ => self.run_group(server, client, buf, out),
        }
        self.cmds.clear();
        self.spans.clear();
        self.keys.clear();
    }

    /// Runs the pending commands in one transaction (see the module docs);
    /// a command that panics after writing is left out and the group runs
    /// again without it ([`dispatch::run_skipping_panicked`]). The group
    /// runs off the worker when its commands' estimates, by arguments and
    /// by data (read once the `Txn` holds the keys), add up past
    /// [`dispatch::LONG_WORK_US`]. A command after the group's last write
    /// may stream its reply ([`crate::ctx::Ctx::may_stream`]).
    fn run_group(&mut self, server: &Server, client: &mut Client, buf: &[u8], out: &mut Vec<u8>) {
        let keys: Vec<(u16, &[u8])> = self
            .keys
            .iter()
            .map(|&(db, i)| (db, &buf[self.spans[i].range()]))
            .collect();
        let (cmds, spans, replies, idx, taken) = (
            &self.cmds,
            &self.spans,
            &mut self.replies,
            &mut self.idx,
            &mut self.taken,
        );
        let args_long = cmds
            .iter()
            .any(|&(e, a, b)| e.spec.is_long(&Args::new(buf, &spans[a..b])));
        let last_write = cmds.iter().rposition(|&(e, _, _)| e.spec.has(Flag::Write));
        dispatch::run_skipping_panicked(|settled| {
            // Dirty keys stay dirty for the tier's commands; a command that
            // needs more of a key writes its dirty state into the group's
            // `Txn` first (`dispatch::absorb_unless_kept`).
            let mut txn = server.store.begin_keep_dirty(&keys);
            let db = client.db;
            prefetch_seeks(server, db, buf, cmds, spans);
            let long = args_long
                || dispatch::data_work_is_long(
                    &mut txn,
                    cmds.iter()
                        .map(|&(e, a, b)| (e.spec, db, Args::new(buf, &spans[a..b]))),
                );
            dispatch::run_blocking_if(long, || {
                let mut any_write = false;
                replies.clear();
                taken.clear();
                // One clock read per command: each command ends where the next starts.
                let mut start = Instant::now();
                for (i, &(entry, a, b)) in cmds.iter().enumerate() {
                    let args = Args::new(buf, &spans[a..b]);
                    let cmd = (db, entry.spec, &args);
                    if let Some(r) = settled.replay(i, Some(&mut txn), cmd, idx) {
                        any_write |= entry.spec.has(Flag::Write);
                        replies.push(r);
                        continue;
                    }
                    dispatch::absorb_unless_kept(&mut txn, db, entry.spec, &args, idx);
                    any_write |= entry.spec.has(Flag::Write);
                    let may_stream = last_write.is_none_or(|w| i > w);
                    let edits = txn.tier_edits();
                    let r = dispatch::call(server, client, entry, args, Some(&mut txn), may_stream);
                    let end = Instant::now();
                    let usec = end.duration_since(start).as_micros() as u64;
                    start = end;
                    dispatch::account(server, client, entry, &args, usec, r.is_err());
                    let took = txn.tier_edits() != edits;
                    if dispatch::panicked_after_write(&r) {
                        let e = r.unwrap_err();
                        return Err(dispatch::Settled::of_attempt((i, e, took), taken, replies));
                    }
                    if took {
                        taken.push(i);
                    }
                    replies.push(r.unwrap_or_else(Reply::Error));
                }
                if let Err(e) = dispatch::commit(server, client, txn, any_write) {
                    // Nothing was applied: every command of the group reports it.
                    for r in replies.iter_mut() {
                        *r = Reply::Error(e.clone());
                    }
                }
                Ok(())
            })
        });
        for r in self.replies.drain(..) {
            dispatch::encode(server, client, r, out);
        }
    }
}
