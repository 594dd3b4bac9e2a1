//! Configuration: the command line and config file (redis-server style) and
//! the CONFIG GET/SET view of the same settings.
//!
//! `roaringd [config-file] [--name value ...]`: the file holds one
//! `name value...` directive per line (`#` comments, quotes as in
//! redis.conf); each `--name value...` option is one more directive applied
//! after the file, as redis-server does.

use std::path::PathBuf;

use roaringd_compat::glob::glob_match_nocase;

/// `appendfsync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Appendfsync {
    /// Sync the write-ahead log before acknowledging every write.
    Always,
    /// Sync about once a second.
    EverySec,
    /// Leave syncing to the store / OS.
    No,
}

impl Appendfsync {
    fn name(self) -> &'static str {
        match self {
            Appendfsync::Always => "always",
            Appendfsync::EverySec => "everysec",
            Appendfsync::No => "no",
        }
    }
}

/// `loglevel`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogLevel {
    /// Everything.
    Debug,
    /// Rarely useful detail.
    Verbose,
    /// Moderately verbose (default).
    Notice,
    /// Only important messages.
    Warning,
    /// Nothing.
    Nothing,
}

impl LogLevel {
    fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Verbose => "verbose",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Nothing => "nothing",
        }
    }
}

/// Every setting. Defaults are Redis's.
#[derive(Clone, Debug)]
pub struct Config {
    /// `port` (6379). 0 = pick a free port (the bound port is reported in the log).
    pub port: u16,
    /// `bind` (127.0.0.1): addresses to listen on.
    pub bind: Vec<String>,
    /// `dir` (.): the data directory.
    pub dir: PathBuf,
    /// `requirepass` (empty = no password).
    pub requirepass: Option<Vec<u8>>,
    /// `appendfsync` (everysec).
    pub appendfsync: Appendfsync,
    /// `maxclients` (10000).
    pub maxclients: u64,
    /// `databases` (16).
    pub databases: u16,
    /// `loglevel` (notice).
    pub loglevel: LogLevel,
    /// `logfile` (empty = stdout).
    pub logfile: String,
    /// `proto-max-bulk-len` (512 MB).
    pub proto_max_bulk_len: u64,
    /// `client-query-buffer-limit` (1 GB).
    pub client_query_buffer_limit: u64,
    /// `slowlog-log-slower-than` in microseconds (10000; negative = off).
    pub slowlog_log_slower_than: i64,
    /// `slowlog-max-len` (128).
    pub slowlog_max_len: u64,
    /// `timeout`: idle seconds before a client is closed (0 = never).
    pub timeout: u64,
    /// `hz`: background cycles per second (10).
    pub hz: u64,
    /// `maxmemory` in bytes: the bound of the whole process (0 = half of
    /// the machine's or the memory cgroup's memory; see `memory.rs`).
    pub maxmemory: u64,
    /// `maxmemory-policy`, a Redis policy name (`memory::policy`).
    pub maxmemory_policy: String,
    /// `maxmemory-samples`: keys sampled per eviction (5).
    pub maxmemory_samples: u64,
    /// `cache-bytes`: the store's block cache (64 MiB).
    pub cache_bytes: u64,
    /// `container-cache-bytes`: the in-process cache of hot bitmap
    /// containers in front of the store (64 MiB; 0 = off; CONFIG SET
    /// applies it at once, shrinking evicts).
    pub container_cache_bytes: u64,
    /// `write-back-bytes`: the budget of the bitmap edits that TR.SETBIT
    /// and the other write-back commands may keep dirty in memory (the
    /// write-back tier, 128 MiB; 0 = every edit is written to the LSM
    /// store; CONFIG SET applies it at once). The budget in force is at
    /// most 1/32 of `maxmemory`, and 0 while the process is over
    /// `maxmemory` (`memory::next_write_back`).
    pub write_back_bytes: u64,
    /// `daemonize` (accepted for compatibility; always no).
    pub daemonize: bool,
    /// `appendonly` (accepted for compatibility; the store always logs).
    pub appendonly: bool,
    /// `save` (accepted for compatibility; every write is durable per appendfsync).
    pub save: String,
    /// `pidfile` (empty = none).
    pub pidfile: String,
    /// `protected-mode` (accepted for compatibility).
    pub protected_mode: bool,
    /// `max-reply-bytes` (512 MiB; `tr-max-reply-bytes` is an alias): the
    /// largest reply that a command whose reply size its arguments choose
    /// may build: TR.RANGE, TR.RANGEBITARRAY, TR.GETBITS, TR.SCAN and
    /// TR.EXPORT (past it they reply `ERR invalid arguments, maybe out of
    /// range or illegal`, spec open point 8), SRANDMEMBER and HRANDFIELD
    /// with a negative count (`ERR reply would exceed max-reply-bytes`).
    pub max_reply_bytes: u64,
    /// `io-threads`: runtime worker threads that serve connections and run
    /// commands; 0 (the default) = half the cores, at least one (see
    /// [`crate::start::worker_threads`]).
    pub io_threads: u64,
    /// `disable-thp` (yes, as in Redis): transparent huge pages off for
    /// this process, at start. With THP, memory the allocator hands back
    /// and takes again comes back as 2 MB pages zeroed on first touch: a
    /// 200-key TR.BITOP OR spent 2.5-4 ms of its 4-5 ms in those page
    /// faults (docs/benchmarks.md).
    pub disable_thp: bool,
    /// `random-pick-limit` (100000): RANDOMKEY, SPOP / SRANDMEMBER /
    /// HRANDFIELD without count read at most this many keys or elements
    /// per pick; exactly uniform up to this many, slightly biased above
    /// (`roaringd_store::sample::pick_one`).
    pub random_pick_limit: u64,
    /// `enable-debug-command` (no, as in Redis): whether `DEBUG` runs, for
    /// every client (`yes`) or for loopback clients only (`local`).
    pub enable_debug_command: DebugAccess,
    /// `write-before-reply` (no): under `appendfsync everysec` and `no`,
    /// whether a connection hands the writes of each read buffer to the OS
    /// (`write(2)`, `roaringd_store::Store::write_to_os`) before it writes
    /// their replies, as Redis writes its AOF, so that a crash of the
    /// process loses nothing acknowledged. Off, they stay in user-space
    /// buffers for up to a second: it cost about a fifth of TR.SETBIT's
    /// throughput under 20 connections (docs/benchmarks.md).
    pub write_before_reply: bool,
    /// `client-output-buffer-limit`, per class (normal, replica, pubsub;
    /// Redis's defaults). Normal clients are held to theirs (see
    /// [`ObufLimit`]); the other classes are kept for CONFIG GET until
    /// roaringd has replicas and pub/sub.
    pub obuf_limits: [ObufLimit; 3],
    /// `aclfile` (empty = none): the users file of ACL LOAD / ACL SAVE,
    /// loaded at start (startup only).
    pub aclfile: String,
    /// `acllog-max-len` (128): entries ACL LOG keeps.
    pub acllog_max_len: u64,
    /// `acl-pubsub-default` (`resetchannels` = false): whether new users
    /// and selectors start with every channel (`allchannels`).
    pub acl_pubsub_all: bool,
    /// `user <name> <rules...>` directives of the config file, in order
    /// (config file and command line only; exclusive with `aclfile`).
    pub users: Vec<Vec<String>>,
}

