//! Per-connection state: `Client` (owned by the connection task) and
//! `ClientInfo` (the part other connections see through CLIENT LIST/KILL/INFO).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use roaringd_resp::Protocol;
use tokio::sync::Notify;

use crate::acl::User;
use crate::command_table::{CommandTable, Entry};
use crate::transaction::MultiState;
use crate::watch::WatchSet;

/// State owned by one connection.
#[derive(Debug)]
pub struct Client {
    /// Unique id (CLIENT ID), never reused.
    pub id: u64,
    /// Selected database.
    pub db: u16,
    /// Negotiated protocol (HELLO).
    pub protocol: Protocol,
    /// True once AUTH/HELLO AUTH succeeded, or when the connection started
    /// while `default` needed no password.
    pub authenticated: bool,
    /// The ACL user commands run as (`default` until AUTH).
    pub user: Arc<User>,
    /// The ACL generation `user` was read at (see `acl::sync`).
    pub(crate) acl_gen: u64,
    /// True while EXEC runs the queued commands (ACL LOG's `multi`
    /// context).
    pub(crate) in_exec: bool,
    /// Commands queued since MULTI; `None` outside a transaction.
    pub multi: Option<MultiState>,
    /// Keys this client WATCHes and the flag that says one was touched.
    pub watch: WatchSet,
    /// Close the connection once the pending replies are written (QUIT,
    /// protocol error, CLIENT KILL of self).
    pub close_after_reply: bool,
    /// What CLIENT LIST shows about this client.
    pub info: Arc<ClientInfo>,
    /// Reused buffer for key positions (dispatch).
    pub(crate) key_scratch: Vec<usize>,
    /// A write was committed since the replies were last written: with
    /// `write-before-reply`, the writes go to the OS before the replies.
    pub wrote: bool,
    /// A commit under `appendfsync always` left its sync to this client's
    /// connection, which syncs (`group_sync`) before it writes the replies.
    pub needs_sync: bool,
    /// Streamed replies waiting to be written, each with the length the
    /// output buffer had when it was replied: it goes after those bytes
    /// (`dispatch::encode` adds them; the connection writes and drops them).
    pub(crate) streams: Vec<(usize, crate::stream::StreamedReply)>,
    /// Keys of the next request that are not resident in the memory tier:
    /// the connection reads them in (`Store::warm`) off its worker, then
    /// runs the request (see `crate::connection`).
    pub(crate) cold: Vec<(u16, Vec<u8>)>,
    /// The next request runs without the residency check (its keys were
    /// just warmed; if they were evicted again meanwhile, it reads them).
    pub(crate) warmed: bool,
}

impl Client {
    /// A fresh client (database 0, RESP2) running as `user` (read at ACL
    /// generation `acl_gen`).
    pub fn new(info: Arc<ClientInfo>, user: Arc<User>, acl_gen: u64, authenticated: bool) -> Self {
        *info.user.lock() = user.clone();
        Client {
            id: info.id,
            db: 0,
            protocol: Protocol::Resp2,
            authenticated,
            user,
            acl_gen,
            in_exec: false,
            multi: None,
            watch: WatchSet::default(),
            close_after_reply: false,
            info,
            key_scratch: Vec::with_capacity(8),
            wrote: false,
            needs_sync: false,
            streams: Vec::new(),
            cold: Vec::new(),
            warmed: false,
        }
    }

    /// Runs later commands as `user` (also shown by CLIENT LIST).
    pub fn set_user(&mut self, user: Arc<User>) {
        *self.info.user.lock() = user.clone();
        self.user = user;
    }

    /// True while in MULTI or EXEC (ACL LOG's `multi` context).
    pub fn in_transaction(&self) -> bool {
        self.multi.is_some() || self.in_exec
    }
}

