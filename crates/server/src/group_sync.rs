//! `appendfsync always` as Redis runs it: a write's reply leaves only once
//! the write is synced, and one sync serves every connection that waits
//! meanwhile.
//!
//! A commit under `always` does not sync on the thread that runs it
//! (`dispatch::commit` asks its `Txn` to [`defer_sync`]); the connection,
//! before it sends the replies of a read buffer that wrote, awaits
//! [`GroupSync::sync`]. That returns once a sync that *started after the
//! call* has completed, so it covers every commit that returned before the
//! call. One thread runs the syncs ([`Store::persist`]: the LSM store's
//! journal and the operation log) back to back while connections wait, so
//! every connection that queues during one sync shares the next, and no
//! runtime worker blocks on a disk sync: it serves the other connections
//! meanwhile. (Syncing inside each commit held a thread per waiting
//! connection, and a handful of commits shared each sync.)
//!
//! `write-before-reply` (under `everysec` and `no`: a `write(2)` of the
//! buffered log, not a sync) stays on the connection's own thread: handed
//! to another thread it cost two context switches per request, far more
//! than the write (docs/benchmarks.md, "Measured and not kept").
//!
//! A failed sync is reported to the connections that waited for it; the
//! caller then closes the connection without the replies, whose writes may
//! not be durable (Redis exits in that case).
//!
//! [`defer_sync`]: roaringd_store::Txn::defer_sync

use std::sync::{Arc, OnceLock};

use parking_lot::{Condvar, Mutex};

use roaringd_store::Store;
use tokio::sync::watch;

/// The sync thread's state and the channel that announces finished syncs.
struct Shared {
    state: Mutex<State>,
    /// Wakes the sync thread when a sync is wanted.
    wanted: Condvar,
    /// The number of the last finished sync and its error, if it failed.
    done: watch::Sender<(u64, Option<String>)>,
}

#[derive(Default)]
struct State {
    /// Number of the last sync started (syncs are numbered from 1).
    started: u64,
    /// The highest sync number a waiter needs.
    wanted: u64,
}

/// Group syncs for `appendfsync always`; its thread starts on first use.
#[derive(Default)]
pub struct GroupSync {
    shared: OnceLock<Arc<Shared>>,
}

impl GroupSync {
    /// Returns once everything `store` committed before the call is synced
    /// (by a sync that started after the call), or that sync's error.
    ///
    /// # Errors
    /// The error of the sync that would have covered the call.
    pub async fn sync(&self, store: &Store) -> Result<(), String> {
        let shared = self.shared.get_or_init(|| start(store.clone()));
        let target = {
            let mut st = shared.state.lock();
            // The sync in progress, if any, may have started before the
            // caller's commit: the next one is the first that covers it.
            let target = st.started + 1;
            st.wanted = st.wanted.max(target);
            target
        };
        shared.wanted.notify_one();
        let mut done = shared.done.subscribe();
        loop {
            {
                let (n, err) = &*done.borrow_and_update();
                if *n >= target {
                    return err.clone().map_or(Ok(()), Err);
                }
            }
            if done.changed().await.is_err() {
                return Err("the sync thread stopped".to_string());
            }
        }
    }
}

/// Starts the sync thread: it syncs `store` whenever a waiter wants a sync
/// past the last one started, and publishes each sync's outcome.
fn start(store: Store) -> Arc<Shared> {
    let shared = Arc::new(Shared {
        state: Mutex::new(State::default()),
        wanted: Condvar::new(),
        done: watch::Sender::new((0, None)),
    });
    let s = Arc::clone(&shared);
    std::thread::Builder::new()
        .name("roaringd-group-sync".into())
        .spawn(move || loop {
            let n = {
                let mut st = s.state.lock();
                while st.wanted <= st.started {
                    s.wanted.wait(&mut st);
                }
                st.started += 1;
                st.started
            };
            let err = store.persist().err().map(|e| e.to_string());
            s.done.send_replace((n, err));
        })
        .expect("spawn the group sync thread");
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(roaringd_store::StoreConfig {
            dir: Some(dir.path().to_path_buf()),
            ..roaringd_store::StoreConfig::default()
        })
        .unwrap();
        (dir, store)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_waiters_all_return_once_synced() {
        let (_dir, store) = store();
        let gs = Arc::new(GroupSync::default());
        let mut tasks = Vec::new();
        for _ in 0..16 {
            let (gs, store) = (Arc::clone(&gs), store.clone());
            tasks.push(tokio::spawn(async move {
                for _ in 0..20 {
                    gs.sync(&store).await.unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        // A task's 20 calls, one after another, each needed a sync that
        // started after it: a finished sync does not serve a later call.
        let started = gs.shared.get().unwrap().state.lock().started;
        assert!(started >= 20, "{started} syncs");
    }
}
