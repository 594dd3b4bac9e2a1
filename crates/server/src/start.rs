//! Start-up: configuration → logger → store → runtime → listener. Kept out
//! of `main.rs` so tests and tools can start a server in-process.

use std::sync::Arc;

use crate::config::{Appendfsync, Config};
use crate::state::Server;

/// The store's sync mode for an `appendfsync` setting.
pub fn sync_mode(a: Appendfsync) -> roaringd_store::SyncMode {
    match a {
        Appendfsync::Always => roaringd_store::SyncMode::Always,
        Appendfsync::EverySec => roaringd_store::SyncMode::EverySec,
        Appendfsync::No => roaringd_store::SyncMode::No,
    }
}

/// Turns transparent huge pages off for this process (`disable-thp yes`,
/// Redis's default too): later page faults map 4 KB pages, so memory the
/// allocator releases and takes again is not zeroed 2 MB at a time. A
/// failure (an old kernel) is logged and ignored.
fn disable_thp() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: PR_SET_THP_DISABLE takes integer arguments only and
        // changes no memory of this process.
        let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        if r != 0 {
            crate::verbose!(
                "disable-thp: prctl(PR_SET_THP_DISABLE) failed: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

/// Runs the server with command-line `args` (without the program name).
/// Returns the process exit code.
pub fn main_with_args(args: &[String]) -> i32 {
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!(
            "Usage: roaringd [/path/to/roaringd.conf] [--<directive> <value> ...]\n\n\
             Directives (also valid one per line in the config file, redis.conf syntax):\n  \
             port bind dir requirepass appendfsync maxclients databases loglevel logfile\n  \
             proto-max-bulk-len client-query-buffer-limit slowlog-log-slower-than\n  \
             slowlog-max-len timeout hz maxmemory cache-bytes container-cache-bytes\n  \
             random-pick-limit tr-max-reply-bytes io-threads disable-thp pidfile\n\n\
             Examples:\n  roaringd --port 6380 --dir /var/lib/roaringd\n  \
             roaringd /etc/roaringd.conf --loglevel verbose"
        );
        return 0;
    }
    if args.iter().any(|a| a == "-v" || a == "--version") {
        println!("roaringd v={}", env!("CARGO_PKG_VERSION"));
        return 0;
    }
    let config = match Config::from_args(args) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return 1;
        }
    };
    crate::log::set_level(config.loglevel);
    if config.disable_thp {
        disable_thp();
    }
    if !config.logfile.is_empty() {
        if let Err(e) = crate::log::set_file(&config.logfile) {
            eprintln!("Can't open the log file {}: {e}", config.logfile);
            return 1;
        }
    }
    if let Err(e) = std::fs::create_dir_all(&config.dir) {
        crate::warning!(
            "Can't create the data directory {}: {e}",
            config.dir.display()
        );
        return 1;
    }
    let store = match roaringd_store::Store::open(roaringd_store::StoreConfig {
        dir: Some(config.dir.clone()),
        databases: config.databases,
        sync: sync_mode(config.appendfsync),
        cache_bytes: config.cache_bytes,
    }) {
        Ok(s) => s,
        Err(e) => {
            crate::warning!("Can't open the store in {}: {e}", config.dir.display());
            return 1;
        }
    };
    store.set_container_cache_bytes(config.container_cache_bytes);
    let workers = match config.io_threads {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n as usize,
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            crate::warning!("Can't start the runtime: {e}");
            return 1;
        }
    };
    let bind = config.bind.clone();
    let port = config.port;
    let pidfile = config.pidfile.clone();
    let server = Arc::new(Server::new(config, store));
    let code = runtime.block_on(async {
        let listeners = match crate::listener::bind(&bind, port).await {
            Ok(l) => l,
            Err(e) => {
                crate::warning!("Failed listening on port {port} (tcp), aborting: {e}");
                return 1;
            }
        };
        if let Some(a) = listeners.first().and_then(|l| l.local_addr().ok()) {
            server
                .bound_port
                .store(u64::from(a.port()), std::sync::atomic::Ordering::Relaxed);
            crate::notice!("Server initialized, listening on port {}", a.port());
        }
        if !pidfile.is_empty() {
            let _ = std::fs::write(&pidfile, format!("{}\n", std::process::id()));
        }
        crate::notice!("Ready to accept connections tcp");
        crate::listener::run(server.clone(), listeners).await;
        0
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    if !pidfile.is_empty() {
        let _ = std::fs::remove_file(&pidfile);
    }
    code
}
