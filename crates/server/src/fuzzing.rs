//! The logic of the `dispatch` fuzz target (`fuzz/`), behind the `fuzzing`
//! feature (and always in this crate's tests, which run it over random
//! byte strings on the stable toolchain). Not part of the server's API.
//!
//! [`fuzz_dispatch`] turns arbitrary bytes into requests for the rows of the
//! command table (subcommand rows included) and runs them through the real
//! request path, in process: a [`Server`] over an in-memory store, one
//! [`Client`], the wire bytes parsed by the resp crate's [`RequestParser`],
//! pipelined data commands grouped by [`Batch`], everything else through
//! [`dispatch::execute`], replies encoded into one output buffer, as a
//! connection does. Arguments are drawn from keys that exist with every
//! type (seeded: strings, sets, hashes, TR bitmaps, a key with a TTL),
//! numbers at the edges (0, -1, 2^32, `i64::MIN`, 2^63, huge digit strings,
//! floats, `inf`, `nan`), the keywords the commands take, the table's own
//! command names, glob patterns and short random byte strings. A request
//! is sent alone, pipelined with others in one read, inline when its
//! arguments allow, or inside MULTI ... EXEC (or DISCARD).
//!
//! Checked after every read: each request got exactly one reply (none for
//! the one a connection closes on without replying, see below), the output
//! is well-formed RESP (the resp crate's client-side [`Frame`] decoder reads
//! all of it), and no reply says `ERR internal error` (a handler panicked:
//! dispatch catches the panic; under libFuzzer, whose panic hook aborts,
//! the panic itself is the crash). Checked after every input that changed
//! the keyspace: in every database, the live keys a scan finds and DBSIZE
//! agree (DBSIZE also counts expired keys not yet removed, so it may
//! exceed the scan by at most the database's keys with an expire time).
//!
//! Every input starts from the same keyspace, the seeded one, in a new
//! server (settings, users, clients) over one store per thread. Seeding it
//! afresh for every input (emptying it, ten requests) cost more than most
//! inputs do (about 0.5 ms under AddressSanitizer, over a third of the
//! time), so the store is put back selectively instead: the harness
//! watches every seeded key itself (a WATCH registration under a client
//! id no client has, so the server's WATCH table is never empty here) and
//! after an input deletes and seeds again only the seeded keys that were
//! touched and the keys that were added (the per-database counts show
//! those). When neither explains a change the server's `dirty` counter
//! saw, and every ten minutes, it empties and seeds the store fully. The
//! unit test `each_input_starts_from_the_seeded_keyspace` compares the
//! restored keyspace with a freshly seeded one after random inputs.
//!
//! Left out, as they end the process, sleep or panic on purpose: SHUTDOWN,
//! DEBUG SLEEP, DEBUG PANIC and DEBUG PANIC-AFTER-WRITE (DEBUG is refused
//! anyway: `enable-debug-command` is `no`). CONFIG SET is not given the
//! settings that are process-wide (`loglevel`, `random-pick-limit`) or
//! that would let a reply grow past the 1 MiB `max-reply-bytes` the
//! harness sets (so that huge-reply requests are refused quickly).
//! TR.SETRANGE and TR.FLIPRANGE are not sent for ranges of more than
//! [`MAX_RANGE_WRITE`] bits: `TR.SETRANGE k 0 4294967295` writes 65,536
//! containers (about 170 ms in a release build), and once the fuzzer had
//! found such requests the inputs holding them took 97% of its time (628
//! inputs a second instead of thousands). Their edges (ends at 2^32 - 1,
//! start > end, offsets that do not parse) are still sent.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};

use roaringd_resp::command::encode_command;
use roaringd_resp::frame::Frame;
use roaringd_resp::{Limits, RequestParser};

use crate::client::{Client, ClientInfo};
use crate::command_table::{CommandTable, Entry};
use crate::config::Config;
use crate::dispatch;
use crate::pipeline::{Batch, Push};
use crate::state::{now_ms, Server};

/// Most reads (groups of requests) one input makes.
const MAX_READS: usize = 24;
/// Most requests in one pipelined read.
const MAX_PIPELINE: usize = 8;
/// Most requests queued between MULTI and EXEC.
const MAX_QUEUED: usize = 6;
/// The `max-reply-bytes` the harness's server runs with.
pub const MAX_REPLY_BYTES: u64 = 1 << 20;

