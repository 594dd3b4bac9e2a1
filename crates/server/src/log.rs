//! A minimal logger in redis-server's line format
//! (`pid:M 21 Nov 2026 19:55:22.123 * message`), honouring `loglevel` and
//! `logfile`.

use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::OnceLock;

use parking_lot::Mutex;

use crate::config::LogLevel;

static LEVEL: AtomicU8 = AtomicU8::new(2);
static FILE: OnceLock<Mutex<std::fs::File>> = OnceLock::new();

fn level_num(l: LogLevel) -> u8 {
    match l {
        LogLevel::Debug => 0,
        LogLevel::Verbose => 1,
        LogLevel::Notice => 2,
        LogLevel::Warning => 3,
        LogLevel::Nothing => 4,
    }
}

/// Sets the minimum level that is written.
pub fn set_level(l: LogLevel) {
    LEVEL.store(level_num(l), Ordering::Relaxed);
}

/// Sends log lines to `path` (appending) instead of stdout.
///
/// # Errors
/// When the file cannot be opened.
pub fn set_file(path: &str) -> std::io::Result<()> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    let _ = FILE.set(Mutex::new(f));
    Ok(())
}

/// Writes one line at level `l`.
pub fn log(l: LogLevel, msg: std::fmt::Arguments<'_>) {
    if level_num(l) < LEVEL.load(Ordering::Relaxed) {
        return;
    }
    let mark = match l {
        LogLevel::Debug => '.',
        LogLevel::Verbose => '-',
        LogLevel::Notice => '*',
        LogLevel::Warning | LogLevel::Nothing => '#',
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let line = format!(
        "{}:M {}.{:03} {} {}\n",
        std::process::id(),
        now.as_secs(),
        now.subsec_millis(),
        mark,
        msg
    );
    match FILE.get() {
        Some(f) => {
            let _ = f.lock().write_all(line.as_bytes());
        }
        None => {
            let _ = std::io::stdout().lock().write_all(line.as_bytes());
        }
    }
}

/// `notice!(...)`: log at notice level.
#[macro_export]
macro_rules! notice {
    ($($t:tt)*) => { $crate::log::log($crate::config::LogLevel::Notice, format_args!($($t)*)) };
}

/// `warning!(...)`: log at warning level.
#[macro_export]
macro_rules! warning {
    ($($t:tt)*) => { $crate::log::log($crate::config::LogLevel::Warning, format_args!($($t)*)) };
}

/// `verbose!(...)`: log at verbose level.
#[macro_export]
macro_rules! verbose {
    ($($t:tt)*) => { $crate::log::log($crate::config::LogLevel::Verbose, format_args!($($t)*)) };
}
