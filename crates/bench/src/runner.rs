//! Running the load: one OS thread and one blocking connection per worker.
//!
//! Hot path contract: a worker shares nothing with the others while it
//! runs except, with `-c`, a rare claim of a chunk of requests from one
//! atomic counter, and a relaxed store of its own progress counters (each
//! on its own cache line) for the once-a-second progress line. Every worker
//! records latencies into its own [`Histogram`]; they are merged exactly at
//! the end.
//!
//! What is timed: a request's write and the read of its reply(s). With
//! `-P n` the n commands are written together and the window's round trip is
//! recorded for each of them. With `-batching n`, MULTI and the n commands
//! are written and their replies read untimed; then the EXEC round trip is
//! timed, and the transaction counts as one request.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::SeedableRng;
use roaringd_resp::command::encode_command;
use roaringd_resp::frame::Frame;

use crate::dist::Sampler;
use crate::histogram::Histogram;
use crate::options::{Auth, Options, Stop};
use crate::template::Template;

/// Error replies kept verbatim per worker (and in the report).
pub const ERROR_SAMPLES: usize = 5;

/// How long a worker waits for a reply before it gives up.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// One worker's progress, on its own cache line.
#[derive(Default)]
#[repr(align(128))]
struct Slot {
    requests: AtomicU64,
    latency_ns: AtomicU64,
}

/// A progress sample for the per-second line.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Time since the start.
    pub elapsed: Duration,
    /// Requests completed so far.
    pub requests: u64,
    /// Requests per second over the last interval.
    pub qps: f64,
    /// Mean latency over the last interval, in nanoseconds.
    pub avg_ns: f64,
}

/// The merged result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Requests completed (transactions with `-batching`).
    pub requests: u64,
    /// Commands sent inside completed requests.
    pub commands: u64,
    /// Error replies (each error element of an EXEC reply counts).
    pub errors: u64,
    /// The first few error replies, as text.
    pub error_samples: Vec<String>,
    /// Connections that failed (connect, AUTH, I/O, protocol), with why.
    pub failures: Vec<String>,
    /// From the first worker's start to the last worker's end.
    pub elapsed: Duration,
    /// Latency of every completed request.
    pub latency: Histogram,
}

impl Outcome {
    /// Requests per second.
    pub fn qps(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.requests as f64 / secs
        } else {
            0.0
        }
    }
}

struct WorkerResult {
    requests: u64,
    commands: u64,
    errors: u64,
    error_samples: Vec<String>,
    failure: Option<String>,
    started: Instant,
    ended: Instant,
    latency: Histogram,
}

/// Where a worker's next requests come from.
enum Budget {
    /// Claim chunks of a shared total.
    Shared {
        next: Arc<AtomicU64>,
        total: u64,
        chunk: u64,
        left: u64,
    },
    /// Until a deadline.
    Until(Instant),
}

impl Budget {
    /// Up to `want` requests to do now; 0 when the run is over.
    fn take(&mut self, want: u64, now: Instant) -> u64 {
        match self {
            Budget::Until(deadline) => {
                if now < *deadline {
                    want
                } else {
                    0
                }
            }
            Budget::Shared {
                next,
                total,
                chunk,
                left,
            } => {
                if *left == 0 {
                    let at = next.fetch_add(*chunk, Ordering::Relaxed);
                    if at >= *total {
                        return 0;
                    }
                    *left = (*total - at).min(*chunk);
                }
                let n = want.min(*left);
                *left -= n;
                n
            }
        }
    }
}

/// Reads replies from a stream into a reusable buffer.
struct ReplyReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReplyReader {
    fn new() -> ReplyReader {
        ReplyReader {
            buf: vec![0; 64 * 1024],
            start: 0,
            end: 0,
        }
    }

    fn next(&mut self, stream: &mut TcpStream) -> io::Result<Frame> {
        loop {
            match Frame::decode(&self.buf[self.start..self.end]) {
                Ok(Some((frame, used))) => {
                    self.start += used;
                    if self.start == self.end {
                        self.start = 0;
                        self.end = 0;
                    }
                    return Ok(frame);
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.end == self.buf.len() {
                let len = self.buf.len() * 2;
                self.buf.resize(len, 0);
            }
            let n = stream.read(&mut self.buf[self.end..])?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "server closed the connection",
                ));
            }
            self.end += n;
        }
    }
}

