//! Test servers for the load generator's wire tests: a tiny recording RESP
//! server, and a Redis 7 process on a free port.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use roaringd_bench::options::{Options, Parsed};
use roaringd_resp::client::Client;
use roaringd_resp::frame::Frame;

/// Parses a bench command line (seed 1 unless given).
pub fn options(args: &[&str]) -> Options {
    match Options::parse(args.iter().copied(), 1).expect("valid flags") {
        Parsed::Run(o) => *o,
        Parsed::Help => panic!("help"),
    }
}

/// What the recording server saw: per connection, every request in order.
#[derive(Debug, Default)]
pub struct Seen {
    pub connections: Vec<Vec<Vec<Vec<u8>>>>,
}

impl Seen {
    /// Every request of every connection.
    pub fn all(&self) -> Vec<Vec<Vec<u8>>> {
        self.connections.iter().flatten().cloned().collect()
    }

    /// Requests whose name is `name` (case-insensitive).
    pub fn named(&self, name: &str) -> Vec<Vec<Vec<u8>>> {
        self.all()
            .into_iter()
            .filter(|r| r[0].eq_ignore_ascii_case(name.as_bytes()))
            .collect()
    }
}

/// How the recording server answers a request outside MULTI.
pub type Answer = fn(&[Vec<u8>]) -> Frame;

/// `+OK` to everything.
pub fn ok(_: &[Vec<u8>]) -> Frame {
    Frame::Simple(b"OK".to_vec())
}

/// A recording RESP server on 127.0.0.1: answers `+OK` to MULTI, `+QUEUED`
/// inside MULTI, EXEC with the array of queued answers, anything else with
/// `answer`. Serves until the test process exits.
pub fn recording_server(answer: Answer) -> (u16, Arc<Mutex<Seen>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Seen::default()));
    let seen2 = Arc::clone(&seen);
    thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { continue };
            let idx = {
                let mut s = seen2.lock().unwrap();
                s.connections.push(Vec::new());
                s.connections.len() - 1
            };
            let seen = Arc::clone(&seen2);
            thread::spawn(move || serve(sock, idx, &seen, answer));
        }
    });
    (port, seen)
}

fn serve(mut sock: TcpStream, idx: usize, seen: &Mutex<Seen>, answer: Answer) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16384];
    let mut queued: Option<Vec<Frame>> = None;
    loop {
        let n = match sock.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        buf.extend_from_slice(&chunk[..n]);
        let mut out = Vec::new();
        let mut at = 0;
        while let Some((frame, used)) = Frame::decode(&buf[at..]).expect("valid RESP request") {
            at += used;
            let args: Vec<Vec<u8>> = match frame {
                Frame::Array(items) => items
                    .into_iter()
                    .map(|f| match f {
                        Frame::Bulk(b) => b,
                        other => panic!("request argument not a bulk string: {other:?}"),
                    })
                    .collect(),
                other => panic!("request not an array: {other:?}"),
            };
            seen.lock().unwrap().connections[idx].push(args.clone());
            let name = args[0].to_ascii_uppercase();
            let reply = match (name.as_slice(), &mut queued) {
                (b"MULTI", None) => {
                    queued = Some(Vec::new());
                    Frame::Simple(b"OK".to_vec())
                }
                (b"EXEC", q @ Some(_)) => Frame::Array(q.take().unwrap_or_default()),
                (_, Some(q)) => {
                    q.push(answer(&args));
                    Frame::Simple(b"QUEUED".to_vec())
                }
                _ => answer(&args),
            };
            reply.encode(&mut out);
        }
        buf.drain(..at);
        if sock.write_all(&out).is_err() {
            return;
        }
    }
}

/// A free TCP port on 127.0.0.1 (free when this returns).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A server child process on a free port with a temp dir, killed on drop.
pub struct Server {
    pub port: u16,
    child: Child,
    dir: PathBuf,
}

/// Redis 7 is the same kind of child.
pub type Redis = Server;

impl Server {
    /// Starts `redis-server` (no persistence); `None` if it is not installed.
    pub fn start() -> Option<Server> {
        Server::spawn("redis-server", |port, dir| {
            let mut args: Vec<std::ffi::OsString> = Vec::new();
            for a in ["--port", &port.to_string(), "--bind", "127.0.0.1"] {
                args.push(a.into());
            }
            for a in ["--save", "", "--appendonly", "no", "--dir"] {
                args.push(a.into());
            }
            args.push(dir.into());
            args
        })
    }

    /// Starts `program` with the arguments `args(port, dir)`; `None` if it
    /// cannot be executed. A server that exits (port taken meanwhile) is
    /// retried on another port; one that answers PING is only accepted if
    /// `CONFIG GET dir` names its own temp dir (not someone else's server on
    /// the port). Panics if no attempt answers within 10 s.
    pub fn spawn(
        program: impl AsRef<std::ffi::OsStr>,
        args: impl Fn(u16, &std::path::Path) -> Vec<std::ffi::OsString>,
    ) -> Option<Server> {
        for _attempt in 0..5 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!(
                "roaringd-bench-server-{}-{port}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let dir = dir.canonicalize().unwrap();
            let child = Command::new(program.as_ref())
                .args(args(port, &dir))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .ok()?;
            let mut server = Server { port, child, dir };
            for _ in 0..400 {
                if let Ok(Some(_)) = server.child.try_wait() {
                    break;
                }
                if let Ok(mut c) = Client::connect(("127.0.0.1", port)) {
                    if c.call(&["PING"]).is_ok() {
                        let reply = c.call(&["CONFIG", "GET", "dir"]).ok();
                        let ours = server.dir.as_os_str().as_encoded_bytes();
                        let mine = reply
                            .as_ref()
                            .and_then(|r| r.as_items())
                            .and_then(|items| items.get(1))
                            .and_then(|d| d.as_bytes())
                            == Some(ours);
                        if mine && server.child.try_wait().ok().flatten().is_none() {
                            return Some(server);
                        }
                        break;
                    }
                }
                thread::sleep(Duration::from_millis(25));
            }
        }
        panic!("{:?} did not start and answer PING", program.as_ref());
    }

    /// A client connection.
    pub fn client(&self) -> Client {
        Client::connect(("127.0.0.1", self.port)).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