/// Rows never sent (see the module docs).
const SKIPPED: &[&str] = &[
    "shutdown",
    "debug|sleep",
    "debug|panic",
    "debug|panic-after-write",
];

/// The widest range TR.SETRANGE and TR.FLIPRANGE are sent (see the module
/// docs): 16 containers.
pub const MAX_RANGE_WRITE: i64 = 1 << 20;

/// Settings CONFIG SET is never given (see the module docs).
const PROTECTED_SETTINGS: &[&str] = &[
    "loglevel",
    "random-pick-limit",
    "max-reply-bytes",
    "tr-max-reply-bytes",
];

/// Keys, seeded by [`SEED`] except the last few (absent keys).
const KEYS: &[&str] = &[
    "str", "num", "flt", "bits", "set", "iset", "hash", "tr", "trrun", "ttl", "new", "new2", "",
];

/// Requests run before every input: one key of every type.
const SEED: &[&[&str]] = &[
    &["SET", "str", "hello world"],
    &["SET", "num", "42"],
    &["SET", "flt", "3.5"],
    &["SET", "bits", "1011001"],
    &["SADD", "set", "a", "b", "c", "str", "1"],
    &["SADD", "iset", "1", "2", "3", "100", "-5"],
    &["HSET", "hash", "f1", "v1", "f2", "2", "f3", "3.5"],
    // Small (three containers): TR.BITOP NOT of a bitmap spans 0 to its
    // largest bit.
    &[
        "TR.SETBITS",
        "tr",
        "0",
        "1",
        "5",
        "65535",
        "65536",
        "100000",
        "200000",
    ],
    &["TR.SETRANGE", "trrun", "1000", "140000"],
    &["SET", "ttl", "v", "EX", "100000"],
];

/// Numbers at the edges of every parser (signed, unsigned 32-bit, 64-bit,
/// floats) and malformed ones.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "5",
    "10",
    "100",
    "-100",
    "65535",
    "65536",
    "1000000",
    "2147483647",
    "-2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999999999999999999",
    "1.5",
    "-0.5",
    "0.0",
    "-0",
    "01",
    "+1",
    " 1",
    "1e308",
    "1e400",
    "-1e308",
    "5e-324",
    "inf",
    "-inf",
    "+inf",
    "nan",
    "1.7976931348623157e308",
];

/// Keywords the commands take, and values some settings accept.
const KEYWORDS: &[&str] = &[
    "EX",
    "PX",
    "EXAT",
    "PXAT",
    "KEEPTTL",
    "PERSIST",
    "NX",
    "XX",
    "GT",
    "LT",
    "GET",
    "COUNT",
    "MATCH",
    "TYPE",
    "WITHVALUES",
    "LIMIT",
    "SAMPLES",
    "AND",
    "OR",
    "XOR",
    "NOT",
    "DIFF",
    "ANDNOT",
    "JSON",
    "ASYNC",
    "SYNC",
    "SCHEDULE",
    "NOSAVE",
    "SAVE",
    "NOW",
    "FORCE",
    "ABORT",
    "ID",
    "ADDR",
    "LADDR",
    "USER",
    "SKIPME",
    "MAXAGE",
    "yes",
    "no",
    "normal",
    "pubsub",
    "master",
    "replica",
    "slave",
    "AUTH",
    "SETNAME",
    "lib-name",
    "lib-ver",
    "FILTERBY",
    "MODULE",
    "ACLCAT",
    "PATTERN",
    "string",
    "hash",
    "none",
    "default",
    "alice",
    "on",
    "off",
    "nopass",
    "resetpass",
    "reset",
    "resetkeys",
    "resetchannels",
    "allkeys",
    "allcommands",
    "allchannels",
    "nocommands",
    "~*",
    "~s*",
    "%R~*",
    "%W~t*",
    "&*",
    "+@all",
    "-@all",
    "+@string",
    "-@dangerous",
    "+get",
    "-set",
    "+client|list",
    "+debug",
    ">pw",
    "<pw",
    "#5e884898da28047151d0e56f8dc6292773603d0d6aabbdd62a11ef721d1542d8",
    "(+get ~a*)",
    "clearselectors",
    "pw",
    "127.0.0.1:40000",
    "127.0.0.1:6379",
    "maxmemory",
    "requirepass",
    "appendfsync",
    "always",
    "everysec",
    "write-back-bytes",
    "container-cache-bytes",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "acllog-max-len",
    "acl-pubsub-default",
    "timeout",
    "1mb",
    "0kb",
    "*",
    "s*",
    "?et",
    "[a-t]*",
    "[^s]*",
    "h\\*",
    "[",
    "\\",
    "0b1",
    "101",
    "111111111111111111111111111111111111111111111111111111111111111111",
];