/// Error tally of one worker.
#[derive(Default)]
struct Errors {
    count: u64,
    samples: Vec<String>,
}

impl Errors {
    fn note(&mut self, text: String) {
        self.count += 1;
        if self.samples.len() < ERROR_SAMPLES {
            self.samples.push(text);
        }
    }

    /// Counts a reply that must not be an error.
    fn check(&mut self, reply: &Frame) {
        if reply.is_error() {
            self.note(reply.to_string());
        }
    }

    /// Counts an EXEC reply: an error or null reply, or each error element.
    fn check_exec(&mut self, reply: &Frame) {
        match reply {
            Frame::Array(items) => items.iter().for_each(|f| self.check(f)),
            Frame::NullArray | Frame::Null => self.note("EXEC returned null (aborted)".into()),
            other => self.check(other),
        }
    }
}

fn connect(opts: &Options) -> Result<(TcpStream, ReplyReader), String> {
    // Every resolved address is tried in turn (`localhost` may be ::1 first).
    let addrs: Vec<_> = (opts.host.as_str(), opts.port)
        .to_socket_addrs()
        .map_err(|e| format!("resolve {}:{}: {e}", opts.host, opts.port))?
        .collect();
    let mut stream = TcpStream::connect(&addrs[..])
        .map_err(|e| format!("connect {}:{}: {e}", opts.host, opts.port))?;
    let setup = |s: &TcpStream| -> io::Result<()> {
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(READ_TIMEOUT))
    };
    setup(&stream).map_err(|e| format!("socket options: {e}"))?;
    let mut reader = ReplyReader::new();
    if let Some(auth) = &opts.auth {
        authenticate(&mut stream, &mut reader, auth)?;
    }
    Ok((stream, reader))
}

/// Sends `auth`'s AUTH forms in turn until one is accepted.
///
/// # Errors
/// The first refusal (or an I/O error).
fn authenticate(
    stream: &mut TcpStream,
    reader: &mut ReplyReader,
    auth: &Auth,
) -> Result<(), String> {
    let mut first_error = None;
    for cmd in auth.attempts() {
        let mut req = Vec::new();
        encode_command(&mut req, &cmd);
        let reply = stream
            .write_all(&req)
            .and_then(|()| reader.next(stream))
            .map_err(|e| format!("AUTH: {e}"))?;
        if !reply.is_error() {
            return Ok(());
        }
        first_error.get_or_insert_with(|| format!("AUTH: {reply}"));
    }
    Err(first_error.unwrap_or_else(|| "AUTH: no credentials".into()))
}

struct Worker<'a> {
    opts: &'a Options,
    template: &'a Template,
    rand: Sampler,
    rand2: Sampler,
    rng: SmallRng,
    slot: &'a Slot,
}