/// The shared, observable part of a client.
#[derive(Debug)]
pub struct ClientInfo {
    /// Unique id.
    pub id: u64,
    /// Peer address.
    pub addr: SocketAddr,
    /// Local address.
    pub laddr: SocketAddr,
    /// Creation time, ms since the epoch.
    pub created_ms: u64,
    /// Last command time, ms since the epoch.
    pub last_interaction_ms: AtomicU64,
    /// Name set by CLIENT SETNAME / HELLO SETNAME (empty = none).
    pub name: Mutex<Vec<u8>>,
    /// CLIENT SETINFO lib-name.
    pub lib_name: Mutex<Vec<u8>>,
    /// CLIENT SETINFO lib-ver.
    pub lib_ver: Mutex<Vec<u8>>,
    /// Full name of the last command (`client|list`).
    last_cmd: AtomicU32,
    /// Selected database (mirrors `Client::db`).
    pub db: AtomicU32,
    /// Protocol number (2 or 3).
    pub resp: AtomicU8,
    /// Queued commands in MULTI, or -1 outside MULTI.
    pub multi: AtomicI64,
    /// Bytes in the query buffer (approximate, for CLIENT LIST).
    pub qbuf: AtomicU64,
    /// Set by CLIENT KILL; the connection closes when it sees it.
    pub killed: AtomicBool,
    /// Wakes the connection when `killed` is set.
    pub kill_notify: Notify,
    /// The client's ACL user (a copy of `Client::user`).
    pub user: Mutex<Arc<User>>,
}

impl ClientInfo {
    /// Info for a new connection of `user`.
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr, now_ms: u64, user: Arc<User>) -> Self {
        ClientInfo {
            id,
            addr,
            laddr,
            created_ms: now_ms,
            last_interaction_ms: AtomicU64::new(now_ms),
            name: Mutex::new(Vec::new()),
            lib_name: Mutex::new(Vec::new()),
            lib_ver: Mutex::new(Vec::new()),
            last_cmd: AtomicU32::new(u32::MAX),
            db: AtomicU32::new(0),
            resp: AtomicU8::new(2),
            multi: AtomicI64::new(-1),
            qbuf: AtomicU64::new(0),
            killed: AtomicBool::new(false),
            kill_notify: Notify::new(),
            user: Mutex::new(user),
        }
    }

    /// The id of the client's ACL user.
    pub fn user_uid(&self) -> u64 {
        self.user.lock().uid
    }

    /// Records the command being run (lock-free: the hot path calls this
    /// for every command).
    #[inline]
    pub fn set_last_cmd(&self, entry: &'static Entry) {
        self.last_cmd.store(entry.id, Ordering::Relaxed);
    }

    /// Full name of the last command, `NULL` before the first.
    pub fn last_cmd(&self) -> &'static str {
        CommandTable::get()
            .by_id(self.last_cmd.load(Ordering::Relaxed))
            .map_or("NULL", |e| e.full_name)
    }

    /// Asks the connection to close.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill_notify.notify_one();
    }

    /// One CLIENT LIST / CLIENT INFO line (without the trailing newline),
    /// in Redis 7's field order.
    pub fn describe(&self, now_ms: u64) -> String {
        self.describe_as(now_ms, self.last_cmd())
    }

    /// [`ClientInfo::describe`] with `cmd` as the last command.
    pub fn describe_as(&self, now_ms: u64, cmd: &str) -> String {
        let user = String::from_utf8_lossy(&self.user.lock().name).into_owned();
        let name = self.name.lock().clone();
        let lib_name = self.lib_name.lock().clone();
        let lib_ver = self.lib_ver.lock().clone();
        let multi = self.multi.load(Ordering::Relaxed);
        let flags = if multi >= 0 { "x" } else { "N" };
        let qbuf = self.qbuf.load(Ordering::Relaxed);
        format!(
            "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={} db={} sub=0 psub=0 ssub=0 multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs=16384 rbp=0 obl=0 oll=0 omem=0 tot-mem={} events=r cmd={} user={} redir=-1 resp={} lib-name={} lib-ver={}",
            self.id,
            self.addr,
            self.laddr,
            self.id + 7,
            String::from_utf8_lossy(&name),
            now_ms.saturating_sub(self.created_ms) / 1000,
            now_ms.saturating_sub(self.last_interaction_ms.load(Ordering::Relaxed)) / 1000,
            flags,
            self.db.load(Ordering::Relaxed),
            multi,
            qbuf,
            16384u64.saturating_sub(qbuf),
            16384 + qbuf,
            cmd,
            user,
            self.resp.load(Ordering::Relaxed),
            String::from_utf8_lossy(&lib_name),
            String::from_utf8_lossy(&lib_ver),
        )
    }
}
