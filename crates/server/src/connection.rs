//! One connection: read into a reused buffer, execute every complete
//! request in it (consecutive data commands as one store transaction, see
//! `pipeline`), encode all replies into one output buffer, write once.
//! A streamed reply (`crate::stream`) stops the execution there: the
//! replies before it are written, then the stream a chunk at a time, then
//! the requests left in the buffer run before the next read.
//!
//! A protocol error replies with Redis's text and closes this connection
//! only. The read buffer grows only with bytes actually received; the
//! query-buffer limit closes a client that exceeds it (no reply, as Redis).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use roaringd_resp::{Limits, ReplyEncoder, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use std::pin::Pin;

use tokio::sync::futures::Notified;

use crate::client::{Client, ClientInfo};
use crate::dispatch;
use crate::pipeline::{Batch, Push};
use crate::state::{now_ms, Server};
use crate::stream::{StreamedReply, CHUNK_BYTES};

/// Smallest free space offered to each read.
const READ_CHUNK: usize = 16 * 1024;
/// Buffers above this size are shrunk back after use.
const SHRINK_ABOVE: usize = 1024 * 1024;

/// Serves one client until it quits, is killed, errs, or the server stops.
pub async fn serve(server: Arc<Server>, mut stream: TcpStream, info: Arc<ClientInfo>) {
    // As Redis: a connection made while `default` needs no password is
    // authenticated for good.
    let acl_gen = server.acl.generation();
    let user = server.acl.default_user();
    let authenticated = user.nopass && user.enabled;
    let mut client = Client::new(info.clone(), user, acl_gen, authenticated);
    let mut parser = RequestParser::new();
    // Allocated on the first read, so idle connections cost little.
    let mut rbuf: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let mut limits = current_limits(&server, &client);
    let mut batch = Batch::default();
    // A streamed reply's chunk, reused.
    let mut chunk: Vec<u8> = Vec::new();
    // Complete requests left in `rbuf` after a streamed reply: run them
    // before reading again.
    let mut more = false;
    // One `Notified` for the connection's life: created per read, it would
    // join and leave the Notify's waiter list (a mutex each way) every time.
    // `kill` uses `notify_one`, whose permit also reaches a future that has
    // not been polled yet.
    let killed = info.kill_notify.notified();
    tokio::pin!(killed);

    loop {
        if !client.cold.is_empty() {
            warm(&server, &mut client).await;
        }
        if !more {
            if rbuf.capacity() - rbuf.len() < READ_CHUNK {
                rbuf.reserve(READ_CHUNK.max(rbuf.len() / 2));
            }
            let idle = server.hot.timeout.load(Ordering::Relaxed);
            let idle_limit = async {
                if idle == 0 || client.multi.is_some() {
                    std::future::pending::<()>().await;
                } else {
                    tokio::time::sleep(std::time::Duration::from_secs(idle)).await;
                }
            };
            let n = tokio::select! {
                // Fixed order (no random draw per read); a kill is still seen
                // at once, as `killed` is checked after every read.
                biased;
                r = stream.read_buf(&mut rbuf) => match r {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                },
                () = &mut killed => break,
                _ = idle_limit => {
                    crate::verbose!("Closing idle client id={}", info.id);
                    break;
                }
            };
            if info.killed.load(Ordering::Acquire) {
                break;
            }
            server.stats.net_input_bytes.add(n as u64);
            info.last_interaction_ms.store(now_ms(), Ordering::Relaxed);
        }

        // A panic in a handler must not take the server down (nor leave
        // this client registered): reply with an error and close.
        let processed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            process(
                &server,
                &mut client,
                &mut parser,
                &mut batch,
                &rbuf,
                &mut out,
                &mut limits,
            )
        }));
        let (start, close) = match processed {
            Ok(r) => r,
            Err(_) => {
                crate::warning!("Internal error while serving client id={}", info.id);
                let mut enc = ReplyEncoder::new(&mut out, client.protocol);
                enc.error(b"ERR internal error");
                (rbuf.len(), true)
            }
        };
        more =
            !close && start < rbuf.len() && !(client.streams.is_empty() && client.cold.is_empty());
        if start == rbuf.len() {
            rbuf.clear();
            parser.reset();
        } else if start > 0 {
            rbuf.drain(..start);
        }
        info.qbuf.store(rbuf.len() as u64, Ordering::Relaxed);
        if !close && rbuf.len() > limits.max_query_buf {
            crate::warning!(
                "Closing client that reached max query buffer length: id={} addr={} (qbuf={})",
                info.id,
                info.addr,
                rbuf.len()
            );
            break;
        }

        if client.wrote {
            client.wrote = false;
            if server.hot.write_before_reply.load(Ordering::Relaxed) {
                // `write-before-reply`: one write(2) for the whole read
                // buffer's commits. A failure surfaces on the next commit
                // (the journal is poisoned then).
                if let Err(e) = server.store.write_to_os() {
                    crate::warning!("Writing the log before replying failed: {e}");
                }
            }
        }
        if client.needs_sync {
            // `appendfsync always`: no reply before its write is synced.
            client.needs_sync = false;
            if let Err(e) = server.group_sync.sync(&server.store).await {
                crate::warning!(
                    "Syncing the log before replying failed ({e}); closing client id={} addr={}",
                    info.id,
                    info.addr
                );
                break;
            }
        }
        if server.shutting_down.load(Ordering::Acquire) {
            // The shutdown's last persist may have come before this read
            // buffer's commits (the connection ran them after it was
            // killed, before it noticed): no reply acknowledges them. A
            // commit queued after that persist sees the flag here, as the
            // flag was set before the persist was queued.
            break;
        }
        if !out.is_empty() || !client.streams.is_empty() {
            let streams = std::mem::take(&mut client.streams);
            let written = Writer::new(&server, &mut stream, killed.as_mut())
                .write_all(&out, &streams, &mut chunk)
                .await;
            drop(streams);
            match written {
                Ok(()) => {}
                Err(WriteEnd::Failed) => break,
                Err(WriteEnd::OverSoftLimit) => {
                    crate::warning!(
                        "Client id={} addr={} closed for overcoming of output buffer soft limit.",
                        info.id,
                        info.addr
                    );
                    break;
                }
                Err(WriteEnd::OverHardLimit(pending)) => {
                    warn_hard_limit(&server, &client, pending);
                    break;
                }
                Err(WriteEnd::StreamFailed(e)) => {
                    crate::warning!(
                        "Closing client id={} addr={}: a streamed reply failed: {e}",
                        info.id,
                        info.addr
                    );
                    break;
                }
            }
            out.clear();
            shrink(&mut out);
            shrink(&mut chunk);
        }
        if rbuf.is_empty() {
            shrink(&mut rbuf);
        }
        if close || server.shutting_down.load(Ordering::Acquire) {
            break;
        }
    }
    let _ = stream.shutdown().await;
    server.watches.unwatch_all(client.id, &mut client.watch);
    server.clients.lock().remove(&client.id);
}