impl Worker<'_> {
    fn run(
        mut self,
        stream: &mut TcpStream,
        reader: &mut ReplyReader,
        budget: &mut Budget,
        result: &mut WorkerResult,
    ) -> io::Result<()> {
        let mut out = Vec::with_capacity(4096);
        let mut scratch = Vec::with_capacity(256);
        let mut errors = Errors::default();
        let mut latency_sum = 0u64;
        let batching = self.opts.batching;
        let window = if batching > 0 {
            1
        } else {
            self.opts.pipeline as u64
        };
        let mut now = Instant::now();
        let outcome = loop {
            let n = budget.take(window, now);
            if n == 0 {
                break Ok(());
            }
            out.clear();
            let step = (|| -> io::Result<u64> {
                if batching > 0 {
                    encode_command(&mut out, &["MULTI"]);
                    for _ in 0..batching {
                        self.render(&mut out, &mut scratch);
                    }
                    stream.write_all(&out)?;
                    for _ in 0..=batching {
                        errors.check(&reader.next(stream)?);
                    }
                    let t0 = Instant::now();
                    stream.write_all(b"*1\r\n$4\r\nEXEC\r\n")?;
                    let reply = reader.next(stream)?;
                    now = Instant::now();
                    errors.check_exec(&reply);
                    Ok(elapsed_ns(t0, now))
                } else {
                    for _ in 0..n {
                        self.render(&mut out, &mut scratch);
                    }
                    let t0 = Instant::now();
                    stream.write_all(&out)?;
                    for _ in 0..n {
                        let reply = reader.next(stream)?;
                        errors.check(&reply);
                    }
                    now = Instant::now();
                    Ok(elapsed_ns(t0, now))
                }
            })();
            match step {
                Ok(ns) => {
                    result.latency.record_n(ns, n);
                    result.requests += n;
                    result.commands += n * batching.max(1) as u64;
                    latency_sum = latency_sum.wrapping_add(ns * n);
                    self.slot.requests.store(result.requests, Ordering::Relaxed);
                    self.slot.latency_ns.store(latency_sum, Ordering::Relaxed);
                }
                Err(e) => break Err(e),
            }
        };
        result.errors = errors.count;
        result.error_samples = errors.samples;
        outcome
    }

    #[inline]
    fn render(&mut self, out: &mut Vec<u8>, scratch: &mut Vec<u8>) {
        self.template
            .render(out, scratch, &mut self.rng, &self.rand, &self.rand2);
    }
}

fn elapsed_ns(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_nanos()).unwrap_or(u64::MAX)
}