/// Every word [`arg`] picks from: [`KEYWORDS`] and the table's names
/// (commands and subcommands, for COMMAND INFO, ACL rules, CLIENT ...).
static WORDS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    let mut words = KEYWORDS.to_vec();
    for e in CommandTable::get().all_entries() {
        words.push(e.spec.name);
        if e.is_sub {
            words.push(e.full_name);
        }
    }
    words
});

/// The rows requests are made for (every row but [`SKIPPED`]).
static ROWS: LazyLock<Vec<&'static Entry>> = LazyLock::new(|| {
    CommandTable::get()
        .all_entries()
        .filter(|e| !SKIPPED.contains(&e.full_name))
        .collect()
});

/// Runs one fuzz input (see the module docs).
///
/// # Panics
/// When an invariant fails (that is the fuzz target's finding).
pub fn fuzz_dispatch(data: &[u8]) {
    let mut h = Harness::new();
    let mut src = Source(data);
    for _ in 0..MAX_READS {
        if src.0.is_empty() || h.client.close_after_reply {
            break;
        }
        let mode = src.byte();
        let mut reqs = Vec::new();
        match mode % 8 {
            0 => {
                // MULTI, queued commands, then EXEC (or DISCARD, or nothing).
                reqs.push(words(&["MULTI"]));
                for _ in 0..=usize::from(src.byte()) % MAX_QUEUED {
                    reqs.push(request(&mut src));
                }
                match src.byte() % 4 {
                    0 => reqs.push(words(&["DISCARD"])),
                    1 => {}
                    _ => reqs.push(words(&["EXEC"])),
                }
            }
            1 => {
                for _ in 0..2 + usize::from(src.byte()) % (MAX_PIPELINE - 1) {
                    reqs.push(request(&mut src));
                }
            }
            _ => reqs.push(request(&mut src)),
        }
        reqs.retain(|r| allowed(r));
        let inline = mode & 0x80 != 0;
        if mode & 0x40 != 0 {
            // Every request in a read of its own.
            for r in &reqs {
                h.read(std::slice::from_ref(r), inline);
            }
        } else {
            h.read(&reqs, inline);
        }
    }
    if h.changed() {
        h.check_keyspace();
        // Put the seeded keyspace back now, so that a failure to do so
        // fails this input rather than the next one.
        drop(h);
        drop(Harness::new());
    }
}

