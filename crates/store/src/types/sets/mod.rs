//! Set operations on a `Txn`: SADD, SREM, SISMEMBER, SMISMEMBER, SCARD,
//! SMEMBERS, SSCAN, SPOP, SRANDMEMBER, SMOVE, SINTER/SUNION/SDIFF (+STORE),
//! SINTERCARD. A set is a meta entry (cardinality in its summary, so SCARD
//! is O(1)) plus its members in pages of about a kilobyte, `data` entries
//! keyed by their greatest member ([`page`]; the operations on them in
//! `members`).
//!
//! Encoding names follow Redis 7.0: `intset` while every member is an
//! integer and there are at most 512 of them, then `hashtable` for good.
//! Small (intset) sets list members in numeric order, as Redis does.

mod members;
pub mod page;

use crate::error::Result;
use crate::meta::{KeyMeta, Kind, Summary};
use crate::sample;
use crate::txn::Txn;
use roaringd_compat::glob::glob_match;
use roaringd_compat::number::parse_i64;

/// `set-max-intset-entries` default.
pub const MAX_INTSET_ENTRIES: u64 = 512;

fn card_of(m: &KeyMeta) -> u64 {
    match m.summary {
        Summary::Set { card } => card,
        _ => 0,
    }
}

/// Sorts members numerically when they all parse as integers (intset
/// order), else leaves them in byte order.
fn intset_order(members: &mut [Vec<u8>]) {
    members.sort_by_key(|m| parse_i64(m).unwrap_or(i64::MAX));
}

/// `members` ascending, without repeats (as the page operations take them).
fn sorted_unique<M: AsRef<[u8]>>(members: &[M]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = members.iter().map(AsRef::as_ref).collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// How a set-algebra command combines its inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetOp {
    /// SINTER.
    Inter,
    /// SUNION.
    Union,
    /// SDIFF (first minus the others).
    Diff,
}

impl Txn {
    fn set_meta(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyMeta>> {
        self.meta_of(db, key, Kind::Set)
    }

    /// SADD: adds members, creating the set; returns how many were new.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn sadd<M: AsRef<[u8]>>(&mut self, db: u16, key: &[u8], members: &[M]) -> Result<u64> {
        let mut m = match self.set_meta(db, key)? {
            Some(m) => m,
            None => self.new_key_meta(Summary::Set { card: 0 })?,
        };
        let new = self.set_insert(db, key, m.version, &sorted_unique(members))?;
        if new.is_empty() {
            return Ok(0);
        }
        let card = card_of(&m) + new.len() as u64;
        if !m.big && (card > MAX_INTSET_ENTRIES || new.iter().any(|x| parse_i64(x).is_none())) {
            m.big = true;
        }
        m.summary = Summary::Set { card };
        self.put_meta(db, key, m)?;
        Ok(new.len() as u64)
    }

