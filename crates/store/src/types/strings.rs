//! String operations on a `Txn`: GET, SET (EX/PX/EXAT/PXAT/NX/XX/KEEPTTL/
//! GET), GETDEL, GETEX, INCRBY/DECRBY, INCRBYFLOAT, APPEND, STRLEN,
//! GETRANGE, SETRANGE. Strings live inline in the key's meta entry.

use crate::error::{Result, StoreError};
use crate::meta::{KeyMeta, Kind, Summary};
use crate::txn::Txn;
use roaringd_compat::number::{incr_float_text, parse_i64, FloatIncrError};

/// Largest string Redis allows (`proto-max-bulk-len` default, 512 MiB).
pub const MAX_STRING: usize = 512 << 20;

/// Which condition SET applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SetCond {
    /// Always.
    #[default]
    Always,
    /// Only if the key does not exist (NX).
    Nx,
    /// Only if the key exists (XX).
    Xx,
}

/// What SET / GETEX do with the expire time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ExpireUpdate {
    /// SET: remove any expire time. GETEX: leave it unchanged.
    #[default]
    Default,
    /// Keep the current expire time (SET KEEPTTL).
    Keep,
    /// Remove the expire time (GETEX PERSIST).
    Persist,
    /// Expire at this absolute Unix time in ms (EX/PX/EXAT/PXAT, resolved
    /// by the caller).
    At(u64),
}

/// SET's options.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SetOptions {
    /// NX / XX.
    pub cond: SetCond,
    /// Expire handling.
    pub expire: ExpireUpdate,
    /// GET: return the old value.
    pub get: bool,
}

/// The outcome of SET.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SetOutcome {
    /// False when NX / XX prevented the write.
    pub written: bool,
    /// The old string value (only filled when `SetOptions::get`).
    pub old: Option<Vec<u8>>,
}

/// How OBJECT ENCODING reports a stored string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StrEncoding {
    /// By content: `int`, `embstr` (≤ 44 bytes) or `raw` (SET and friends).
    Auto,
    /// `embstr` or `raw` by length, never `int` (INCRBYFLOAT results).
    NoInt,
    /// Always `raw` (APPEND / SETRANGE on an existing value, SETRANGE).
    Raw,
}

impl Txn {
    /// The string value of a key.
    ///
    /// # Errors
    /// `WrongType` when the key is not a string.
    pub fn get(&mut self, db: u16, key: &[u8]) -> Result<Option<Vec<u8>>> {
        Ok(self.string_meta(db, key)?.map(|m| match m.summary {
            Summary::String(v) => v,
            _ => Vec::new(),
        }))
    }

    fn string_meta(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyMeta>> {
        self.meta_of(db, key, Kind::String)
    }

    /// Writes a string value, replacing a value of any type (its elements
    /// become stale). `expire_at_ms` 0 = none. `big` forces the `raw`
    /// encoding (APPEND, SETRANGE).
    ///
    /// # Errors
    /// `Io` / `Corrupt`.
    pub fn put_string(
        &mut self,
        db: u16,
        key: &[u8],
        value: Vec<u8>,
        expire_at_ms: u64,
        big: bool,
    ) -> Result<()> {
        let enc = if big {
            StrEncoding::Raw
        } else {
            StrEncoding::Auto
        };
        let old = self.meta(db, key)?;
        self.put_string_over(db, key, value, expire_at_ms, enc, old.as_ref())
    }

    /// Writes a string value over `old`, the key's live meta as the caller
    /// read it in this `Txn` (no second lookup).
    fn put_string_over(
        &mut self,
        db: u16,
        key: &[u8],
        value: Vec<u8>,
        expire_at_ms: u64,
        enc: StrEncoding,
        old: Option<&KeyMeta>,
    ) -> Result<()> {
        let version = match old {
            Some(m) if !m.has_data() => m.version,
            _ => self.new_plain_version()?,
        };
        let m = KeyMeta {
            version,
            expire_at_ms,
            big: enc == StrEncoding::Raw,
            noint: enc == StrEncoding::NoInt,
            summary: Summary::String(value),
        };
        self.put_meta(db, key, m)
    }

    /// SET with all its options. With `get`, a non-string old value is an
    /// error and nothing is written (Redis 7).
    ///
    /// # Errors
    /// `WrongType` (only with `get`).
    pub fn set(
        &mut self,
        db: u16,
        key: &[u8],
        value: Vec<u8>,
        opts: SetOptions,
    ) -> Result<SetOutcome> {
        let old = self.meta(db, key)?;
        let old_value = if opts.get {
            match &old {
                Some(m) => match &m.summary {
                    Summary::String(v) => Some(v.clone()),
                    _ => return Err(StoreError::WrongType),
                },
                None => None,
            }
        } else {
            None
        };
        let ok = match opts.cond {
            SetCond::Always => true,
            SetCond::Nx => old.is_none(),
            SetCond::Xx => old.is_some(),
        };
        if !ok {
            return Ok(SetOutcome {
                written: false,
                old: old_value,
            });
        }
        let expire = match opts.expire {
            ExpireUpdate::Keep => old.as_ref().map_or(0, |m| m.expire_at_ms),
            ExpireUpdate::At(t) => t,
            ExpireUpdate::Default | ExpireUpdate::Persist => 0,
        };
        self.put_string_over(db, key, value, expire, StrEncoding::Auto, old.as_ref())?;
        Ok(SetOutcome {
            written: true,
            old: old_value,
        })
    }

    /// GETDEL: the value, and the key deleted.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn getdel(&mut self, db: u16, key: &[u8]) -> Result<Option<Vec<u8>>> {
        let v = self.get(db, key)?;
        if v.is_some() {
            self.delete_meta(db, key)?;
        }
        Ok(v)
    }

