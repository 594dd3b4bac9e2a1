//! SLOWLOG: a bounded list of the slowest recent commands.

use std::collections::VecDeque;

use parking_lot::Mutex;

/// One slow-log entry.
#[derive(Debug, Clone)]
pub struct SlowEntry {
    /// Increasing id.
    pub id: u64,
    /// Unix time in seconds when the command ran.
    pub time_s: i64,
    /// Duration in microseconds.
    pub usec: i64,
    /// The arguments (at most 32; long ones truncated like Redis).
    pub args: Vec<Vec<u8>>,
    /// Client `ip:port`.
    pub addr: String,
    /// Client name.
    pub name: Vec<u8>,
}

/// The slow log (newest first).
#[derive(Debug, Default)]
pub struct SlowLog {
    inner: Mutex<(u64, VecDeque<SlowEntry>)>,
}

/// Redis's `SLOWLOG_ENTRY_MAX_ARGC` and `SLOWLOG_ENTRY_MAX_STRING`.
const MAX_ARGC: usize = 32;
const MAX_STRING: usize = 128;

impl SlowLog {
    /// Records a command; keeps at most `max_len` entries.
    pub fn push<'a>(
        &self,
        args: impl ExactSizeIterator<Item = &'a [u8]>,
        usec: i64,
        addr: String,
        name: Vec<u8>,
        max_len: usize,
    ) {
        let argc = args.len();
        let mut v = Vec::with_capacity(argc.min(MAX_ARGC));
        for (i, a) in args.enumerate() {
            if i == MAX_ARGC - 1 && argc > MAX_ARGC {
                v.push(format!("... ({} more arguments)", argc - MAX_ARGC + 1).into_bytes());
                break;
            }
            if a.len() > MAX_STRING {
                let mut t = a[..MAX_STRING].to_vec();
                t.extend_from_slice(
                    format!("... ({} more bytes)", a.len() - MAX_STRING).as_bytes(),
                );
                v.push(t);
            } else {
                v.push(a.to_vec());
            }
        }
        let time_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let mut g = self.inner.lock();
        let id = g.0;
        g.0 += 1;
        g.1.push_front(SlowEntry {
            id,
            time_s,
            usec,
            args: v,
            addr,
            name,
        });
        g.1.truncate(max_len);
    }

    /// Up to `count` newest entries.
    pub fn get(&self, count: usize) -> Vec<SlowEntry> {
        self.inner.lock().1.iter().take(count).cloned().collect()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.inner.lock().1.len()
    }

    /// True if empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Removes every entry.
    pub fn reset(&self) {
        self.inner.lock().1.clear();
    }

    /// Trims to `max_len` entries.
    pub fn trim(&self, max_len: usize) {
        self.inner.lock().1.truncate(max_len);
    }
}
