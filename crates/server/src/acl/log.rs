//! `ACL LOG`: refused commands, keys and authentications, newest first.
//! An event like one of the last ten entries (same reason, context,
//! object and user, within 60 seconds) bumps that entry's count instead
//! of adding one. The log keeps `acllog-max-len` entries.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use crate::reply::Reply;
use crate::state::now_ms;

/// Entries further apart than this are never merged.
const GROUPING_MS: u64 = 60_000;
/// How many recent entries a new event is compared with.
const GROUPING_SCAN: usize = 10;

/// What was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A command.
    Command,
    /// A key.
    Key,
    /// AUTH / HELLO AUTH credentials.
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Sent on its own.
    Toplevel,
    /// Queued in MULTI, or run by EXEC.
    Multi,
}

impl Context {
    fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
        }
    }
}

/// One refused event as logged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// What was refused.
    pub reason: Reason,
    /// Where.
    pub context: Context,
    /// The command's full name, the key, or the name AUTH was sent as.
    pub object: Vec<u8>,
    /// The client's user (for AUTH: the user asked for).
    pub username: Vec<u8>,
    /// The client's CLIENT LIST line at the time.
    pub client_info: String,
}

#[derive(Debug)]
struct Entry {
    event: Event,
    count: u64,
    time_ms: u64,
}

/// The log.
#[derive(Debug)]
pub struct AclLog {
    entries: Mutex<VecDeque<Entry>>,
    max_len: AtomicU64,
}

impl Default for AclLog {
    fn default() -> Self {
        AclLog {
            entries: Mutex::new(VecDeque::new()),
            max_len: AtomicU64::new(128),
        }
    }
}

impl AclLog {
    /// Sets `acllog-max-len` (applied when the next entry is added).
    pub fn set_max_len(&self, n: u64) {
        self.max_len.store(n, Ordering::Relaxed);
    }

    /// Records `event` now.
    pub fn add(&self, event: Event) {
        self.add_at(event, now_ms());
    }

    fn add_at(&self, event: Event, now: u64) {
        let mut entries = self.entries.lock();
        let similar = entries.iter().take(GROUPING_SCAN).position(|e| {
            e.event.reason == event.reason
                && e.event.context == event.context
                && e.time_ms.abs_diff(now) <= GROUPING_MS
                && e.event.object == event.object
                && e.event.username == event.username
        });
        match similar.and_then(|i| entries.remove(i)) {
            Some(mut e) => {
                e.count += 1;
                e.time_ms = now;
                e.event.client_info = event.client_info;
                entries.push_front(e);
            }
            None => {
                entries.push_front(Entry {
                    event,
                    count: 1,
                    time_ms: now,
                });
                let max =
                    usize::try_from(self.max_len.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
                entries.truncate(max);
            }
        }
    }

    /// Forgets every entry.
    pub fn reset(&self) {
        self.entries.lock().clear();
    }

    /// The newest `count` entries, each a map of Redis 7.0's seven fields.
    pub fn reply(&self, count: usize) -> Reply {
        let now = now_ms();
        let entries = self.entries.lock();
        Reply::Array(
            entries
                .iter()
                .take(count)
                .map(|e| {
                    Reply::Map(vec![
                        (Reply::Static(b"count"), Reply::Integer(e.count as i64)),
                        (
                            Reply::Static(b"reason"),
                            Reply::Static(e.event.reason.name().as_bytes()),
                        ),
                        (
                            Reply::Static(b"context"),
                            Reply::Static(e.event.context.name().as_bytes()),
                        ),
                        (
                            Reply::Static(b"object"),
                            Reply::Bulk(e.event.object.clone()),
                        ),
                        (
                            Reply::Static(b"username"),
                            Reply::Bulk(e.event.username.clone()),
                        ),
                        (
                            Reply::Static(b"age-seconds"),
                            Reply::Double(now.saturating_sub(e.time_ms) as f64 / 1000.0),
                        ),
                        (
                            Reply::Static(b"client-info"),
                            Reply::Bulk(e.event.client_info.clone().into_bytes()),
                        ),
                    ])
                })
                .collect(),
        )
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// True when there is no entry.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(reason: Reason, object: &str) -> Event {
        Event {
            reason,
            context: Context::Toplevel,
            object: object.as_bytes().to_vec(),
            username: b"alice".to_vec(),
            client_info: String::new(),
        }
    }

    fn counts(log: &AclLog) -> Vec<(Vec<u8>, u64)> {
        log.entries
            .lock()
            .iter()
            .map(|e| (e.event.object.clone(), e.count))
            .collect()
    }

    #[test]
    fn similar_events_group_within_a_minute() {
        let log = AclLog::default();
        log.add_at(ev(Reason::Key, "bar"), 1000);
        log.add_at(ev(Reason::Command, "incr"), 1001);
        log.add_at(ev(Reason::Key, "bar"), 1002);
        assert_eq!(counts(&log), [(b"bar".to_vec(), 2), (b"incr".to_vec(), 1)]);
        log.add_at(ev(Reason::Key, "bar"), 1002 + GROUPING_MS + 1);
        assert_eq!(counts(&log)[0], (b"bar".to_vec(), 1), "too late to group");
        log.add_at(ev(Reason::Command, "bar"), 1002 + GROUPING_MS + 2);
        assert_eq!(log.len(), 4, "another reason is another entry");
    }

    #[test]
    fn the_log_is_bounded() {
        let log = AclLog::default();
        log.set_max_len(2);
        for k in ["a", "b", "c"] {
            log.add_at(ev(Reason::Key, k), 0);
        }
        assert_eq!(counts(&log), [(b"c".to_vec(), 1), (b"b".to_vec(), 1)]);
        log.reset();
        assert!(log.is_empty());
    }
}
