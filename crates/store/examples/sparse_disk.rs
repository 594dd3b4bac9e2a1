//! On-disk bytes per set bit for sparse random bits (issue 5).
//!
//! `cargo run --release -p roaringd-store --example sparse_disk [BITS] [DIR] [SPAN]`
//!
//! Loads BITS (default 1,000,000) distinct random offsets in [0, SPAN)
//! (default 2^32; density BITS / SPAN) into
//! one bitmap key of a fjall-backed store in DIR (default: a temporary
//! directory), in TR.SETBITS-sized calls of 10,000, then `Store::compact`
//! (memtables flushed to table files, fully compacted) and prints the bytes
//! of the store's files by kind: journal files (write-ahead log) and the
//! rest (table files), per set bit.

use roaringd_store::{Store, StoreConfig, SyncMode};
use std::path::Path;

fn walk(p: &Path, journal: &mut u64, other: &mut u64) {
    let Ok(rd) = std::fs::read_dir(p) else {
        return;
    };
    for e in rd.flatten() {
        let path = e.path();
        let Ok(md) = e.metadata() else { continue };
        if md.is_dir() {
            walk(&path, journal, other);
        } else if path
            .components()
            .any(|c| c.as_os_str().to_string_lossy().contains("journal"))
            || path.extension().is_some_and(|x| x == "jnl")
        {
            *journal += md.len();
        } else {
            *other += md.len();
        }
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let tmp = std::env::temp_dir().join(format!("sparse-disk-{}", std::process::id()));
    let dir = args.next().filter(|d| d != "-").map_or(tmp, Into::into);
    let span: u64 = args
        .next()
        .and_then(|a| a.parse().ok())
        .filter(|&s: &u64| s > 0 && s <= 1 << 32)
        .unwrap_or(1 << 32);
    let store = Store::open(StoreConfig {
        dir: Some(dir.clone()),
        databases: 16,
        sync: SyncMode::No,
        cache_bytes: 64 << 20,
        tier_bytes: 256 << 20,
        memtable_bytes: 64 << 20,
    })
    .expect("open");
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut bits: Vec<u32> = Vec::with_capacity(n);
    while bits.len() < n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        bits.push(((x >> 32) % span) as u32);
        if bits.len() == n {
            bits.sort_unstable();
            bits.dedup();
        }
    }
    for chunk in bits.chunks(10_000) {
        let mut t = store.begin(&[(0, b"sparse")]);
        t.tr_setbits(0, b"sparse", chunk).expect("setbits");
        t.commit().expect("commit");
    }
    store.compact().expect("compact");
    let kv = store.stats().kv;
    drop(store);
    // Tables replaced by the compaction are deleted in the background.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (mut journal, mut tables) = (0u64, 0u64);
    walk(&dir, &mut journal, &mut tables);
    let card = bits.len() as f64;
    println!(
        "{} bits in [0, {span}) (density {:.3}%): files other than journals {tables} B = {:.2} bytes/bit (store's table bytes {} = {:.2} bytes/bit, {} tables); journals {journal} B (preallocated); dir {}",
        bits.len(),
        card * 100.0 / span as f64,
        tables as f64 / card,
        kv.disk_bytes,
        kv.disk_bytes as f64 / card,
        kv.table_count,
        dir.display()
    );
}
