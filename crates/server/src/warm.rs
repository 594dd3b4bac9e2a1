//! Reading cold keys into the memory tier off the connection workers.
//!
//! A request whose keys are not resident in the memory tier
//! (`Store::is_resident`, checked as the request joins its pipeline group)
//! would make its worker wait for the LSM store's disk reads, and every
//! other connection of that worker with it. Instead its connection hands
//! the keys to this pool and awaits it; the pool's threads read them in
//! (`Store::warm`) while the worker serves the other connections, then the
//! request runs over memory. So the disk sees as many reads at once as
//! there are pool threads, not one per worker.
//!
//! A fixed pool rather than the runtime's blocking pool: each thread that
//! allocates gets its own allocator heap, and a burst of cold requests from
//! hundreds of connections would otherwise start as many threads and
//! heaps, which a small `maxmemory` cannot afford.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

use roaringd_store::Store;

/// Threads of the pool: reads the disk serves at once.
pub const THREADS: usize = 8;

/// Keys to read in (database, user key).
pub type Names = Vec<(u16, Vec<u8>)>;

type Job = (Store, Names, tokio::sync::oneshot::Sender<Names>);

/// The pool; its threads start on first use.
#[derive(Default)]
pub struct WarmPool {
    jobs: OnceLock<Mutex<mpsc::Sender<Job>>>,
}

impl WarmPool {
    /// Reads `names` into `store`'s memory tier on a pool thread and
    /// returns the vector (for reuse). A failed read is logged at verbose
    /// level and otherwise ignored: the command meets it again on its own
    /// read and replies with the error. Reads on the calling thread when
    /// no pool thread could be started.
    pub async fn warm(&self, store: &Store, names: Names) -> Names {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let sent = self
            .sender()
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .send((store.clone(), names, tx));
        match sent {
            Ok(()) => rx.await.unwrap_or_default(),
            Err(mpsc::SendError((store, names, _))) => read_in(&store, names),
        }
    }

    fn sender(&self) -> &Mutex<mpsc::Sender<Job>> {
        self.jobs.get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let rx = std::sync::Arc::new(Mutex::new(rx));
            for i in 0..THREADS {
                let rx = rx.clone();
                let spawned = std::thread::Builder::new()
                    .name(format!("roaringd-warm-{i}"))
                    .spawn(move || loop {
                        let job = rx
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .recv();
                        let Ok((store, names, reply)) = job else {
                            return;
                        };
                        let _ = reply.send(read_in(&store, names));
                    });
                if let Err(e) = spawned {
                    crate::warning!("Can't start a thread to read keys into memory: {e}");
                }
            }
            Mutex::new(tx)
        })
    }
}

/// Reads `names` in; returns them.
fn read_in(store: &Store, names: Names) -> Names {
    if let Err(e) = store.warm(&names) {
        crate::verbose!("Reading keys into memory failed: {e}");
    }
    names
}