/// One class's `client-output-buffer-limit`: a client whose pending
/// replies reach `hard` bytes, or stay over `soft` bytes for `soft_secs`
/// seconds, is disconnected (0 = no such limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ObufLimit {
    /// Bytes at which the client is closed at once.
    pub hard: u64,
    /// Bytes the client may stay over for `soft_secs` at most.
    pub soft: u64,
    /// Seconds over `soft` before the client is closed.
    pub soft_secs: u64,
}

/// The class names of `client-output-buffer-limit`, in `obuf_limits`'s
/// order, as CONFIG GET prints them.
const OBUF_CLASSES: [&str; 3] = ["normal", "slave", "pubsub"];

impl Config {
    /// Applies a `client-output-buffer-limit` value: `<class> <hard> <soft>
    /// <soft-seconds>` repeated (class `normal`, `replica`/`slave` or
    /// `pubsub`; sizes with Redis's units); none changes nothing. All or
    /// nothing, with Redis's error texts.
    fn set_obuf_limits(&mut self, words: &[&str]) -> Result<(), SetError> {
        if !words.len().is_multiple_of(4) {
            return Err(SetError::Invalid(
                "Wrong number of arguments in buffer limit configuration.".into(),
            ));
        }
        let mut limits = self.obuf_limits;
        for w in words.chunks(4) {
            let class = match w[0].to_ascii_lowercase().as_str() {
                "normal" => 0,
                "replica" | "slave" => 1,
                "pubsub" => 2,
                _ => {
                    return Err(SetError::Invalid(
                        "Invalid client class specified in buffer limit configuration.".into(),
                    ))
                }
            };
            let bad = || {
                SetError::Invalid(
                    "Error in hard, soft or soft_seconds setting in buffer limit configuration."
                        .into(),
                )
            };
            limits[class] = ObufLimit {
                hard: parse_memory(w[1]).ok_or_else(bad)?,
                soft: parse_memory(w[2]).ok_or_else(bad)?,
                soft_secs: w[3].parse().map_err(|_| bad())?,
            };
        }
        self.obuf_limits = limits;
        Ok(())
    }