    /// GETEX: the value, with the expire time updated per `expire`
    /// (`At(t)` with `t` not in the future deletes the key).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn getex(&mut self, db: u16, key: &[u8], expire: ExpireUpdate) -> Result<Option<Vec<u8>>> {
        let Some(mut m) = self.string_meta(db, key)? else {
            return Ok(None);
        };
        let value = match &m.summary {
            Summary::String(v) => v.clone(),
            _ => Vec::new(),
        };
        match expire {
            ExpireUpdate::Default | ExpireUpdate::Keep => {}
            ExpireUpdate::Persist => {
                if m.expire_at_ms != 0 {
                    m.expire_at_ms = 0;
                    self.put_meta(db, key, m)?;
                }
            }
            ExpireUpdate::At(t) => {
                if t <= self.now_ms() {
                    self.delete_meta(db, key)?;
                } else {
                    m.expire_at_ms = t;
                    self.put_meta(db, key, m)?;
                }
            }
        }
        Ok(Some(value))
    }

    /// INCRBY / DECRBY / INCR / DECR: adds `delta` to the integer value
    /// (absent = 0), keeping the expire time. Returns the new value.
    ///
    /// # Errors
    /// `WrongType`; `NotInteger` when the value is not a canonical integer;
    /// `Overflow` when the sum leaves `i64`.
    pub fn incr_by(&mut self, db: u16, key: &[u8], delta: i64) -> Result<i64> {
        let old = self.string_meta(db, key)?;
        let (cur, expire) = match &old {
            Some(KeyMeta {
                summary: Summary::String(v),
                expire_at_ms,
                ..
            }) => (parse_i64(v).ok_or(StoreError::NotInteger)?, *expire_at_ms),
            _ => (0, 0),
        };
        let new = cur.checked_add(delta).ok_or(StoreError::Overflow)?;
        self.put_string_over(
            db,
            key,
            itoa_bytes(new),
            expire,
            StrEncoding::Auto,
            old.as_ref(),
        )?;
        Ok(new)
    }

    /// INCRBYFLOAT: adds the decimal text `incr` to the float value
    /// (absent = 0) in `long double` arithmetic as Redis does, keeping the
    /// expire time; stores and returns the formatted result.
    ///
    /// # Errors
    /// `WrongType`; `NotFloat` when the value or `incr` is not a float;
    /// `NanOrInfinity` when the result is not finite.
    pub fn incr_by_float(&mut self, db: u16, key: &[u8], incr: &[u8]) -> Result<Vec<u8>> {
        let old = self.string_meta(db, key)?;
        let (cur, expire): (&[u8], u64) = match &old {
            Some(KeyMeta {
                summary: Summary::String(v),
                expire_at_ms,
                ..
            }) => (v, *expire_at_ms),
            _ => (b"0", 0),
        };
        let text = incr_float_text(cur, incr).map_err(|e| match e {
            FloatIncrError::Current | FloatIncrError::Increment => StoreError::NotFloat,
            FloatIncrError::NanOrInfinity => StoreError::NanOrInfinity,
        })?;
        let enc = StrEncoding::NoInt;
        self.put_string_over(db, key, text.clone(), expire, enc, old.as_ref())?;
        Ok(text)
    }

    /// APPEND: appends `suffix` (creating the key), returns the new length.
    ///
    /// # Errors
    /// `WrongType`; `StringTooLong` past 512 MiB.
    pub fn append(&mut self, db: u16, key: &[u8], suffix: &[u8]) -> Result<usize> {
        let old = self.string_meta(db, key)?;
        let existed = old.is_some();
        let (mut v, expire) = match old {
            Some(KeyMeta {
                summary: Summary::String(v),
                expire_at_ms,
                ..
            }) => (v, expire_at_ms),
            _ => (Vec::new(), 0),
        };
        if v.len() + suffix.len() > MAX_STRING {
            return Err(StoreError::StringTooLong);
        }
        v.extend_from_slice(suffix);
        let n = v.len();
        // Redis stores a new key's value as SET would; appending makes it raw.
        self.put_string(db, key, v, expire, existed)?;
        Ok(n)
    }

    /// STRLEN: length of the value, 0 when absent.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn strlen(&mut self, db: u16, key: &[u8]) -> Result<usize> {
        Ok(self.get(db, key)?.map_or(0, |v| v.len()))
    }

    /// GETRANGE with Redis's index rules (negative = from the end, clamped;
    /// empty when the range is empty).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn getrange(&mut self, db: u16, key: &[u8], start: i64, end: i64) -> Result<Vec<u8>> {
        let v = self.get(db, key)?.unwrap_or_default();
        Ok(substr(&v, start, end).to_vec())
    }

    /// SETRANGE: overwrites from `offset` (zero-padding), creating the key
    /// unless `value` is empty; returns the new length.
    ///
    /// # Errors
    /// `WrongType`; `OffsetOutOfRange` for a negative offset;
    /// `StringTooLong` past 512 MiB.
    pub fn setrange(&mut self, db: u16, key: &[u8], offset: i64, value: &[u8]) -> Result<usize> {
        if offset < 0 {
            return Err(StoreError::OffsetOutOfRange);
        }
        let old = self.string_meta(db, key)?;
        let (mut v, expire) = match old {
            Some(KeyMeta {
                summary: Summary::String(v),
                expire_at_ms,
                ..
            }) => (v, expire_at_ms),
            Some(_) => return Err(StoreError::WrongType),
            None => {
                if value.is_empty() {
                    return Ok(0);
                }
                (Vec::new(), 0)
            }
        };
        if value.is_empty() {
            return Ok(v.len());
        }
        let offset = offset as u64;
        if offset + value.len() as u64 > MAX_STRING as u64 {
            return Err(StoreError::StringTooLong);
        }
        let offset = offset as usize;
        if v.len() < offset + value.len() {
            v.resize(offset + value.len(), 0);
        }
        v[offset..offset + value.len()].copy_from_slice(value);
        let n = v.len();
        self.put_string(db, key, v, expire, true)?;
        Ok(n)
    }
}

