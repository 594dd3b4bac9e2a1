//! INFO text: Redis 7.0's sections and field names, filled from the server
//! state and the store's counters.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::command_table::{CommandTable, Entry};
use crate::state::{now_ms, Server};

/// Sections plain `INFO` (and `INFO default`) shows.
const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];

/// Sections beyond the default: Redis's `commandstats`, and roaringd's
/// `storage` (the LSM store's sizes and counters). Both are shown by `INFO
/// all` / `INFO everything` and when named.
const EXTRA: &[&str] = &["commandstats", "storage"];

/// The INFO text for the requested section names (lowercase; empty = default).
pub fn render(server: &Server, requested: &[Vec<u8>]) -> String {
    let mut wanted: Vec<&str> = Vec::new();
    if requested.is_empty() {
        wanted.extend_from_slice(DEFAULT);
    }
    for r in requested {
        let r = String::from_utf8_lossy(r).to_ascii_lowercase();
        match r.as_str() {
            "default" => wanted.extend_from_slice(DEFAULT),
            "all" | "everything" => {
                wanted.extend_from_slice(DEFAULT);
                wanted.extend_from_slice(EXTRA);
            }
            other => {
                if let Some(s) = DEFAULT.iter().chain(EXTRA).find(|s| **s == other) {
                    wanted.push(s);
                }
            }
        }
    }
    let mut out = String::new();
    let order = DEFAULT.iter().chain(EXTRA);
    for section in order {
        if !wanted.contains(section) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        section_text(server, section, &mut out);
    }
    out
}

fn human(bytes: u64) -> String {
    let b = bytes as f64;
    if b < 1024.0 {
        format!("{bytes}B")
    } else if b < 1024.0 * 1024.0 {
        format!("{:.2}K", b / 1024.0)
    } else if b < 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2}M", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2}G", b / 1024.0 / 1024.0 / 1024.0)
    }
}

/// The process's resident set size in bytes (0 when unknown).
#[must_use]
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

fn cpu_times() -> (f64, f64) {
    // utime and stime (fields 14, 15 of /proc/self/stat) in clock ticks.
    let Ok(s) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    let Some(rest) = s.rfind(')').map(|i| &s[i + 2..]) else {
        return (0.0, 0.0);
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0) / 100.0;
    (tick(12), tick(11))
}