    /// `client-output-buffer-limit` as CONFIG GET prints it.
    fn obuf_limits_text(&self) -> String {
        OBUF_CLASSES
            .iter()
            .zip(&self.obuf_limits)
            .map(|(c, l)| format!("{c} {} {} {}", l.hard, l.soft, l.soft_secs))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Who may run `DEBUG` (`enable-debug-command`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DebugAccess {
    /// Nobody (the default).
    No,
    /// Every client.
    Yes,
    /// Clients connected from a loopback address.
    Local,
}

impl DebugAccess {
    /// The setting's word.
    pub fn name(self) -> &'static str {
        match self {
            DebugAccess::No => "no",
            DebugAccess::Yes => "yes",
            DebugAccess::Local => "local",
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            port: 6379,
            bind: vec!["127.0.0.1".into()],
            dir: PathBuf::from("."),
            requirepass: None,
            appendfsync: Appendfsync::EverySec,
            maxclients: 10000,
            databases: 16,
            loglevel: LogLevel::Notice,
            logfile: String::new(),
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            slowlog_log_slower_than: 10000,
            slowlog_max_len: 128,
            timeout: 0,
            hz: 10,
            maxmemory: 0,
            maxmemory_policy: "allkeys-lru".into(),
            maxmemory_samples: 5,
            cache_bytes: 64 * 1024 * 1024,
            container_cache_bytes: roaringd_store::types::bitmap::container_cache::DEFAULT_BYTES,
            write_back_bytes: roaringd_store::types::bitmap::dirty::DEFAULT_BUDGET,
            max_reply_bytes: 512 * 1024 * 1024,
            daemonize: false,
            appendonly: true,
            save: String::new(),
            pidfile: String::new(),
            protected_mode: true,
            io_threads: 0,
            disable_thp: true,
            random_pick_limit: roaringd_store::sample::DEFAULT_EXACT_PICK_LIMIT,
            enable_debug_command: DebugAccess::No,
            write_before_reply: false,
            obuf_limits: [
                ObufLimit::default(),
                ObufLimit {
                    hard: 256 << 20,
                    soft: 64 << 20,
                    soft_secs: 60,
                },
                ObufLimit {
                    hard: 32 << 20,
                    soft: 8 << 20,
                    soft_secs: 60,
                },
            ],
            aclfile: String::new(),
            acllog_max_len: 128,
            acl_pubsub_all: false,
            users: Vec::new(),
        }
    }
}

/// Names CONFIG GET knows, in the order it lists them.
pub const NAMES: &[&str] = &[
    "port",
    "bind",
    "dir",
    "requirepass",
    "appendfsync",
    "maxclients",
    "databases",
    "loglevel",
    "logfile",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "slowlog-log-slower-than",
    "slowlog-max-len",
    "timeout",
    "hz",
    "maxmemory",
    "maxmemory-policy",
    "maxmemory-samples",
    "cache-bytes",
    "container-cache-bytes",
    "write-back-bytes",
    "daemonize",
    "appendonly",
    "save",
    "pidfile",
    "protected-mode",
    "max-reply-bytes",
    "tr-max-reply-bytes",
    "io-threads",
    "random-pick-limit",
    "disable-thp",
    "enable-debug-command",
    "client-output-buffer-limit",
    "write-before-reply",
    "aclfile",
    "acllog-max-len",
    "acl-pubsub-default",
];

/// Settings that only the command line / config file may set.
const IMMUTABLE: &[&str] = &[
    "enable-debug-command",
    "io-threads",
    "disable-thp",
    "port",
    "bind",
    "dir",
    "databases",
    "daemonize",
    "cache-bytes",
    "pidfile",
    "aclfile",
];

/// Why a setting could not be applied (the text after
/// `argument '<name>' - `, as Redis words it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetError {
    /// No such setting.
    Unknown,
    /// Set only at start-up.
    Immutable,
    /// Bad value; the text explains.
    Invalid(String),
}

/// Parses a memory amount like Redis (`1gb`, `512mb`, `100k`, plain bytes).
pub fn parse_memory(v: &str) -> Option<u64> {
    let l = v.to_ascii_lowercase();
    let (num, mul) = [
        ("gb", 1u64 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1000),
        ("b", 1),
    ]
    .iter()
    .find_map(|(suf, mul)| l.strip_suffix(suf).map(|n| (n.to_string(), *mul)))
    .unwrap_or((l.clone(), 1));
    num.parse::<u64>().ok()?.checked_mul(mul)
}

fn yes_no(v: &str) -> Result<bool, SetError> {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err(SetError::Invalid("argument must be 'yes' or 'no'".into())),
    }
}

