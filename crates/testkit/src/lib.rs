//! Shared test helpers: spawn the real `roaringd` binary on a free port with
//! a temporary data directory, wait until it answers PING, and kill it on
//! drop; connect blocking RESP clients (the resp crate's `Client`) or raw
//! sockets to it.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use roaringd_resp::client::Client;
pub use roaringd_resp::frame::Frame;

/// How long `start` waits for the server to answer PING.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// A running `roaringd` process, killed when dropped.
pub struct TestServer {
    child: Option<Child>,
    bin: PathBuf,
    port: u16,
    args: Vec<String>,
    /// The data directory (removed on drop unless kept by `restart`).
    dir: tempfile::TempDir,
    password: Option<String>,
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

/// The `roaringd` binary: `$ROARINGD_BIN`, else `roaringd` next to the
/// running test executable's `deps/` folder (the same cargo target dir).
pub fn default_bin() -> PathBuf {
    if let Ok(b) = std::env::var("ROARINGD_BIN") {
        return PathBuf::from(b);
    }
    let exe = std::env::current_exe().expect("current_exe");
    let dir = exe.parent().expect("test exe has a parent");
    let dir = if dir.ends_with("deps") {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    dir.join("roaringd")
}

impl TestServer {
    /// Starts `bin` with `extra` command-line options (e.g. `["--requirepass", "pw"]`).
    ///
    /// # Panics
    /// If the server does not answer PING in time.
    pub fn start_with(bin: impl AsRef<Path>, extra: &[&str]) -> TestServer {
        let dir = tempfile::Builder::new()
            .prefix("roaringd-test-")
            .tempdir()
            .expect("temp dir");
        let args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let password = args
            .iter()
            .position(|a| a == "--requirepass")
            .and_then(|i| args.get(i + 1).cloned());
        let mut s = TestServer {
            child: None,
            bin: bin.as_ref().to_path_buf(),
            port: 0,
            args,
            dir,
            password,
        };
        s.spawn();
        s
    }

    /// Starts the default binary with no extra options.
    pub fn start() -> TestServer {
        Self::start_with(default_bin(), &[])
    }

    fn spawn(&mut self) {
        for _attempt in 0..5 {
            let port = if self.port == 0 {
                free_port()
            } else {
                self.port
            };
            let mut cmd = Command::new(&self.bin);
            // A config file path must come first, as for redis-server.
            let (file, opts) = match self.args.first() {
                Some(f) if !f.starts_with("--") => (Some(f.clone()), &self.args[1..]),
                _ => (None, &self.args[..]),
            };
            if let Some(f) = file {
                cmd.arg(f);
            }
            cmd.arg("--port")
                .arg(port.to_string())
                .arg("--dir")
                .arg(self.dir.path())
                .arg("--logfile")
                .arg(self.dir.path().join("roaringd.log"))
                .args(opts)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::inherit());
            let mut child = cmd
                .spawn()
                .unwrap_or_else(|e| panic!("spawn {}: {e}", self.bin.display()));
            let deadline = Instant::now() + START_TIMEOUT;
            loop {
                if let Ok(Some(_)) = child.try_wait() {
                    break; // exited: port taken? try another
                }
                if ping(port) {
                    self.port = port;
                    self.child = Some(child);
                    return;
                }
                if Instant::now() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("roaringd did not answer PING on port {port}");
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("roaringd could not start");
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `127.0.0.1:port`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The process id, if running.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// A new client (authenticated if the server was started with `--requirepass`).
    pub fn client(&self) -> Client {
        let mut c = self.raw_client();
        if let Some(pw) = &self.password {
            let r = c.call(&["AUTH", pw.as_str()]).expect("AUTH");
            assert_eq!(r, Frame::Simple(b"OK".to_vec()));
        }
        c
    }

    /// A new client that does not authenticate.
    pub fn raw_client(&self) -> Client {
        let mut c = Client::connect(self.addr()).expect("connect");
        c.set_timeout(Some(Duration::from_secs(30)))
            .expect("timeout");
        c
    }

    /// A raw socket with a 10 s read timeout.
    pub fn socket(&self) -> TcpStream {
        let s = TcpStream::connect(self.addr()).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        s
    }

    /// Sends SIGTERM and waits for the process to exit; returns its status code.
    pub fn terminate(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                return st.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (up to 20 s) for the process to exit by itself (after SHUTDOWN).
    pub fn wait_exit(&mut self) -> Option<i32> {
        let mut child = self.child.take()?;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                return st.code();
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the process without warning (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts the server again on the same port and data directory (after
    /// `terminate`, `kill` or `wait_exit`).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("roaringd.log")).unwrap_or_default()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut buf = [0u8; 64];
    let mut got = Vec::new();
    while !got.ends_with(b"\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    // PONG, or NOAUTH when a password is required: either way it is up.
    got.starts_with(b"+PONG") || got.starts_with(b"-NOAUTH")
}

/// Sends `bytes` on `sock` and reads until `expect_len` bytes arrived, the
/// peer closed, or the read timed out; returns what was read.
pub fn exchange(sock: &mut TcpStream, bytes: &[u8], expect_len: usize) -> Vec<u8> {
    sock.write_all(bytes).expect("write");
    read_some(sock, expect_len)
}

/// Reads until `expect_len` bytes arrived, the peer closed, or a timeout.
pub fn read_some(sock: &mut TcpStream, expect_len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    while out.len() < expect_len {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
        }
    }
    out
}

/// True if the peer has closed `sock` (reads EOF within the timeout).
pub fn is_closed(sock: &mut TcpStream) -> bool {
    let _ = sock.set_read_timeout(Some(Duration::from_secs(5)));
    let mut buf = [0u8; 1024];
    loop {
        match sock.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => continue,
            Err(e) => {
                return matches!(
                    e.kind(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
                )
            }
        }
    }
}