thread_local! {
    /// The store every input's server uses, put back into its seeded state
    /// after each input that changed it ([`Harness::new`]): opening one
    /// costs more than running most inputs.
    static STORE: roaringd_store::Store =
        roaringd_store::Store::open(roaringd_store::StoreConfig::default())
            .expect("in-memory store");
    /// What the last harness of this thread learnt about how its input
    /// changed [`STORE`]; `None` before the first (the store is empty).
    static LAST: RefCell<Option<Leftover>> = const { RefCell::new(None) };
    /// Selective restores so far (see [`Harness::reseed`]).
    #[cfg(test)]
    static RESTORES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// The store is fully emptied and seeded again this often (the `ttl`
/// key's TTL runs down; stale elements and other leftovers go).
const FULL_RESEED_MS: u64 = 600_000;

/// How to tell whether (and where) an input changed the seeded keyspace
/// without looking at it. Each [`SEED`] key has a watch of its own in the
/// input's server (as WATCH registers it, under [`WATCHER_ID`], a client
/// that does not exist): every write, flush and expiry of the key marks
/// it, as it marks a WATCHing client before EXEC. Keys outside the seed
/// show in the per-database key counts, and the server's `dirty` counter
/// (changes since the last save) moves on every committed change.
struct Seeded {
    /// Per [`SEED`] row: set when its key was modified.
    touched: Vec<Arc<AtomicBool>>,
    /// The server's `dirty` counter once seeded (as the input began).
    dirty: u64,
    /// When the store was last fully emptied and seeded.
    full_at_ms: u64,
    /// Selective restores since the last compaction.
    since_compaction: u32,
}

/// What a harness leaves to the next one of its thread (see
/// [`Harness::new`]): which seeded keys its input changed, and whether it
/// changed anything else the counts may not show.
struct Leftover {
    touched: Vec<bool>,
    dirty_moved: bool,
    full_at_ms: u64,
    since_compaction: u32,
}

/// The client id the seed keys' watches are registered under; no client
/// has it (ids count up from 1).
const WATCHER_ID: u64 = u64::MAX;

/// Per database: (keys, keys with a TTL) as [`SEED`] leaves them.
fn seeded_counts(db: usize) -> (u64, u64) {
    if db == 0 {
        (SEED.len() as u64, 1)
    } else {
        (0, 0)
    }
}

/// True when every database's key and TTL counts are the seeded ones.
fn counts_as_seeded(store: &roaringd_store::Store) -> bool {
    store
        .db_stats()
        .iter()
        .enumerate()
        .all(|(db, s)| (s.keys, s.expires) == seeded_counts(db))
}

/// Removes every key of `store` but `keep` (keys of database 0, which
/// exist): expired keys by an expiry cycle (KEYS does not list them), the
/// others by DEL rather than FLUSHALL (a flush clears every lock stripe's
/// cache, which costs more than most inputs). False if keys remain after
/// a few rounds (they keep expiring).
fn delete_keys(store: &roaringd_store::Store, keep: &[&[u8]]) -> bool {
    let kept = |db: u16| if db == 0 { keep.len() as u64 } else { 0 };
    for _round in 0..3 {
        let extra: Vec<u16> = (0..)
            .zip(store.db_stats())
            .filter_map(|(db, s)| (s.keys > kept(db)).then_some(db))
            .collect();
        if extra.is_empty() {
            return true;
        }
        store.active_expire_cycle(usize::MAX).expect("expiry");
        for db in extra {
            let keys: Vec<Vec<u8>> = store
                .begin(&[])
                .keys(db, b"*")
                .expect("KEYS")
                .into_iter()
                .filter(|k| db != 0 || !keep.contains(&k.as_slice()))
                .collect();
            let locked: Vec<(u16, &[u8])> = keys.iter().map(|k| (db, k.as_slice())).collect();
            let mut txn = store.begin(&locked);
            for k in &keys {
                txn.del(db, k).expect("DEL");
            }
            txn.commit().expect("DEL commit");
        }
    }
    (0..)
        .zip(store.db_stats())
        .all(|(db, s)| s.keys == kept(db))
}

/// Empties `store` (a flush when DEL does not do it) and drops its stale
/// elements.
fn empty_store(store: &roaringd_store::Store) {
    if !delete_keys(store, &[]) {
        let mut txn = store.begin_exclusive();
        txn.flush_all().expect("FLUSHALL");
        txn.commit().expect("FLUSHALL commit");
    }
    store.compact().expect("compaction");
}

/// One server and one connection to it, in process.
struct Harness {
    server: Server,
    client: Client,
    parser: RequestParser,
    batch: Batch,
    out: Vec<u8>,
    /// The watches that tell what the input changed (see [`Seeded`]).
    seeded: Seeded,
}

impl Harness {
    /// A server over an in-memory store that holds [`SEED`]'s keys and
    /// nothing else, with one authenticated client (`default` has no
    /// password). The server, its settings and its users are new; the
    /// store is the thread's [`STORE`], put back as seeded: only the keys
    /// the last input changed are deleted and seeded again, or, when
    /// that leaves something other than the seeded counts, every
    /// [`FULL_RESEED_MS`] and the first time, all of them.
    fn new() -> Harness {
        let config = Config {
            max_reply_bytes: MAX_REPLY_BYTES,
            ..Config::default()
        };
        let store = STORE.with(|s| s.clone());
        // Settings CONFIG SET may have changed in the store.
        store.set_sync_mode(crate::start::sync_mode(config.appendfsync));
        store.set_container_cache_bytes(config.container_cache_bytes);
        store.set_write_back_bytes(config.write_back_bytes);
        let server = Server::new(config, store);
        let id = server.next_client_id.fetch_add(1, Ordering::Relaxed);
        let addr = |port| SocketAddr::from(([127, 0, 0, 1], port));
        let user = server.acl.default_user();
        let info = Arc::new(ClientInfo::new(
            id,
            addr(40000),
            addr(6379),
            now_ms(),
            user.clone(),
        ));
        server.clients.lock().insert(id, info.clone());
        let client = Client::new(info, user, server.acl.generation(), true);
        let last = LAST.with(|l| l.borrow_mut().take());
        let mut h = Harness {
            server,
            client,
            parser: RequestParser::new(),
            batch: Batch::default(),
            out: Vec::new(),
            seeded: Seeded {
                touched: Vec::new(),
                dirty: 0,
                full_at_ms: 0,
                since_compaction: 0,
            },
        };
        h.reseed(last);
        h.server.store.reset_keyspace_stats();
        h.seeded.dirty = h.server.stats.dirty.get();
        h.seeded.touched = SEED
            .iter()
            .map(|row| {
                let mut set = crate::watch::WatchSet::default();
                h.server
                    .watches
                    .watch(WATCHER_ID, &mut set, 0, row[1].as_bytes(), true);
                set.dirty
            })
            .collect();
        h
    }

    /// Puts the store back into its seeded state after the input `last`
    /// describes (see [`Harness::new`]).
    fn reseed(&mut self, last: Option<Leftover>) {
        let store = self.server.store.clone();
        let now = now_ms();
        let rows: Vec<usize> = match last {
            Some(last) if now.saturating_sub(last.full_at_ms) < FULL_RESEED_MS => {
                self.seeded.full_at_ms = last.full_at_ms;
                self.seeded.since_compaction = last.since_compaction;
                let touched: Vec<usize> = (0..SEED.len()).filter(|&i| last.touched[i]).collect();
                let counts = counts_as_seeded(&store);
                if touched.is_empty() && counts && !last.dirty_moved {
                    // Nothing changed (a write that changes nothing still
                    // marks its key).
                    return;
                }
                let keep: Vec<&[u8]> = (0..SEED.len())
                    .filter(|i| !touched.contains(i))
                    .map(|i| SEED[i][1].as_bytes())
                    .collect();
                // A change that neither a watch nor the counts show (keys
                // made and deleted again, or a watch missed one): all.
                let unexplained = touched.is_empty() && counts;
                if !unexplained && delete_keys(&store, &keep) {
                    self.seeded.since_compaction += 1;
                    #[cfg(test)]
                    RESTORES.with(|r| r.set(r.get() + 1));
                    touched
                } else {
                    self.full_reseed(now)
                }
            }
            _ => self.full_reseed(now),
        };
        if self.seeded.since_compaction >= 256 {
            store.compact().expect("compaction");
            self.seeded.since_compaction = 0;
        }
        let seed: Vec<Vec<Vec<u8>>> = rows.iter().map(|&i| words(SEED[i])).collect();
        let replies = self.read(&seed, false);
        assert!(
            replies.iter().all(|f| !f.is_error()),
            "seeding failed: {replies:?}"
        );
        assert!(
            counts_as_seeded(&store),
            "seeding left {:?}",
            store.db_stats()
        );
    }

    /// Empties the store; returns every [`SEED`] row, to be run.
    fn full_reseed(&mut self, now: u64) -> Vec<usize> {
        empty_store(&self.server.store);
        self.seeded.full_at_ms = now;
        self.seeded.since_compaction = 0;
        (0..SEED.len()).collect()
    }

    /// True when the input may have changed the keyspace (see [`Seeded`]).
    fn changed(&self) -> bool {
        self.server.stats.dirty.get() != self.seeded.dirty
            || self
                .seeded
                .touched
                .iter()
                .any(|t| t.load(Ordering::Acquire))
            || !counts_as_seeded(&self.server.store)
    }

    /// Sends `reqs` in one read (multibulk, or inline where `inline` and
    /// the arguments allow) and runs them as a connection does; checks and
    /// returns the replies.
    fn read(&mut self, reqs: &[Vec<Vec<u8>>], inline: bool) -> Vec<Frame> {
        let mut wire = Vec::new();
        for r in reqs {
            if inline && r.iter().all(|a| inline_safe(a)) {
                wire.extend_from_slice(&r.join(&b' '));
                wire.extend_from_slice(b"\r\n");
            } else {
                encode_command(&mut wire, r);
            }
        }
        let ran = self.process(&wire);
        let out = std::mem::take(&mut self.out);
        let replies = decode_replies(&out);
        // A request refused because its connection's user was deleted
        // closes the connection without a reply.
        let closed = self.client.close_after_reply;
        assert!(
            replies.len() == ran || (closed && replies.len() + 1 == ran),
            "{ran} requests got {} replies: {reqs:?} -> {replies:?}",
            replies.len()
        );
        replies
    }

    /// Parses and runs every request in `wire` (as `connection::process`
    /// does); returns how many ran. The connection's later requests are
    /// dropped once it is closing.
    fn process(&mut self, wire: &[u8]) -> usize {
        let h = self;
        let limits = Limits::default();
        let mut start = 0;
        let mut ran = 0;
        while start < wire.len() && !h.client.close_after_reply {
            let used = match h.parser.parse(&wire[start..], &limits) {
                Ok(Some(used)) => used,
                other => panic!("the harness's own request does not parse: {other:?}"),
            };
            ran += 1;
            let grouped = match h.parser.multibulk_spans() {
                Some(spans) => {
                    let mut push = h
                        .batch
                        .try_push(&h.server, &mut h.client, wire, start, spans);
                    if push == Push::Cold {
                        // As the connection does, but on this thread.
                        let _ = h.server.store.warm(&h.client.cold);
                        h.client.warmed = true;
                        push = h
                            .batch
                            .try_push(&h.server, &mut h.client, wire, start, spans);
                    }
                    push == Push::Grouped
                }
                None => false,
            };
            if !grouped {
                h.batch.flush(&h.server, &mut h.client, wire, &mut h.out);
                let args = h.parser.args(&wire[start..]);
                dispatch::execute(&h.server, &mut h.client, args, &mut h.out);
            }
            start += used;
        }
        h.batch.flush(&h.server, &mut h.client, wire, &mut h.out);
        // Streamed replies, produced whole in their places.
        crate::stream::inline_streams(&mut h.client, &mut h.out);
        ran
    }

    /// In every database, the live keys a scan finds agree with DBSIZE,
    /// which also counts expired keys not yet removed.
    fn check_keyspace(&self) {
        let stats = self.server.store.db_stats();
        let txn = self.server.store.begin(&[]);
        for (db, s) in stats.iter().enumerate() {
            let db = db as u16;
            let dbsize = txn.dbsize(db).expect("dbsize");
            let live = txn.keys(db, b"*").expect("keys").len() as u64;
            assert!(
                live <= dbsize && dbsize <= live + s.expires,
                "db {db}: {live} live keys, DBSIZE {dbsize}, {} with a TTL",
                s.expires
            );
        }
    }
}

impl Drop for Harness {
    /// Tells the thread's next harness what this one's input changed.
    fn drop(&mut self) {
        let left = Leftover {
            touched: self
                .seeded
                .touched
                .iter()
                .map(|t| t.load(Ordering::Acquire))
                .collect(),
            dirty_moved: self.server.stats.dirty.get() != self.seeded.dirty,
            full_at_ms: self.seeded.full_at_ms,
            since_compaction: self.seeded.since_compaction,
        };
        LAST.with(|l| *l.borrow_mut() = Some(left));
    }
}

/// Decodes every reply in `out`: all of it must be well-formed RESP, and
/// no reply (or element of one) may report a panic.
fn decode_replies(out: &[u8]) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut at = 0;
    while at < out.len() {
        match Frame::decode(&out[at..]) {
            Ok(Some((frame, used))) => {
                check_no_panic(&frame);
                frames.push(frame);
                at += used;
            }
            other => panic!(
                "malformed reply at byte {at}: {other:?} in {:?}",
                String::from_utf8_lossy(&out[at..out.len().min(at + 200)])
            ),
        }
    }
    frames
}