fn number<T: std::str::FromStr>(v: &str) -> Result<T, SetError> {
    v.parse()
        .map_err(|_| SetError::Invalid("argument couldn't be parsed into an integer".into()))
}

fn memory(v: &str) -> Result<u64, SetError> {
    parse_memory(v).ok_or_else(|| SetError::Invalid("argument must be a memory value".into()))
}

impl Config {
    /// Applies one setting. `startup` allows the immutable ones.
    ///
    /// # Errors
    /// [`SetError`] when the name is unknown, immutable or the value invalid.
    pub fn set(&mut self, name: &str, values: &[String], startup: bool) -> Result<(), SetError> {
        let name = name.to_ascii_lowercase();
        if !startup && IMMUTABLE.contains(&name.as_str()) {
            return Err(SetError::Immutable);
        }
        let one = || -> Result<&str, SetError> {
            match values {
                [v] => Ok(v.as_str()),
                _ => Err(SetError::Unknown),
            }
        };
        match name.as_str() {
            "port" => {
                self.port = number(one()?)?;
            }
            "bind" => {
                if values.is_empty() {
                    return Err(SetError::Unknown);
                }
                self.bind = values.to_vec();
            }
            "dir" => self.dir = PathBuf::from(one()?),
            "requirepass" => {
                let v = one()?;
                self.requirepass = (!v.is_empty()).then(|| v.as_bytes().to_vec());
            }
            "appendfsync" => {
                self.appendfsync = match one()?.to_ascii_lowercase().as_str() {
                    "always" => Appendfsync::Always,
                    "everysec" => Appendfsync::EverySec,
                    "no" => Appendfsync::No,
                    _ => return Err(SetError::Invalid("argument(s) must be one of the following: everysec, always, no".into())),
                }
            }
            "maxclients" => {
                let n: u64 = number(one()?)?;
                if n == 0 {
                    return Err(SetError::Invalid("argument must be between 1 and 4294967295 inclusive".into()));
                }
                self.maxclients = n;
            }
            "databases" => {
                let n: u64 = number(one()?)?;
                if n == 0 || n > u64::from(u16::MAX) {
                    return Err(SetError::Invalid("argument must be between 1 and 65535 inclusive".into()));
                }
                self.databases = n as u16;
            }
            "loglevel" => {
                self.loglevel = match one()?.to_ascii_lowercase().as_str() {
                    "debug" => LogLevel::Debug,
                    "verbose" => LogLevel::Verbose,
                    "notice" => LogLevel::Notice,
                    "warning" => LogLevel::Warning,
                    "nothing" => LogLevel::Nothing,
                    _ => return Err(SetError::Invalid("argument(s) must be one of the following: debug, verbose, notice, warning, nothing".into())),
                }
            }
            "logfile" => self.logfile = one()?.to_string(),
            "proto-max-bulk-len" => {
                let n = memory(one()?)?;
                if n < 1024 * 1024 {
                    return Err(SetError::Invalid("argument must be between 1048576 and 9223372036854775807 inclusive".into()));
                }
                self.proto_max_bulk_len = n;
            }
            "client-query-buffer-limit" => {
                let n = memory(one()?)?;
                if n < 1024 * 1024 {
                    return Err(SetError::Invalid("argument must be between 1048576 and 9223372036854775807 inclusive".into()));
                }
                self.client_query_buffer_limit = n;
            }
            "slowlog-log-slower-than" => self.slowlog_log_slower_than = number(one()?)?,
            "slowlog-max-len" => self.slowlog_max_len = number(one()?)?,
            "timeout" => self.timeout = number(one()?)?,
            "hz" => {
                let n: u64 = number(one()?)?;
                self.hz = n.clamp(1, 500);
            }
            "maxmemory" => self.maxmemory = memory(one()?)?,
            "maxmemory-policy" => {
                let v = one()?.to_ascii_lowercase();
                if crate::memory::policy(&v).is_none() {
                    return Err(SetError::Invalid("argument(s) must be one of the following: volatile-lru, allkeys-lru, volatile-lfu, allkeys-lfu, volatile-random, allkeys-random, volatile-ttl, noeviction".into()));
                }
                self.maxmemory_policy = v;
            }
            "maxmemory-samples" => {
                let n: u64 = number(one()?)?;
                if !(1..=64).contains(&n) {
                    return Err(SetError::Invalid("argument must be between 1 and 64 inclusive".into()));
                }
                self.maxmemory_samples = n;
            }
            "cache-bytes" => self.cache_bytes = memory(one()?)?,
            "container-cache-bytes" => self.container_cache_bytes = memory(one()?)?,
            "write-back-bytes" => self.write_back_bytes = memory(one()?)?,
            "daemonize" => self.daemonize = yes_no(one()?)?,
            "appendonly" => self.appendonly = yes_no(one()?)?,
            "protected-mode" => self.protected_mode = yes_no(one()?)?,
            "save" => self.save = values.join(" "),
            "pidfile" => self.pidfile = one()?.to_string(),
            "max-reply-bytes" | "tr-max-reply-bytes" => self.max_reply_bytes = memory(one()?)?,
            "io-threads" => {
                // Redis allows 1..=128; 0 here picks the default.
                let n: u64 = number(one()?)?;
                if n > 128 {
                    return Err(SetError::Invalid(
                        "argument must be between 0 and 128 inclusive".into(),
                    ));
                }
                self.io_threads = n;
            }
            "disable-thp" => self.disable_thp = yes_no(one()?)?,
            "aclfile" => self.aclfile = one()?.to_string(),
            "acllog-max-len" => {
                let n: i64 = number(one()?)?;
                self.acllog_max_len = u64::try_from(n).map_err(|_| {
                    SetError::Invalid(
                        "argument must be between 0 and 9223372036854775807 inclusive".into(),
                    )
                })?;
            }
            "acl-pubsub-default" => {
                self.acl_pubsub_all = match one()?.to_ascii_lowercase().as_str() {
                    "allchannels" => true,
                    "resetchannels" => false,
                    _ => return Err(SetError::Invalid("argument(s) must be one of the following: allchannels, resetchannels".into())),
                }
            }
            "user" if startup && !values.is_empty() => self.users.push(values.to_vec()),
            "random-pick-limit" => {
                self.random_pick_limit = number(one()?)?;
                if self.random_pick_limit == 0 {
                    return Err(SetError::Invalid("argument must be at least 1".into()));
                }
            }
            "client-output-buffer-limit" => {
                let text = values.join(" ");
                let words: Vec<&str> = text.split_whitespace().collect();
                self.set_obuf_limits(&words)?;
            }
            "write-before-reply" => self.write_before_reply = yes_no(one()?)?,
            "enable-debug-command" => {
                self.enable_debug_command = match one()?.to_ascii_lowercase().as_str() {
                    "no" => DebugAccess::No,
                    "yes" => DebugAccess::Yes,
                    "local" => DebugAccess::Local,
                    _ => return Err(SetError::Invalid("argument(s) must be one of the following: no, yes, local".into())),
                }
            }
            _ => return Err(SetError::Unknown),
        }
        Ok(())
    }