fn section_text(server: &Server, section: &str, o: &mut String) {
    let st = &server.stats;
    let cfg = server.config.read().clone();
    match section {
        "server" => {
            let now = now_ms();
            let uptime = server.started.elapsed().as_secs();
            let _ = write!(
                o,
                "# Server\r\nredis_version:{}\r\nroaringd_version:{}\r\nredis_git_sha1:00000000\r\nredis_git_dirty:0\r\nredis_build_id:0\r\nredis_mode:standalone\r\nos:{} {}\r\narch_bits:64\r\nmonotonic_clock:POSIX clock_gettime\r\nmultiplexing_api:epoll\r\natomicvar_api:c11-builtin\r\ngcc_version:0.0.0\r\nprocess_id:{}\r\nprocess_supervised:no\r\nrun_id:{}\r\ntcp_port:{}\r\nserver_time_usec:{}\r\nuptime_in_seconds:{}\r\nuptime_in_days:{}\r\nhz:{}\r\nconfigured_hz:{}\r\nlru_clock:{}\r\nexecutable:{}\r\nconfig_file:\r\nio_threads_active:0\r\n",
                crate::REDIS_VERSION,
                env!("CARGO_PKG_VERSION"),
                std::env::consts::OS,
                std::env::consts::ARCH,
                std::process::id(),
                server.run_id,
                server.bound_port.load(Ordering::Relaxed),
                now * 1000,
                uptime,
                uptime / 86400,
                cfg.hz,
                cfg.hz,
                (now / 1000) & 0xff_ffff,
                std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_default(),
            );
        }
        "clients" => {
            let _ = write!(
                o,
                "# Clients\r\nconnected_clients:{}\r\ncluster_connections:0\r\nmaxclients:{}\r\nclient_recent_max_input_buffer:0\r\nclient_recent_max_output_buffer:0\r\nblocked_clients:0\r\ntracking_clients:0\r\nclients_in_timeout_table:0\r\n",
                server.clients.lock().len(),
                cfg.maxclients
            );
        }
        "memory" => {
            let rss = rss_bytes();
            let max = server.memory.maxmemory.load(Ordering::Relaxed);
            let _ = write!(
                o,
                "# Memory\r\nused_memory:{rss}\r\nused_memory_human:{}\r\nused_memory_rss:{rss}\r\nused_memory_rss_human:{}\r\nused_memory_peak:{rss}\r\nused_memory_peak_human:{}\r\nmaxmemory:{max}\r\nmaxmemory_human:{}\r\nmaxmemory_policy:{}\r\nmem_allocator:{}\r\n",
                human(rss),
                human(rss),
                human(rss),
                human(max),
                cfg.maxmemory_policy,
                if cfg!(feature = "mimalloc") { "mimalloc" } else { "libc" },
            );
            // The memory tier (keys held whole in memory over the LSM
            // store) and the LSM store's share of maxmemory.
            let t = server.store.tier().stats();
            let split = crate::memory::Split::of(
                max,
                cfg.cache_bytes,
                cfg.container_cache_bytes,
                cfg.write_back_bytes,
            );
            let kv = server.store.stats().kv;
            let _ = write!(
                o,
                "tier_resident_bytes:{}\r\ntier_resident_keys:{}\r\ntier_budget_bytes:{}\r\ntier_share_bytes:{}\r\ntier_hits:{}\r\ntier_misses:{}\r\ntier_evicted_keys:{}\r\ntier_evicted_bytes:{}\r\ntier_written_bytes:{}\r\nlsm_memory_bytes:{}\r\nlsm_maxmemory_share_bytes:{}\r\n",
                t.resident_bytes,
                t.resident_keys,
                t.budget_bytes,
                server.memory.tier_share.load(Ordering::Relaxed),
                t.hits,
                t.misses,
                t.evictions,
                t.evicted_bytes,
                t.written_bytes,
                kv.memtable_bytes + kv.cache_bytes + kv.queued_bytes,
                split.lsm(),
            );
        }
        "persistence" => {
            let _ = write!(
                o,
                "# Persistence\r\nloading:0\r\nasync_loading:0\r\nrdb_changes_since_last_save:{}\r\nrdb_bgsave_in_progress:0\r\nrdb_last_save_time:{}\r\nrdb_last_bgsave_status:ok\r\nrdb_last_bgsave_time_sec:0\r\nrdb_current_bgsave_time_sec:-1\r\naof_enabled:1\r\naof_rewrite_in_progress:0\r\naof_rewrite_scheduled:0\r\naof_last_write_status:{}\r\nappendfsync:{}\r\n",
                st.dirty.get(),
                server.last_save.load(Ordering::Relaxed),
                if server.store.log_failure().is_some() { "err" } else { "ok" },
                cfg.get("appendfsync").unwrap_or_default(),
            );
        }
        "stats" => {
            let store = server.store.stats();
            let _ = write!(
                o,
                "# Stats\r\ntotal_connections_received:{}\r\ntotal_commands_processed:{}\r\ninstantaneous_ops_per_sec:0\r\ntotal_net_input_bytes:{}\r\ntotal_net_output_bytes:{}\r\nrejected_connections:{}\r\nexpired_keys:{}\r\nevicted_keys:0\r\nkeyspace_hits:{}\r\nkeyspace_misses:{}\r\npubsub_channels:0\r\npubsub_patterns:0\r\ntotal_error_replies:{}\r\n",
                st.total_connections.get(),
                st.total_commands.get(),
                st.net_input_bytes.get(),
                st.net_output_bytes.get(),
                st.rejected_connections.get(),
                store
                    .expired_keys
                    .saturating_sub(st.expired_keys_base.load(Ordering::Relaxed)),
                store.keyspace_hits,
                store.keyspace_misses,
                st.total_error_replies.get(),
            );
            let cc = server.store.container_cache_stats();
            let _ = write!(
                o,
                "container_cache_bytes:{}\r\ncontainer_cache_capacity:{}\r\ncontainer_cache_entries:{}\r\ncontainer_cache_hits:{}\r\ncontainer_cache_misses:{}\r\ncontainer_cache_evictions:{}\r\n",
                cc.bytes, cc.capacity, cc.entries, cc.hits, cc.misses, cc.evictions
            );
            let (keys, bytes) = server.store.write_back_stats();
            let budget = server.store.write_back_bytes();
            let _ = write!(
                o,
                "write_back_dirty_keys:{keys}\r\nwrite_back_dirty_bytes:{bytes}\r\nwrite_back_budget_bytes:{budget}\r\n"
            );
        }
        "replication" => {
            let _ = write!(
                o,
                "# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_failover_state:no-failover\r\nmaster_replid:{}\r\nmaster_replid2:0000000000000000000000000000000000000000\r\nmaster_repl_offset:0\r\nsecond_repl_offset:-1\r\nrepl_backlog_active:0\r\nrepl_backlog_size:1048576\r\nrepl_backlog_first_byte_offset:0\r\nrepl_backlog_histlen:0\r\n",
                server.run_id
            );
        }
        "cpu" => {
            let (sys, user) = cpu_times();
            let _ = write!(
                o,
                "# CPU\r\nused_cpu_sys:{sys:.6}\r\nused_cpu_user:{user:.6}\r\nused_cpu_sys_children:0.000000\r\nused_cpu_user_children:0.000000\r\n"
            );
        }
        "modules" => o.push_str("# Modules\r\n"),
        "errorstats" => {
            o.push_str("# Errorstats\r\n");
            for (code, n) in st.errors_by_code.lock().iter() {
                let _ = write!(o, "errorstat_{code}:count={n}\r\n");
            }
        }
        "cluster" => o.push_str("# Cluster\r\ncluster_enabled:0\r\n"),
        "keyspace" => {
            o.push_str("# Keyspace\r\n");
            for (db, s) in server.store.stats().dbs.iter().enumerate() {
                if s.keys > 0 {
                    let _ = write!(
                        o,
                        "db{db}:keys={},expires={},avg_ttl=0\r\n",
                        s.keys, s.expires
                    );
                }
            }
        }
        "storage" => {
            // The LSM store (fjall): table files and journals on disk, the
            // memtables (active and sealed), the block cache and the
            // batches queued for its writer thread in memory.
            let kv = server.store.stats().kv;
            let _ = write!(
                o,
                "# Storage\r\nlsm_disk_bytes:{}\r\nlsm_journal_bytes:{}\r\nlsm_memtable_bytes:{}\r\nlsm_block_cache_bytes:{}\r\nlsm_block_cache_capacity:{}\r\nlsm_tables:{}\r\nlsm_compactions_completed:{}\r\nlsm_write_queue_bytes:{}\r\n",
                kv.disk_bytes,
                kv.journal_bytes,
                kv.memtable_bytes,
                kv.cache_bytes,
                kv.cache_capacity,
                kv.table_count,
                kv.compactions_completed,
                kv.queued_bytes
            );
        }
        "commandstats" => {
            o.push_str("# Commandstats\r\n");
            for e in CommandTable::get().entries() {
                stat_line(e, o);
                for s in &e.subs {
                    stat_line(s, o);
                }
            }
        }
        _ => {}
    }
}

fn stat_line(e: &Entry, o: &mut String) {
    let calls = e.stats.calls.get();
    let rejected = e.stats.rejected.get();
    let failed = e.stats.failed.get();
    if calls == 0 && rejected == 0 && failed == 0 {
        return;
    }
    let usec = e.stats.usec.get();
    let per = if calls == 0 {
        0.0
    } else {
        usec as f64 / calls as f64
    };
    let _ = write!(
        o,
        "cmdstat_{}:calls={calls},usec={usec},usec_per_call={per:.2},rejected_calls={rejected},failed_calls={failed}\r\n",
        e.full_name
    );
}