fn check_no_panic(frame: &Frame) {
    match frame {
        Frame::Error(t) | Frame::BulkError(t) => assert!(
            !t.starts_with(b"ERR internal error"),
            "a handler panicked: {}",
            String::from_utf8_lossy(t)
        ),
        Frame::Array(items) | Frame::Set(items) | Frame::Push(items) => {
            items.iter().for_each(check_no_panic)
        }
        Frame::Map(pairs) => pairs.iter().for_each(|(k, v)| {
            check_no_panic(k);
            check_no_panic(v);
        }),
        Frame::Attribute { value, .. } => check_no_panic(value),
        _ => {}
    }
}

/// True when `arg` survives an inline request unchanged.
fn inline_safe(arg: &[u8]) -> bool {
    !arg.is_empty()
        && arg
            .iter()
            .all(|&c| c.is_ascii_graphic() && !matches!(c, b'"' | b'\'' | b'\\'))
}

/// False for the requests the harness never sends (see the module docs).
fn allowed(req: &[Vec<u8>]) -> bool {
    let Some(entry) = req.first().and_then(|n| CommandTable::get().lookup(n)) else {
        return true;
    };
    let entry = match req.get(1) {
        Some(sub) if !entry.subs.is_empty() => entry.sub(sub).unwrap_or(entry),
        _ => entry,
    };
    let number = |i: usize| {
        req.get(i)
            .and_then(|a| roaringd_compat::number::parse_i64(a))
    };
    match entry.full_name {
        name if SKIPPED.contains(&name) => false,
        "config|set" => !req[2..].iter().step_by(2).any(|name| {
            PROTECTED_SETTINGS
                .iter()
                .any(|p| p.as_bytes().eq_ignore_ascii_case(name))
        }),
        "tr.setrange" | "tr.fliprange" => match (number(2), number(3)) {
            (Some(start), Some(end)) => end.saturating_sub(start) < MAX_RANGE_WRITE,
            _ => true,
        },
        _ => true,
    }
}