    /// The value CONFIG GET shows for `name` (a known name).
    pub fn get(&self, name: &str) -> Option<String> {
        Some(match name {
            "port" => self.port.to_string(),
            "bind" => self.bind.join(" "),
            "dir" => std::fs::canonicalize(&self.dir)
                .unwrap_or_else(|_| self.dir.clone())
                .display()
                .to_string(),
            "requirepass" => self
                .requirepass
                .as_ref()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .unwrap_or_default(),
            "appendfsync" => self.appendfsync.name().into(),
            "maxclients" => self.maxclients.to_string(),
            "databases" => self.databases.to_string(),
            "loglevel" => self.loglevel.name().into(),
            "logfile" => self.logfile.clone(),
            "proto-max-bulk-len" => self.proto_max_bulk_len.to_string(),
            "client-query-buffer-limit" => self.client_query_buffer_limit.to_string(),
            "slowlog-log-slower-than" => self.slowlog_log_slower_than.to_string(),
            "slowlog-max-len" => self.slowlog_max_len.to_string(),
            "timeout" => self.timeout.to_string(),
            "hz" => self.hz.to_string(),
            "maxmemory" => self.maxmemory.to_string(),
            "maxmemory-policy" => self.maxmemory_policy.clone(),
            "maxmemory-samples" => self.maxmemory_samples.to_string(),
            "cache-bytes" => self.cache_bytes.to_string(),
            "container-cache-bytes" => self.container_cache_bytes.to_string(),
            "write-back-bytes" => self.write_back_bytes.to_string(),
            "daemonize" => if self.daemonize { "yes" } else { "no" }.into(),
            "appendonly" => if self.appendonly { "yes" } else { "no" }.into(),
            "protected-mode" => if self.protected_mode { "yes" } else { "no" }.into(),
            "save" => self.save.clone(),
            "pidfile" => self.pidfile.clone(),
            "max-reply-bytes" | "tr-max-reply-bytes" => self.max_reply_bytes.to_string(),
            "io-threads" => self.io_threads.to_string(),
            "disable-thp" => if self.disable_thp { "yes" } else { "no" }.into(),
            "random-pick-limit" => self.random_pick_limit.to_string(),
            "enable-debug-command" => self.enable_debug_command.name().into(),
            "client-output-buffer-limit" => self.obuf_limits_text(),
            "write-before-reply" => if self.write_before_reply { "yes" } else { "no" }.into(),
            "aclfile" => self.aclfile.clone(),
            "acllog-max-len" => self.acllog_max_len.to_string(),
            "acl-pubsub-default" => if self.acl_pubsub_all {
                "allchannels"
            } else {
                "resetchannels"
            }
            .into(),
            _ => return None,
        })
    }

