//! `Server`: the state every connection shares (store, configuration,
//! client registry, statistics, slow log, WATCH table, ACL users,
//! shutdown signal).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use crate::acl::Acl;
use crate::client::ClientInfo;
use crate::config::Config;
use crate::counter::Counter;
use crate::slowlog::SlowLog;
use crate::watch::WatchTable;

/// Server-wide counters for INFO stats.
#[derive(Debug, Default)]
pub struct Stats {
    /// Connections accepted.
    pub total_connections: Counter,
    /// Commands processed.
    pub total_commands: Counter,
    /// Connections refused (maxclients).
    pub rejected_connections: Counter,
    /// Bytes read from clients.
    pub net_input_bytes: Counter,
    /// Bytes written to clients.
    pub net_output_bytes: Counter,
    /// The store's expired-keys counter at the last RESETSTAT (INFO shows
    /// the difference).
    pub expired_keys_base: AtomicU64,
    /// Error replies sent.
    pub total_error_replies: Counter,
    /// Writes since the last SAVE.
    pub dirty: Counter,
    /// Error replies by error code (`ERR`, `WRONGTYPE`, ...), for INFO errorstats.
    pub errors_by_code: Mutex<BTreeMap<String, u64>>,
}

impl Stats {
    /// Zeroes the resettable counters (CONFIG RESETSTAT).
    pub fn reset(&self) {
        for c in [
            &self.total_connections,
            &self.total_commands,
            &self.rejected_connections,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.total_error_replies,
        ] {
            c.reset();
        }
        self.errors_by_code.lock().clear();
    }

    /// Counts one error reply whose text is `text` (code first).
    pub fn record_error(&self, text: &[u8]) {
        self.total_error_replies.add(1);
        let end = text
            .iter()
            .position(|&c| c == b' ')
            .unwrap_or(text.len())
            .min(64);
        let code = String::from_utf8_lossy(&text[..end]).into_owned();
        *self.errors_by_code.lock().entry(code).or_insert(0) += 1;
    }
}

/// Settings read on every command, mirrored from `Config` into atomics so
/// the hot path takes no lock.
#[derive(Debug, Default)]
pub struct HotConfig {
    /// `slowlog-log-slower-than` (microseconds; negative = off).
    pub slowlog_log_slower_than: AtomicI64,
    /// `slowlog-max-len`.
    pub slowlog_max_len: AtomicU64,
    /// `timeout`: idle seconds before a client is closed (0 = never).
    pub timeout: AtomicU64,
    /// `max-reply-bytes`: the reply-size ceiling of the commands whose
    /// reply size their arguments choose.
    pub max_reply_bytes: AtomicU64,
    /// `client-output-buffer-limit normal`: hard bytes (0 = none).
    pub obuf_hard: AtomicU64,
    /// `client-output-buffer-limit normal`: soft bytes (0 = none).
    pub obuf_soft: AtomicU64,
    /// `client-output-buffer-limit normal`: soft seconds.
    pub obuf_soft_secs: AtomicU64,
    /// `write-before-reply`, and `appendfsync` is not `always` (whose
    /// connections sync before they reply, `group_sync.rs`): a connection
    /// hands its writes to the OS before it writes their replies.
    pub write_before_reply: AtomicBool,
}

impl HotConfig {
    /// Copies the hot settings from `c`.
    pub fn load(&self, c: &Config) {
        self.slowlog_log_slower_than
            .store(c.slowlog_log_slower_than, Ordering::Relaxed);
        self.slowlog_max_len
            .store(c.slowlog_max_len, Ordering::Relaxed);
        self.timeout.store(c.timeout, Ordering::Relaxed);
        self.max_reply_bytes
            .store(c.max_reply_bytes, Ordering::Relaxed);
        let normal = c.obuf_limits[0];
        self.obuf_hard.store(normal.hard, Ordering::Relaxed);
        self.obuf_soft.store(normal.soft, Ordering::Relaxed);
        self.obuf_soft_secs
            .store(normal.soft_secs, Ordering::Relaxed);
        self.write_before_reply.store(
            c.write_before_reply && c.appendfsync != crate::config::Appendfsync::Always,
            Ordering::Relaxed,
        );
        roaringd_store::sample::set_exact_pick_limit(c.random_pick_limit);
    }
}

/// Shared server state; one per process, behind an `Arc`.
pub struct Server {
    /// The data store.
    pub store: roaringd_store::Store,
    /// Current configuration (CONFIG SET writes it).
    pub config: RwLock<Config>,
    /// Hot-path copies of some settings.
    pub hot: HotConfig,
    /// Connected clients by id.
    pub clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    /// Source of client ids.
    pub next_client_id: AtomicU64,
    /// Counters.
    pub stats: Stats,
    /// Slow log.
    pub slowlog: SlowLog,
    /// WATCHed keys.
    pub watches: WatchTable,
    /// Process start.
    pub started: Instant,
    /// 40 hex characters, fixed for the process.
    pub run_id: String,
    /// Unix time (s) of the last successful SAVE (or start-up).
    pub last_save: AtomicU64,
    /// Set once shutdown has begun.
    pub shutting_down: AtomicBool,
    /// Wakes the listener to shut down.
    pub shutdown: Notify,
    /// The TCP port actually bound (for INFO when `port 0` was asked).
    pub bound_port: AtomicU64,
    /// ACL users and the ACL log.
    pub acl: Acl,
    /// The `maxmemory` bound and the memory tier's share (`memory.rs`).
    pub memory: Arc<crate::memory::Governor>,
    /// Threads that read cold keys into the memory tier (`warm.rs`).
    pub warm: crate::warm::WarmPool,
    /// The syncs of `appendfsync always`, shared by the connections that
    /// wait (`group_sync.rs`).
    pub group_sync: crate::group_sync::GroupSync,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Server {
    /// State around an opened store.
    pub fn new(config: Config, store: roaringd_store::Store) -> Self {
        let run_id: String = (0..40)
            .map(|_| char::from(b"0123456789abcdef"[rand::random_range(0..16usize)]))
            .collect();
        let hot = HotConfig::default();
        hot.load(&config);
        let acl = Acl::new();
        acl.set_pubsub_all(config.acl_pubsub_all);
        acl.log.set_max_len(config.acllog_max_len);
        if let Some(p) = &config.requirepass {
            acl.set_default_password(Some(p));
        }
        Server {
            acl,
            store,
            hot,
            config: RwLock::new(config),
            clients: Mutex::new(BTreeMap::new()),
            next_client_id: AtomicU64::new(1),
            stats: Stats::default(),
            slowlog: SlowLog::default(),
            watches: WatchTable::default(),
            started: Instant::now(),
            run_id,
            last_save: AtomicU64::new(now_ms() / 1000),
            shutting_down: AtomicBool::new(false),
            shutdown: Notify::new(),
            bound_port: AtomicU64::new(0),
            memory: Arc::default(),
            warm: crate::warm::WarmPool::default(),
            group_sync: crate::group_sync::GroupSync::default(),
        }
    }

    /// Starts a graceful shutdown (the listener stops, the store is persisted).
    pub fn request_shutdown(&self) {
        self.shutting_down.store(true, Ordering::Release);
        self.shutdown.notify_one();
    }
}