fn words(ws: &[&str]) -> Vec<Vec<u8>> {
    ws.iter().map(|w| w.as_bytes().to_vec()).collect()
}

/// The fuzz input, read front to back; zeros once it runs out.
struct Source<'a>(&'a [u8]);

impl Source<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// `items[i]` for an index read from the input.
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        let i = usize::from(self.byte()) << 8 | usize::from(self.byte());
        items[i % items.len()]
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        let n = n.min(self.0.len());
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        taken.to_vec()
    }
}

/// A request for a row of the table: its name (and subcommand name),
/// then usually as many arguments as its arity asks for (a few more for a
/// variadic row), sometimes any number from 0 to 11.
fn request(src: &mut Source<'_>) -> Vec<Vec<u8>> {
    let entry = src.pick(&ROWS);
    let shape = src.byte();
    let mut req = Vec::new();
    if entry.is_sub {
        let (parent, _) = entry
            .full_name
            .split_once('|')
            .expect("a subcommand's full name has a '|'");
        req.push(cased(parent, shape));
        req.push(cased(entry.spec.name, shape));
    } else {
        req.push(cased(entry.spec.name, shape));
    }
    let arity = entry.spec.arity.unsigned_abs() as usize;
    let extra = if shape & 7 == 0 {
        usize::from(shape >> 3) % 12
    } else if entry.spec.arity < 0 {
        arity.saturating_sub(req.len()) + usize::from(shape >> 3) % 4
    } else {
        arity.saturating_sub(req.len())
    };
    for _ in 0..extra {
        req.push(arg(src));
    }
    req
}

