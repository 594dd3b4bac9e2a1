//! Start-up: configuration → logger → store → runtime → listener. Kept out
//! of `main.rs` so tests and tools can start a server in-process.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::config::{Appendfsync, Config};
use crate::state::Server;

/// Applies `maxmemory-policy` and `maxmemory-samples` to the tier.
pub fn apply_policy(store: &roaringd_store::Store, config: &Config) {
    let policy = crate::memory::policy(&config.maxmemory_policy)
        .unwrap_or(roaringd_store::tier::Policy::Lru);
    store.tier().set_policy(
        policy,
        usize::try_from(config.maxmemory_samples).unwrap_or(5),
    );
}

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
             write-back-bytes random-pick-limit max-reply-bytes io-threads disable-thp pidfile\n  \
             aclfile acllog-max-len acl-pubsub-default user client-output-buffer-limit\n  \
             write-before-reply enable-debug-command\n\n\
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
    let split = crate::memory::Split::of(
        config.maxmemory,
        config.cache_bytes,
        config.container_cache_bytes,
        config.write_back_bytes,
    );
    let store = match roaringd_store::Store::open(roaringd_store::StoreConfig {
        dir: Some(config.dir.clone()),
        databases: config.databases,
        sync: sync_mode(config.appendfsync),
        cache_bytes: split.block_cache,
        tier_bytes: split.tier,
        memtable_bytes: split.memtable,
    }) {
        Ok(s) => s,
        Err(e) => {
            crate::warning!("Can't open the store in {}: {e}", config.dir.display());
            return 1;
        }
    };
    store.set_container_cache_bytes(split.container_cache);
    store.set_write_back_bytes(split.write_back);
    apply_policy(&store, &config);
    let workers = worker_threads(
        config.io_threads,
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    );
    crate::allocator::configure();
    crate::allocator::start_collector();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .on_thread_park(crate::allocator::collect_when_idle)
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
    server
        .memory
        .maxmemory
        .store(split.maxmemory, Ordering::Relaxed);
    server
        .memory
        .tier_share
        .store(split.tier, Ordering::Relaxed);
    server
        .memory
        .write_back_share
        .store(split.write_back, Ordering::Relaxed);
    crate::memory::start_governor(server.store.clone(), Arc::clone(&server.memory));
    if let Err(e) = crate::acl::file::load_at_startup(&server.acl, &server.config.read()) {
        crate::warning!("{e}");
        return 1;
    }
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

/// Runtime worker threads for `io-threads` = `configured` on a machine with
/// `cores` cores: `configured` when it is not 0, else half the cores, at
/// least one.
///
/// Why not one per core: the workers are not the only busy threads. The
/// LSM store flushes and compacts on its own threads, and big multi-key
/// commands run on the blocking pool. A hot key's writers also serialize on
/// its lock, and a second worker then mostly hands that lock back and
/// forth (futex wake-ups). Measured on 2 cores with the load generator on
/// the same machine (docs/benchmarks.md, "One worker on two cores"): one
/// worker gave 0.82×
/// Redis for TR.SETBIT and 0.86–0.90× for TR.GETBIT under 20 connections,
/// two workers 0.69–0.70× and 0.77–0.79×; redis-benchmark's suite met its
/// targets with both.
#[must_use]
pub fn worker_threads(configured: u64, cores: usize) -> usize {
    match configured {
        0 => (cores / 2).max(1),
        n => usize::try_from(n).unwrap_or(usize::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::worker_threads;

    #[test]
    fn auto_is_half_the_cores_and_at_least_one() {
        assert_eq!(worker_threads(0, 1), 1);
        assert_eq!(worker_threads(0, 2), 1);
        assert_eq!(worker_threads(0, 3), 1);
        assert_eq!(worker_threads(0, 16), 8);
    }

    #[test]
    fn a_configured_count_is_kept() {
        assert_eq!(worker_threads(1, 16), 1);
        assert_eq!(worker_threads(4, 2), 4);
    }
}