/// Runs the load described by `opts`, calling `progress` about once a second
/// from the calling thread.
///
/// Connection failures do not abort the run: the failed worker stops, the
/// others go on, and the failure is listed in the outcome.
pub fn run(opts: &Options, mut progress: impl FnMut(Progress)) -> Outcome {
    let template = Arc::new(Template::new(&opts.command));
    let slots: Arc<Vec<Slot>> = Arc::new((0..opts.connections).map(|_| Slot::default()).collect());
    let barrier = Arc::new(Barrier::new(opts.connections + 1));
    let next = Arc::new(AtomicU64::new(0));
    let chunk = match opts.stop {
        Stop::Requests(total) => {
            let per_conn = total / (opts.connections as u64 * 16);
            let p = opts.pipeline as u64;
            per_conn.clamp(1, 10_000).div_ceil(p) * p
        }
        Stop::Duration(_) => 0,
    };
    let (tx, rx) = mpsc::channel::<WorkerResult>();
    let mut handles = Vec::with_capacity(opts.connections);
    for i in 0..opts.connections {
        let (opts, template, slots, barrier, next, tx) = (
            opts.clone(),
            Arc::clone(&template),
            Arc::clone(&slots),
            Arc::clone(&barrier),
            Arc::clone(&next),
            tx.clone(),
        );
        handles.push(thread::spawn(move || {
            let connected = connect(&opts);
            barrier.wait();
            let started = Instant::now();
            let mut result = WorkerResult {
                requests: 0,
                commands: 0,
                errors: 0,
                error_samples: Vec::new(),
                failure: None,
                started,
                ended: started,
                latency: Histogram::new(),
            };
            match connected {
                Err(e) => result.failure = Some(e),
                Ok((mut stream, mut reader)) => {
                    let mut budget = match opts.stop {
                        Stop::Requests(total) => Budget::Shared {
                            next,
                            total,
                            chunk,
                            left: 0,
                        },
                        Stop::Duration(d) => Budget::Until(started + d),
                    };
                    let worker = Worker {
                        opts: &opts,
                        template: &template,
                        rand: Sampler::new(opts.dist, opts.r),
                        rand2: Sampler::new(opts.dist, opts.r2),
                        rng: SmallRng::seed_from_u64(opts.seed.wrapping_add(i as u64)),
                        slot: &slots[i],
                    };
                    if let Err(e) = worker.run(&mut stream, &mut reader, &mut budget, &mut result) {
                        result.failure = Some(format!("connection {i}: {e}"));
                    }
                }
            }
            result.ended = Instant::now();
            // The receiver outlives every worker.
            let _ = tx.send(result);
        }));
    }
    drop(tx);
    barrier.wait();
    let start = Instant::now();
    let mut results = Vec::with_capacity(opts.connections);
    let (mut last_tick, mut last_requests, mut last_latency) = (start, 0u64, 0u64);
    let mut next_tick = start + Duration::from_secs(1);
    while results.len() < opts.connections {
        let wait = next_tick.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Ok(r) => results.push(r),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                let requests: u64 = slots
                    .iter()
                    .map(|s| s.requests.load(Ordering::Relaxed))
                    .sum();
                let latency: u64 = slots
                    .iter()
                    .map(|s| s.latency_ns.load(Ordering::Relaxed))
                    .fold(0, u64::wrapping_add);
                let dt = now.duration_since(last_tick).as_secs_f64();
                let dr = requests - last_requests;
                progress(Progress {
                    elapsed: now.duration_since(start),
                    requests,
                    qps: if dt > 0.0 { dr as f64 / dt } else { 0.0 },
                    avg_ns: if dr > 0 {
                        latency.wrapping_sub(last_latency) as f64 / dr as f64
                    } else {
                        0.0
                    },
                });
                (last_tick, last_requests, last_latency) = (now, requests, latency);
                next_tick += Duration::from_secs(1);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for h in handles {
        if h.join().is_err() {
            results.push(WorkerResult {
                requests: 0,
                commands: 0,
                errors: 0,
                error_samples: Vec::new(),
                failure: Some("a worker thread panicked".into()),
                started: start,
                ended: start,
                latency: Histogram::new(),
            });
        }
    }
    merge(results, start)
}

fn merge(results: Vec<WorkerResult>, start: Instant) -> Outcome {
    let mut out = Outcome {
        requests: 0,
        commands: 0,
        errors: 0,
        error_samples: Vec::new(),
        failures: Vec::new(),
        elapsed: Duration::ZERO,
        latency: Histogram::new(),
    };
    let first = results.iter().map(|r| r.started).min().unwrap_or(start);
    let last = results.iter().map(|r| r.ended).max().unwrap_or(start);
    out.elapsed = last.saturating_duration_since(first);
    for r in results {
        out.requests += r.requests;
        out.commands += r.commands;
        out.errors += r.errors;
        for s in r.error_samples {
            if out.error_samples.len() < ERROR_SAMPLES {
                out.error_samples.push(s);
            }
        }
        out.failures.extend(r.failure);
        out.latency.merge(&r.latency);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_budget_hands_out_exactly_the_total() {
        let next = Arc::new(AtomicU64::new(0));
        let mut budgets: Vec<Budget> = (0..3)
            .map(|_| Budget::Shared {
                next: Arc::clone(&next),
                total: 1003,
                chunk: 10,
                left: 0,
            })
            .collect();
        let now = Instant::now();
        let mut total = 0;
        let mut live = true;
        while live {
            live = false;
            for b in &mut budgets {
                let n = b.take(4, now);
                assert!(n <= 4);
                total += n;
                live |= n > 0;
            }
        }
        assert_eq!(total, 1003);
    }

    #[test]
    fn deadline_budget_stops_at_the_deadline() {
        let now = Instant::now();
        let mut b = Budget::Until(now + Duration::from_secs(1));
        assert_eq!(b.take(3, now), 3);
        assert_eq!(b.take(3, now + Duration::from_secs(1)), 0);
    }

    #[test]
    fn exec_errors_are_counted_per_element() {
        let mut e = Errors::default();
        e.check_exec(&Frame::Array(vec![
            Frame::Simple(b"OK".to_vec()),
            Frame::Error(b"WRONGTYPE x".to_vec()),
            Frame::Error(b"ERR y".to_vec()),
        ]));
        e.check_exec(&Frame::Error(b"EXECABORT z".to_vec()));
        e.check_exec(&Frame::NullArray);
        assert_eq!(e.count, 4);
        assert_eq!(e.samples[0], "(error) WRONGTYPE x");
    }
}