/// Reads the keys of `client.cold` into the memory tier on the warm pool
/// (`warm.rs`) while this task waits, so the worker serves its other
/// connections meanwhile, and lets the next request run without the
/// residency check (`client.warmed`).
async fn warm(server: &Server, client: &mut Client) {
    let names = std::mem::take(&mut client.cold);
    let mut names = server.warm.warm(&server.store, names).await;
    names.clear();
    client.cold = names;
    client.warmed = true;
}

/// Gives back the memory of an empty buffer grown past [`SHRINK_ABOVE`],
/// keeping [`READ_CHUNK`]. A buffer of a big reply (hundreds of MB) is
/// freed on a blocking thread: unmapping it took the worker tens of ms.
fn shrink(buf: &mut Vec<u8>) {
    if buf.capacity() <= SHRINK_ABOVE {
        return;
    }
    let old = std::mem::replace(buf, Vec::with_capacity(READ_CHUNK));
    if old.capacity() > crate::dispatch::LONG_REPLY_BYTES {
        tokio::task::spawn_blocking(move || drop(old));
    }
}

/// Executes every complete request in `rbuf`, appending replies to `out`.
/// Returns how many bytes were consumed and whether to close afterwards.
fn process(
    server: &Server,
    client: &mut Client,
    parser: &mut RequestParser,
    batch: &mut Batch,
    rbuf: &[u8],
    out: &mut Vec<u8>,
    limits: &mut Limits,
) -> (usize, bool) {
    let mut start = 0;
    let mut close = false;
    while start < rbuf.len() {
        match parser.parse(&rbuf[start..], limits) {
            Ok(Some(used)) => {
                let push = match parser.multibulk_spans() {
                    Some(spans) => batch.try_push(server, client, rbuf, start, spans),
                    None => Push::Alone,
                };
                if push == Push::Cold {
                    // Its keys are read in off the worker (`serve`), then
                    // it runs (is parsed again).
                    batch.flush(server, client, rbuf, out);
                    let close = over_hard_limit(server, client, out);
                    return (start, close);
                }
                if push == Push::Alone {
                    batch.flush(server, client, rbuf, out);
                    if !client.streams.is_empty() {
                        // The group streams a reply: this request runs
                        // (is parsed again) once the stream is written.
                        let close = over_hard_limit(server, client, out);
                        return (start, close);
                    }
                    let args = parser.args(&rbuf[start..]);
                    dispatch::execute(server, client, args, out);
                }
                start += used;
                if over_hard_limit(server, client, out) {
                    close = true;
                    break;
                }
                if client.close_after_reply {
                    close = true;
                    break;
                }
                if limits.unauthenticated || crate::dispatch::needs_auth(server, client) {
                    *limits = current_limits(server, client);
                }
                if !client.streams.is_empty() {
                    // Written before any later request runs.
                    return (start, false);
                }
            }
            Ok(None) => break,
            Err(e) => {
                batch.flush(server, client, rbuf, out);
                let mut enc = ReplyEncoder::new(out, client.protocol);
                enc.error(e.message().as_bytes());
                server.stats.record_error(b"ERR");
                crate::verbose!("Protocol error ({}) from client: id={}", e, client.id);
                close = true;
                break;
            }
        }
    }
    batch.flush(server, client, rbuf, out);
    if !close && over_hard_limit(server, client, out) {
        close = true;
    }
    (start, close)
}