    /// SREM: removes members; deletes the key when it empties. Returns how
    /// many were removed.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn srem<M: AsRef<[u8]>>(&mut self, db: u16, key: &[u8], members: &[M]) -> Result<u64> {
        let Some(mut m) = self.set_meta(db, key)? else {
            return Ok(0);
        };
        let removed = self.set_remove(db, key, m.version, &sorted_unique(members))?;
        let card = card_of(&m).saturating_sub(removed);
        if removed > 0 {
            if card == 0 {
                self.delete_meta(db, key)?;
            } else {
                m.summary = Summary::Set { card };
                self.put_meta(db, key, m)?;
            }
        }
        Ok(removed)
    }

    /// SISMEMBER.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn sismember(&mut self, db: u16, key: &[u8], member: &[u8]) -> Result<bool> {
        let Some(m) = self.set_meta(db, key)? else {
            return Ok(false);
        };
        self.set_contains(db, key, m.version, member)
    }

    /// SMISMEMBER: one flag per member.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn smismember<M: AsRef<[u8]>>(
        &mut self,
        db: u16,
        key: &[u8],
        members: &[M],
    ) -> Result<Vec<bool>> {
        let Some(m) = self.set_meta(db, key)? else {
            return Ok(vec![false; members.len()]);
        };
        members
            .iter()
            .map(|x| self.set_contains(db, key, m.version, x.as_ref()))
            .collect()
    }

    /// SCARD, O(1).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn scard(&mut self, db: u16, key: &[u8]) -> Result<u64> {
        Ok(self.set_meta(db, key)?.map_or(0, |m| card_of(&m)))
    }

    /// SMEMBERS: every member (intset sets in numeric order, others in
    /// byte order).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn smembers(&mut self, db: u16, key: &[u8]) -> Result<Vec<Vec<u8>>> {
        let Some(m) = self.set_meta(db, key)? else {
            return Ok(Vec::new());
        };
        self.members_of(db, key, &m)
    }

    fn members_of(&self, db: u16, key: &[u8], m: &KeyMeta) -> Result<Vec<Vec<u8>>> {
        let mut out: Vec<Vec<u8>> = self
            .set_members(db, key, m.version, None, false)
            .collect::<Result<_>>()?;
        if !m.big {
            intset_order(&mut out);
        }
        Ok(out)
    }

    /// SSCAN: `(next cursor, members)`. Intset sets return everything with
    /// cursor 0 (as Redis does for small encodings); others visit `count`
    /// members per call. An unknown cursor ends the scan.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn sscan(
        &mut self,
        db: u16,
        key: &[u8],
        cursor: u64,
        pattern: Option<&[u8]>,
        count: usize,
    ) -> Result<(u64, Vec<Vec<u8>>)> {
        let Some(m) = self.set_meta(db, key)? else {
            return Ok((0, Vec::new()));
        };
        if !m.big {
            let mut all = self.members_of(db, key, &m)?;
            all.retain(|x| pattern.is_none_or(|p| glob_match(p, x)));
            return Ok((0, all));
        }
        let (next, mut items) = self.scan_cursor(
            cursor,
            count,
            |after| self.set_members(db, key, m.version, after, false),
            |x| x,
        )?;
        items.retain(|x| pattern.is_none_or(|p| glob_match(p, x)));
        Ok((next, items))
    }

    /// One step of a cursor scan: up to `count` (at least one) items of
    /// those `items(after)` yields ascending above `after` (exclusive;
    /// `None`: from the first), after the one `cursor` stands for (0: from
    /// the first), and the cursor of the next step (0 at the end; an
    /// unknown cursor ends the scan). `name` gives an item's key.
    ///
    /// # Errors
    /// Those of `items`.
    pub(crate) fn scan_cursor<T, I>(
        &self,
        cursor: u64,
        count: usize,
        items_after: impl FnOnce(Option<&[u8]>) -> I,
        name: impl Fn(&T) -> &[u8],
    ) -> Result<(u64, Vec<T>)>
    where
        I: Iterator<Item = Result<T>>,
    {
        let after = if cursor == 0 {
            None
        } else {
            match self.inner.cursors.lock().get(cursor) {
                Some(p) => Some(p),
                None => return Ok((0, Vec::new())),
            }
        };
        let mut items = Vec::new();
        let mut more = false;
        for e in items_after(after.as_deref()) {
            let e = e?;
            if items.len() >= count.max(1) {
                more = true;
                break;
            }
            items.push(e);
        }
        let next = match (more, items.last()) {
            (true, Some(last)) => self.inner.cursors.lock().insert(name(last).to_vec()),
            _ => 0,
        };
        Ok((next, items))
    }

    /// Up to `k` distinct random members (see [`Txn::sample_elements`]).
    fn sample_members(&self, db: u16, key: &[u8], m: &KeyMeta, k: usize) -> Result<Vec<Vec<u8>>> {
        if k == 1 {
            return Ok(self
                .set_pick_one(db, key, m.version, card_of(m))?
                .into_iter()
                .collect());
        }
        self.sample_of(
            card_of(m),
            k,
            |after, reverse| self.set_members(db, key, m.version, after, reverse),
            |x| x,
        )
    }

    /// SPOP: removes and returns up to `count` random members (one when
    /// `count` is `None`); deletes the key when it empties.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn spop(&mut self, db: u16, key: &[u8], count: Option<u64>) -> Result<Vec<Vec<u8>>> {
        let Some(m) = self.set_meta(db, key)? else {
            return Ok(Vec::new());
        };
        let want = count.unwrap_or(1);
        let chosen = if want >= card_of(&m) {
            self.members_of(db, key, &m)?
        } else {
            self.sample_members(db, key, &m, want as usize)?
        };
        self.srem(db, key, &chosen)?;
        Ok(chosen)
    }

    /// SRANDMEMBER: `count` `None` → at most one member; positive → that
    /// many distinct members (at most the cardinality); negative → exactly
    /// `-count` members, possibly repeated.
    ///
    /// # Errors
    /// `WrongType`.
    pub fn srandmember(&mut self, db: u16, key: &[u8], count: Option<i64>) -> Result<Vec<Vec<u8>>> {
        let Some(m) = self.set_meta(db, key)? else {
            return Ok(Vec::new());
        };
        match count {
            None => self.sample_members(db, key, &m, 1),
            Some(c) if c >= 0 => {
                if c as u64 >= card_of(&m) {
                    return self.members_of(db, key, &m);
                }
                self.sample_members(db, key, &m, c as usize)
            }
            Some(c) => {
                let n = c.unsigned_abs() as usize;
                let pool = self.sample_members(db, key, &m, n.min(card_of(&m) as usize))?;
                Ok(sample::with_repeats(&pool, n))
            }
        }
    }

    /// SMOVE: moves `member` from `src` to `dst`. True when it was in `src`.
    ///
    /// # Errors
    /// `WrongType` when either key holds another type.
    pub fn smove(&mut self, db: u16, src: &[u8], dst: &[u8], member: &[u8]) -> Result<bool> {
        // Redis: an absent source answers 0 before any type check.
        if self.meta(db, src)?.is_none() {
            return Ok(false);
        }
        let sm = self.set_meta(db, src)?;
        self.set_meta(db, dst)?;
        let Some(sm) = sm else { return Ok(false) };
        if src == dst {
            return self.set_contains(db, src, sm.version, member);
        }
        if self.srem(db, src, &[member])? == 0 {
            return Ok(false);
        }
        self.sadd(db, dst, &[member])?;
        Ok(true)
    }

    /// SINTER / SUNION / SDIFF over `keys` (missing keys are empty sets).
    /// Every key is type-checked first.
    ///
    /// # Errors
    /// `WrongType` when any key holds another type.
    pub fn set_combine<K: AsRef<[u8]>>(
        &mut self,
        db: u16,
        op: SetOp,
        keys: &[K],
    ) -> Result<Vec<Vec<u8>>> {
        let mut metas = Vec::with_capacity(keys.len());
        for k in keys {
            metas.push(self.set_meta(db, k.as_ref())?);
        }
        match op {
            SetOp::Inter => {
                let Some(present) = metas.iter().cloned().collect::<Option<Vec<KeyMeta>>>() else {
                    return Ok(Vec::new());
                };
                let Some(smallest) = (0..present.len()).min_by_key(|&i| card_of(&present[i]))
                else {
                    return Ok(Vec::new());
                };
                let base = self.members_of(db, keys[smallest].as_ref(), &present[smallest])?;
                let mut out = Vec::new();
                'outer: for x in base {
                    for (i, k) in keys.iter().enumerate() {
                        if i == smallest {
                            continue;
                        }
                        if !self.set_contains(db, k.as_ref(), present[i].version, &x)? {
                            continue 'outer;
                        }
                    }
                    out.push(x);
                }
                Ok(out)
            }
            SetOp::Union => {
                let mut all = std::collections::BTreeSet::new();
                for (k, m) in keys.iter().zip(&metas) {
                    if let Some(m) = m {
                        all.extend(self.members_of(db, k.as_ref(), m)?);
                    }
                }
                Ok(all.into_iter().collect())
            }
            SetOp::Diff => {
                let Some(Some(first)) = metas.first() else {
                    return Ok(Vec::new());
                };
                let base = self.members_of(db, keys[0].as_ref(), first)?;
                let mut out = Vec::new();
                'next: for x in base {
                    for (k, m) in keys.iter().zip(&metas).skip(1) {
                        if let Some(m) = m {
                            if self.set_contains(db, k.as_ref(), m.version, &x)? {
                                continue 'next;
                            }
                        }
                    }
                    out.push(x);
                }
                Ok(out)
            }
        }
    }

    /// SINTERSTORE / SUNIONSTORE / SDIFFSTORE: stores the result in `dst`
    /// (replacing it; deleting it when the result is empty) and returns the
    /// result's size.
    ///
    /// # Errors
    /// `WrongType` when a source key holds another type.
    pub fn set_combine_store<K: AsRef<[u8]>>(
        &mut self,
        db: u16,
        op: SetOp,
        dst: &[u8],
        keys: &[K],
    ) -> Result<u64> {
        let result = self.set_combine(db, op, keys)?;
        self.del(db, dst)?;
        if !result.is_empty() {
            self.sadd(db, dst, &result)?;
        }
        Ok(result.len() as u64)
    }

    /// SINTERCARD: size of the intersection, stopping at `limit` (0 = no
    /// limit).
    ///
    /// # Errors
    /// `WrongType`.
    pub fn sintercard<K: AsRef<[u8]>>(&mut self, db: u16, keys: &[K], limit: u64) -> Result<u64> {
        let n = self.set_combine(db, SetOp::Inter, keys)?.len() as u64;
        Ok(if limit == 0 { n } else { n.min(limit) })
    }
}

#[cfg(test)]
mod tests;