/// Redis GETRANGE / SUBSTR index arithmetic.
#[must_use]
pub fn substr(v: &[u8], start: i64, end: i64) -> &[u8] {
    if start < 0 && end < 0 && start > end {
        return &[];
    }
    let len = v.len() as i64;
    let (mut s, mut e) = (start, end);
    if s < 0 {
        s += len;
    }
    if e < 0 {
        e += len;
    }
    s = s.max(0);
    e = e.max(0);
    if e >= len {
        e = len - 1;
    }
    if s > e || len == 0 {
        return &[];
    }
    &v[s as usize..=e as usize]
}

/// The decimal text of `v`, in a vector of exactly its length.
fn itoa_bytes(v: i64) -> Vec<u8> {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut n = v.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        i -= 1;
        buf[i] = b'-';
    }
    buf[i..].to_vec()
}

#[cfg(test)]
mod tests {
    use super::substr;

    #[test]
    fn itoa_bytes_matches_to_string() {
        for v in [
            0i64,
            1,
            -1,
            9,
            10,
            -10,
            12345,
            i64::MAX,
            i64::MIN,
            i64::MIN + 1,
        ] {
            let b = super::itoa_bytes(v);
            assert_eq!(b, v.to_string().into_bytes());
        }
    }

    #[test]
    fn substr_follows_redis_rules() {
        let v = b"This is a string";
        assert_eq!(substr(v, 0, 3), b"This");
        assert_eq!(substr(v, -3, -1), b"ing");
        assert_eq!(substr(v, 0, -1), v);
        assert_eq!(substr(v, 10, 100), b"string");
        assert_eq!(substr(v, 5, 3), b"");
        assert_eq!(substr(v, -1, -5), b"");
        assert_eq!(substr(b"", 0, -1), b"");
        assert_eq!(substr(v, -100, 2), b"Thi");
    }
}
