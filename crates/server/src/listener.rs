//! Accept loop, `maxclients`, background jobs and graceful shutdown
//! (SIGTERM, SIGINT, SHUTDOWN): stop accepting, persist the store, return.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::client::ClientInfo;
use crate::connection;
use crate::state::{now_ms, Server};

/// Binds every `bind` address on `port`.
///
/// # Errors
/// The first address that cannot be bound.
pub async fn bind(addrs: &[String], port: u16) -> std::io::Result<Vec<TcpListener>> {
    let mut out = Vec::new();
    for a in addrs {
        let a = a.trim_start_matches('-');
        let addr: SocketAddr = if a.contains(':') {
            format!("[{a}]:{port}")
        } else {
            format!("{a}:{port}")
        }
        .parse()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, format!("{a}: {e}")))?;
        out.push(TcpListener::bind(addr).await?);
    }
    Ok(out)
}

/// Runs until shutdown is requested, then persists the store.
pub async fn run(server: Arc<Server>, listeners: Vec<TcpListener>) {
    for l in listeners {
        tokio::spawn(accept_loop(server.clone(), l));
    }
    tokio::spawn(expire_cycle(server.clone()));
    wait_for_shutdown(&server).await;
    server.shutting_down.store(true, Ordering::Release);
    crate::notice!("User requested shutdown...");
    // Stop every connection first, then wait for in-flight transactions
    // (an exclusive Txn waits for them) and persist.
    for info in server.clients.lock().values() {
        info.kill();
    }
    let s = server.clone();
    let persisted = tokio::task::spawn_blocking(move || {
        // Waits for in-flight transactions and writes back the bitmap
        // write-back tier's dirty keys; then the log is emptied.
        s.store.begin_exclusive().commit()?;
        s.store.checkpoint()?;
        s.store.persist()
    })
    .await;
    match persisted {
        Ok(Ok(())) => crate::notice!("DB saved on disk"),
        Ok(Err(e)) => crate::warning!("Error persisting the store on shutdown: {e}"),
        Err(e) => crate::warning!("Error persisting the store on shutdown: {e}"),
    }
    crate::notice!("roaringd is now ready to exit, bye bye...");
}

async fn wait_for_shutdown(server: &Server) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let mut term = signal(SignalKind::terminate()).ok();
        let mut int = signal(SignalKind::interrupt()).ok();
        tokio::select! {
            _ = server.shutdown.notified() => {}
            Some(_) = async { match term.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                crate::notice!("Received SIGTERM scheduling shutdown...");
            }
            Some(_) = async { match int.as_mut() { Some(s) => s.recv().await, None => std::future::pending().await } } => {
                crate::notice!("Received SIGINT scheduling shutdown...");
            }
        }
    }
    #[cfg(not(unix))]
    {
        tokio::select! {
            _ = server.shutdown.notified() => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    }
}

async fn accept_loop(server: Arc<Server>, listener: TcpListener) {
    let laddr = listener.local_addr().ok();
    loop {
        let (stream, addr) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                crate::warning!("Accepting client connection: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        if server.shutting_down.load(Ordering::Acquire) {
            return;
        }
        let _ = stream.set_nodelay(true);
        server.stats.total_connections.add(1);
        let maxclients = server.config.read().maxclients;
        let info = {
            let mut clients = server.clients.lock();
            if clients.len() as u64 >= maxclients {
                None
            } else {
                let id = server.next_client_id.fetch_add(1, Ordering::Relaxed);
                let local = stream.local_addr().ok().or(laddr).unwrap_or(addr);
                let info = Arc::new(ClientInfo::new(
                    id,
                    addr,
                    local,
                    now_ms(),
                    server.acl.default_user(),
                ));
                clients.insert(id, info.clone());
                Some(info)
            }
        };
        match info {
            Some(info) => {
                tokio::spawn(connection::serve(server.clone(), stream, info));
            }
            None => {
                server.stats.rejected_connections.add(1);
                tokio::spawn(refuse(stream));
            }
        }
    }
}

async fn refuse(mut stream: TcpStream) {
    let _ = stream
        .write_all(b"-ERR max number of clients reached\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// Calls the store's active expiry cycle `hz` times a second on a blocking
/// thread, and touches WATCHers of keys it removed.
async fn expire_cycle(server: Arc<Server>) {
    loop {
        let hz = server.config.read().hz.max(1);
        tokio::time::sleep(Duration::from_millis(1000 / hz)).await;
        if server.shutting_down.load(Ordering::Acquire) {
            return;
        }
        let s = server.clone();
        let r = tokio::task::spawn_blocking(move || {
            // No WATCH gate here (it would be taken before the store's key
            // locks, unlike EXEC's order): an EXEC that checks between this
            // commit and the touch still sees the key gone (see EXEC).
            let removed = s.store.active_expire_cycle(200)?;
            if !removed.is_empty() {
                s.watches
                    .touch_expired(removed.iter().map(|(d, k)| (*d, k.as_slice())));
            }
            Ok::<(), roaringd_store::StoreError>(())
        })
        .await;
        match r {
            Ok(Ok(())) => {}
            Ok(Err(e)) => crate::warning!("Active expire cycle failed: {e}"),
            Err(e) => crate::warning!("Active expire cycle panicked: {e}"),
        }
    }
}