    /// `(name, value)` for every setting whose name matches `pattern`
    /// (case-insensitive glob), each at most once.
    pub fn matching(&self, pattern: &[u8], out: &mut Vec<(&'static str, String)>) {
        for &name in NAMES {
            if out.iter().any(|(n, _)| *n == name) {
                continue;
            }
            if glob_match_nocase(pattern, name.as_bytes()) {
                if let Some(v) = self.get(name) {
                    out.push((name, v));
                }
            }
        }
    }

    /// Parses a config file's text (redis.conf syntax), applying each line.
    ///
    /// # Errors
    /// A message naming the line, like redis-server's fatal config error.
    pub fn apply_text(&mut self, text: &str) -> Result<(), String> {
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let words = split_words(line).ok_or_else(|| {
                config_error(i + 1, line, "Unbalanced quotes in configuration line")
            })?;
            let Some((name, values)) = words.split_first() else {
                continue;
            };
            if let Err(e) = self.set(name, values, true) {
                let why = match e {
                    SetError::Unknown | SetError::Immutable => {
                        "Bad directive or wrong number of arguments".to_string()
                    }
                    SetError::Invalid(t) => t,
                };
                return Err(config_error(i + 1, line, &why));
            }
        }
        Ok(())
    }

    /// Builds a config from command-line arguments (without the program name):
    /// an optional config file path first, then `--name value...` options.
    ///
    /// # Errors
    /// A message for the user (unreadable file, bad directive).
    pub fn from_args(args: &[String]) -> Result<Config, String> {
        let mut cfg = Config::default();
        let mut rest = args;
        if let Some(first) = rest.first() {
            if !first.starts_with("--") {
                let text = std::fs::read_to_string(first)
                    .map_err(|e| format!("Fatal error, can't open config file '{first}': {e}"))?;
                cfg.apply_text(&text)?;
                rest = &rest[1..];
            }
        }
        // Each `--name` starts a directive; the words up to the next `--name` are its values.
        let mut options = String::new();
        for a in rest {
            if let Some(name) = a.strip_prefix("--") {
                if !options.is_empty() {
                    options.push('\n');
                }
                options.push_str(name);
            } else {
                options.push(' ');
                options.push_str(&quote(a));
            }
        }
        cfg.apply_text(&options)?;
        Ok(cfg)
    }
}

