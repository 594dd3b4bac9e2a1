//! One connection: read into a reused buffer, execute every complete
//! request in it (consecutive data commands as one store transaction, see
//! `pipeline`), encode all replies into one output buffer, write once.
//!
//! A protocol error replies with Redis's text and closes this connection
//! only. The read buffer grows only with bytes actually received; the
//! query-buffer limit closes a client that exceeds it (no reply, as Redis).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use roaringd_resp::{Limits, ReplyEncoder, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::client::{Client, ClientInfo};
use crate::dispatch;
use crate::pipeline::Batch;
use crate::state::{now_ms, Server};

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
    // One `Notified` for the connection's life: created per read, it would
    // join and leave the Notify's waiter list (a mutex each way) every time.
    // `kill` uses `notify_one`, whose permit also reaches a future that has
    // not been polled yet.
    let killed = info.kill_notify.notified();
    tokio::pin!(killed);

    loop {
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
        if !out.is_empty() {
            server.stats.net_output_bytes.add(out.len() as u64);
            match write_out(&server, &mut stream, &out).await {
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
            }
            out.clear();
            shrink(&mut out);
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
                let grouped = match parser.multibulk_spans() {
                    Some(spans) => batch.try_push(server, client, rbuf, start, spans),
                    None => false,
                };
                if !grouped {
                    batch.flush(server, client, rbuf, out);
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

/// True (and `out` emptied: Redis sends nothing more to such a client)
/// when the replies pending in `out` reach the normal clients'
/// `client-output-buffer-limit` hard limit; the client is then closed.
fn over_hard_limit(server: &Server, client: &Client, out: &mut Vec<u8>) -> bool {
    let hard = server.hot.obuf_hard.load(Ordering::Relaxed);
    if hard == 0 || (out.len() as u64) < hard {
        return false;
    }
    crate::warning!(
        "Client id={} addr={} closed for overcoming of output buffer limits ({} bytes pending, hard limit {}).",
        client.id,
        client.info.addr,
        out.len(),
        hard
    );
    out.clear();
    true
}

/// Why [`write_out`] stopped early.
enum WriteEnd {
    /// The peer is gone or the write failed.
    Failed,
    /// More than the soft output limit stayed pending for its seconds.
    OverSoftLimit,
}

/// Writes `out` to the client. While more than the normal clients'
/// `client-output-buffer-limit` soft limit (when set) is still pending,
/// the writing must get under it within its soft seconds, else the client
/// is closed as Redis closes it.
async fn write_out(server: &Server, stream: &mut TcpStream, out: &[u8]) -> Result<(), WriteEnd> {
    let soft = server.hot.obuf_soft.load(Ordering::Relaxed) as usize;
    let mut pos = 0;
    if soft > 0 && out.len() > soft {
        let secs = server.hot.obuf_soft_secs.load(Ordering::Relaxed);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(secs);
        while out.len() - pos > soft {
            match tokio::time::timeout_at(deadline, stream.write(&out[pos..])).await {
                Ok(Ok(0)) | Ok(Err(_)) => return Err(WriteEnd::Failed),
                Ok(Ok(n)) => pos += n,
                Err(_) => return Err(WriteEnd::OverSoftLimit),
            }
        }
    }
    stream
        .write_all(&out[pos..])
        .await
        .map_err(|_| WriteEnd::Failed)
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