/// Bytes of the replies pending in `out` and in the client's streamed
/// replies (what they have still to produce, or its lower bound).
fn pending_bytes(client: &Client, out: &[u8]) -> u64 {
    let streams: u64 = client.streams.iter().map(|(_, s)| s.left()).sum();
    out.len() as u64 + streams
}

/// True (and the pending replies dropped: Redis sends nothing more to
/// such a client) when the replies pending in `out` and the client's
/// streams reach the normal clients' `client-output-buffer-limit` hard
/// limit; the client is then closed.
fn over_hard_limit(server: &Server, client: &mut Client, out: &mut Vec<u8>) -> bool {
    let hard = server.hot.obuf_hard.load(Ordering::Relaxed);
    if hard == 0 {
        return false;
    }
    let pending = pending_bytes(client, out);
    if pending < hard {
        return false;
    }
    warn_hard_limit(server, client, pending);
    out.clear();
    client.streams.clear();
    true
}

fn warn_hard_limit(server: &Server, client: &Client, pending: u64) {
    crate::warning!(
        "Client id={} addr={} closed for overcoming of output buffer limits ({} bytes pending, hard limit {}).",
        client.id,
        client.info.addr,
        pending,
        server.hot.obuf_hard.load(Ordering::Relaxed)
    );
}

/// Why [`Writer::write_all`] stopped early.
enum WriteEnd {
    /// The peer is gone, the write failed, or the client was killed.
    Failed,
    /// More than the soft output limit stayed pending for its seconds.
    OverSoftLimit,
    /// A stream turned out to pass the hard output limit (bytes pending).
    OverHardLimit(u64),
    /// A streamed reply's read failed after its first byte.
    StreamFailed(roaringd_store::StoreError),
}