fn quote(word: &str) -> String {
    if !word.is_empty()
        && !word.contains(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '\\')
    {
        return word.to_string();
    }
    let mut s = String::from("\"");
    for c in word.chars() {
        if c == '"' || c == '\\' {
            s.push('\\');
        }
        s.push(c);
    }
    s.push('"');
    s
}

fn config_error(line_no: usize, line: &str, why: &str) -> String {
    format!(
        "\n*** FATAL CONFIG FILE ERROR (roaringd {}) ***\nReading the configuration file, at line {}\n>>> '{}'\n{}",
        env!("CARGO_PKG_VERSION"),
        line_no,
        line,
        why
    )
}

/// Splits a config line into words (redis.conf quoting rules, the same
/// as inline requests); `None` for unbalanced quotes.
pub(crate) fn split_words(line: &str) -> Option<Vec<String>> {
    let mut parser = roaringd_resp::RequestParser::new();
    let mut l = line.as_bytes().to_vec();
    l.push(b'\n');
    let limits = roaringd_resp::Limits {
        max_inline_len: usize::MAX,
        ..Default::default()
    };
    match parser.parse(&l, &limits) {
        Ok(Some(_)) => Some(
            parser
                .args(&l)
                .all()
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .collect(),
        ),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn command_line_overrides_defaults() {
        let c = Config::from_args(&s(&[
            "--port",
            "7000",
            "--bind",
            "0.0.0.0",
            "::1",
            "--requirepass",
            "a b",
        ]))
        .unwrap();
        assert_eq!(c.port, 7000);
        assert_eq!(c.bind, s(&["0.0.0.0", "::1"]));
        assert_eq!(c.requirepass.as_deref(), Some(&b"a b"[..]));
        assert_eq!(c.databases, 16);
    }

    #[test]
    fn config_text_parses_and_reports_bad_lines() {
        let mut c = Config::default();
        c.apply_text("# comment\nport 7001\n  appendfsync always\nrequirepass \"p w\"\n")
            .unwrap();
        assert_eq!(c.port, 7001);
        assert_eq!(c.appendfsync, Appendfsync::Always);
        assert_eq!(c.requirepass.as_deref(), Some(&b"p w"[..]));
        let err = c.apply_text("bogus 1\n").unwrap_err();
        assert!(err.contains("Bad directive"), "{err}");
    }

    #[test]
    fn io_threads_is_bounded_and_zero_means_the_default() {
        let mut c = Config::default();
        assert_eq!(c.io_threads, 0);
        c.set("io-threads", &s(&["128"]), true).unwrap();
        assert_eq!(c.io_threads, 128);
        c.set("io-threads", &s(&["0"]), true).unwrap();
        assert_eq!(c.io_threads, 0);
        for bad in ["129", "-1", "x"] {
            assert!(c.set("io-threads", &s(&[bad]), true).is_err(), "{bad}");
        }
        assert_eq!(c.io_threads, 0);
    }

    #[test]
    fn config_get_matches_globs() {
        let c = Config::default();
        let mut out = Vec::new();
        c.matching(b"max*", &mut out);
        let names: Vec<_> = out.iter().map(|(n, _)| *n).collect();
        assert_eq!(
            names,
            vec![
                "maxclients",
                "maxmemory",
                "maxmemory-policy",
                "maxmemory-samples",
                "max-reply-bytes"
            ]
        );
        assert_eq!(parse_memory("1gb"), Some(1 << 30));
    }
}