/// A name in lower, upper or mixed case.
fn cased(name: &str, shape: u8) -> Vec<u8> {
    match shape >> 6 {
        0 => name.as_bytes().to_vec(),
        1 => name.to_ascii_uppercase().into_bytes(),
        _ => name
            .bytes()
            .enumerate()
            .map(|(i, c)| {
                if i % 2 == 0 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect(),
    }
}

/// One argument: a key, a number, a word, a small integer or random bytes.
fn arg(src: &mut Source<'_>) -> Vec<u8> {
    let tag = src.byte();
    match tag % 8 {
        0..=2 => src.pick(KEYS).as_bytes().to_vec(),
        3 | 4 => src.pick(NUMBERS).as_bytes().to_vec(),
        5 => src.pick(&WORDS).as_bytes().to_vec(),
        6 => (i64::from(src.byte()) - 16).to_string().into_bytes(),
        _ => {
            let n = usize::from(tag >> 3) % 20;
            src.bytes(n)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn dispatch_fuzz_logic_over_random_inputs() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0xd15_9a7c);
        for _ in 0..3000 {
            let n = rng.random_range(0..400);
            let data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            fuzz_dispatch(&data);
        }
    }

    #[test]
    fn every_row_but_the_skipped_ones_is_fuzzed() {
        let all = CommandTable::get().all_entries().count();
        assert_eq!(ROWS.len() + SKIPPED.len(), all);
        assert!(ROWS.iter().any(|e| e.full_name == "config|set"));
        assert!(!allowed(&words(&["config", "SET", "LogLevel", "debug"])));
        assert!(!allowed(&words(&[
            "CONFIG",
            "set",
            "x",
            "1",
            "max-reply-bytes",
            "1"
        ])));
        assert!(allowed(&words(&["config", "set", "maxmemory", "1"])));
        assert!(!allowed(&words(&["debug", "Sleep", "1"])));
        assert!(allowed(&words(&["debug", "help"])));
        assert!(!allowed(&words(&["TR.SETRANGE", "k", "0", "4294967295"])));
        assert!(!allowed(&words(&["tr.fliprange", "k", "5", "1048581"])));
        assert!(allowed(&words(&["tr.fliprange", "k", "5", "1048580"])));
        assert!(allowed(&words(&[
            "TR.SETRANGE",
            "k",
            "4293918720",
            "4294967295"
        ])));
        assert!(allowed(&words(&[
            "TR.SETRANGE",
            "k",
            "9",
            "-9223372036854775808"
        ])));
        assert!(allowed(&words(&["TR.SETRANGE", "k", "0", "1e9"])));
    }

    /// Inputs the fuzz target once crashed on; each must now run clean.
    #[test]
    fn fuzz_findings_stay_fixed() {
        // TR.RANGEBITARRAY's work estimate (`work::range_bits`) computed
        // `end - start + 1` in u64: `0 18446744073709551615` overflowed
        // (a panic outside the handler, in builds with overflow checks).
        fuzz_dispatch(&[
            0xff, 0x64, 0xc3, 0xc3, 0xc3, 0xc3, 0xcb, 0xc3, 0xc3, 0xc3, 0x74, 0x08,
        ]);
        let mut h = Harness::new();
        let req = words(&["TR.RANGEBITARRAY", "tr", "0", "18446744073709551615"]);
        assert_eq!(
            h.read(&[req], false),
            [Frame::error(
                "ERR bad arguments, must be unsigned 32-bit integer"
            )]
        );
    }

    /// Every key of every database with its type, TTL (set or not) and
    /// value, as replies.
    fn keyspace_dump(h: &mut Harness) -> Vec<Frame> {
        let mut dump = Vec::new();
        for db in 0..16 {
            h.read(&[words(&["SELECT", &db.to_string()])], false);
            let keys = h.read(&[words(&["KEYS", "*"])], false);
            let Some(Frame::Array(keys)) = keys.first() else {
                panic!("KEYS: {keys:?}");
            };
            let mut keys: Vec<Vec<u8>> = keys
                .iter()
                .map(|k| k.as_bytes().expect("a key").to_vec())
                .collect();
            keys.sort();
            for key in keys {
                let cmd = |c: &str| vec![c.as_bytes().to_vec(), key.clone()];
                let ty = h.read(&[cmd("TYPE")], false);
                let read = match ty[0].as_bytes() {
                    Some(b"string") => "GET",
                    Some(b"set") => "SMEMBERS",
                    Some(b"hash") => "HGETALL",
                    _ => "TR.EXPORT",
                };
                let mut value = h.read(&[cmd(read), cmd("TTL")], false);
                if let Frame::Array(items) = &mut value[0] {
                    items.sort_by_key(Frame::to_bytes);
                }
                value[1] = Frame::Integer(i64::from(value[1] != Frame::Integer(-1)));
                dump.push(Frame::bulk(key.clone()));
                dump.extend(ty);
                dump.extend(value);
            }
        }
        h.read(&[words(&["SELECT", "0"])], false);
        dump
    }

    /// After any input, the next harness's store holds what a fresh
    /// store seeded from scratch holds (the selective restore).
    #[test]
    fn each_input_starts_from_the_seeded_keyspace() {
        let seeded = keyspace_dump(&mut Harness::new());
        // Leave the first harness's changes behind (SELECT touches none).
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed_0de5);
        for i in 0..400 {
            let n = rng.random_range(0..300);
            let data: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            fuzz_dispatch(&data);
            let mut h = Harness::new();
            assert_eq!(keyspace_dump(&mut h), seeded, "after input {i}: {data:?}");
        }
        let selective = RESTORES.with(std::cell::Cell::get);
        assert!(selective > 100, "only {selective} selective restores");
    }

    #[test]
    fn seeded_keys_have_every_type() {
        let mut h = Harness::new();
        let types: Vec<Vec<Vec<u8>>> = KEYS.iter().map(|k| words(&["TYPE", k])).collect();
        let got: Vec<String> = h
            .read(&types, false)
            .iter()
            .map(|f| String::from_utf8_lossy(f.as_bytes().unwrap_or_default()).into_owned())
            .collect();
        for t in ["string", "set", "hash", "none"] {
            assert!(got.iter().any(|g| g == t), "no {t} key: {got:?}");
        }
        assert!(got.len() == KEYS.len() && got.iter().filter(|g| *g == "none").count() == 3);
        h.check_keyspace();
    }
}