/// Writes the pending replies of one round: the output buffer with the
/// streamed replies in their places, each produced a chunk at a time,
/// the next chunk once the last is written. Against the normal clients'
/// `client-output-buffer-limit`, it counts what Redis's output buffer
/// would hold, where every reply of the round is whole at once:
/// - soft limit: what is still to be written (the buffer's rest, the
///   streams' [`StreamedReply::left`]) must get back under it within its
///   soft seconds;
/// - hard limit: the round's replies, a stream counted by the bytes it
///   has produced plus what it still owes: once that reaches the limit
///   (known only while producing for a stream whose size had a lower
///   bound), the client is closed.
///
/// A kill (CLIENT KILL) ends it at once.
struct Writer<'a, 'n> {
    server: &'a Server,
    stream: &'a mut TcpStream,
    killed: Pin<&'a mut Notified<'n>>,
    /// Bytes still to be written (the soft limit's measure).
    pending: u64,
    /// Bytes of the round's replies (the hard limit's measure).
    total: u64,
    soft: u64,
    /// Set while more than `soft` is pending: when that started plus the
    /// soft seconds.
    deadline: Option<tokio::time::Instant>,
}

impl<'a, 'n> Writer<'a, 'n> {
    fn new(
        server: &'a Server,
        stream: &'a mut TcpStream,
        killed: Pin<&'a mut Notified<'n>>,
    ) -> Self {
        Writer {
            server,
            stream,
            killed,
            pending: 0,
            total: 0,
            soft: server.hot.obuf_soft.load(Ordering::Relaxed),
            deadline: None,
        }
    }

    async fn write_all(
        mut self,
        out: &[u8],
        streams: &[(usize, StreamedReply)],
        chunk: &mut Vec<u8>,
    ) -> Result<(), WriteEnd> {
        self.pending = out.len() as u64 + streams.iter().map(|(_, s)| s.left()).sum::<u64>();
        self.total = self.pending;
        let hard = self.server.hot.obuf_hard.load(Ordering::Relaxed);
        let mut pos = 0;
        for (at, s) in streams {
            self.send(&out[pos..*at]).await?;
            pos = *at;
            loop {
                chunk.clear();
                let before = s.left();
                let done = s
                    .produce(chunk, CHUNK_BYTES)
                    .map_err(WriteEnd::StreamFailed)?;
                // What the stream owes now: this chunk and its rest.
                let owed = chunk.len() as u64 + s.left();
                self.pending = self.pending.saturating_sub(before) + owed;
                self.total = self.total.saturating_sub(before) + owed;
                if hard > 0 && self.total >= hard {
                    return Err(WriteEnd::OverHardLimit(self.total));
                }
                self.send(chunk).await?;
                if done {
                    break;
                }
                // A fast reader never makes the write wait: let the
                // worker's other connections run between chunks (tokio's
                // budget only counts operations, 128 chunks' worth here).
                tokio::task::yield_now().await;
            }
        }
        self.send(&out[pos..]).await
    }

    /// Writes `bytes`, counting them off `pending`.
    async fn send(&mut self, mut bytes: &[u8]) -> Result<(), WriteEnd> {
        while !bytes.is_empty() {
            if self.soft > 0 && self.pending > self.soft {
                if self.deadline.is_none() {
                    let secs = self.server.hot.obuf_soft_secs.load(Ordering::Relaxed);
                    self.deadline =
                        Some(tokio::time::Instant::now() + std::time::Duration::from_secs(secs));
                }
            } else {
                self.deadline = None;
            }
            let deadline = self.deadline;
            let until = async move {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            let n = tokio::select! {
                biased;
                r = self.stream.write(bytes) => match r {
                    Ok(0) | Err(_) => return Err(WriteEnd::Failed),
                    Ok(n) => n,
                },
                () = self.killed.as_mut() => return Err(WriteEnd::Failed),
                () = until => return Err(WriteEnd::OverSoftLimit),
            };
            self.server.stats.net_output_bytes.add(n as u64);
            self.pending = self.pending.saturating_sub(n as u64);
            bytes = &bytes[n..];
        }
        Ok(())
    }
}

fn current_limits(server: &Server, client: &Client) -> Limits {
    let c = server.config.read();
    Limits {
        max_bulk_len: usize::try_from(c.proto_max_bulk_len).unwrap_or(usize::MAX),
        max_query_buf: usize::try_from(c.client_query_buffer_limit).unwrap_or(usize::MAX),
        unauthenticated: crate::dispatch::needs_auth(server, client),
        ..Limits::default()
    }
}
