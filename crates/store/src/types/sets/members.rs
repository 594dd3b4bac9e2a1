//! A set version's members on a `Txn`, through its pages
//! ([`super::page`]): membership with one seek, inserts and removals that
//! rewrite only the pages they touch, and the members in order.

use std::ops::Bound;

use crate::error::Result;
use crate::txn::Txn;

use super::page;

/// A page as read: `(subkey, value)`.
type Page = (Vec<u8>, Vec<u8>);

/// The members of `pages` (in the order given, ascending or descending as
/// `reverse` says) that `keep` accepts, as owned bytes.
fn flatten<'a>(
    pages: impl Iterator<Item = Result<Page>> + 'a,
    keep: impl Fn(&[u8]) -> bool + 'a,
    reverse: bool,
) -> impl Iterator<Item = Result<Vec<u8>>> + 'a {
    pages.flat_map(move |p| {
        let members = p.and_then(|(k, v)| {
            Ok(page::members(&k, &v)?
                .into_iter()
                .filter(|m| keep(m))
                .map(<[u8]>::to_vec)
                .collect::<Vec<_>>())
        });
        let out: Vec<Result<Vec<u8>>> = match members {
            Ok(mut ms) => {
                if reverse {
                    ms.reverse();
                }
                ms.into_iter().map(Ok).collect()
            }
            Err(e) => vec![Err(e)],
        };
        out
    })
}

impl Txn {
    /// The page where `member` is or would go: the first page whose subkey
    /// is at or after it; `None` when every page is below it.
    fn set_page_from(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        member: &[u8],
    ) -> Result<Option<Page>> {
        self.data_first(db, key, version, Bound::Included(member), false)
    }

    /// True when set version `version` of `key` holds `member`.
    ///
    /// # Errors
    /// `Io`; `Corrupt` on a bad page.
    pub(crate) fn set_contains(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        member: &[u8],
    ) -> Result<bool> {
        let found = self.data_first_with(db, key, version, Bound::Included(member), |k, v| {
            Ok(k == member || page::contains(k, v, member)?)
        })?;
        found.unwrap_or(Ok(false))
    }

    /// Adds `members` (ascending, without repeats) to set version
    /// `version` of `key`; returns those that were not there, ascending.
    /// Each page touched is rewritten once (split when it passes
    /// [`page::PAGE_BYTES`]); members above the last page join it.
    ///
    /// # Errors
    /// `Io`; `Corrupt` on a bad page.
    pub(crate) fn set_insert<'m>(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        members: &[&'m [u8]],
    ) -> Result<Vec<&'m [u8]>> {
        let mut added = Vec::new();
        let mut i = 0;
        while i < members.len() {
            let (old, upper) = match self.set_page_from(db, key, version, members[i])? {
                Some(p) => {
                    let upper = p.0.clone();
                    (Some(p), Some(upper))
                }
                None => (
                    self.data_first(db, key, version, Bound::Unbounded, true)?,
                    None,
                ),
            };
            let end = match &upper {
                Some(u) => i + members[i..].partition_point(|m| *m <= u.as_slice()),
                None => members.len(),
            };
            let cur = match &old {
                Some((k, v)) => page::members(k, v)?,
                None => Vec::new(),
            };
            let before = added.len();
            let mut merged: Vec<&[u8]> = Vec::with_capacity(cur.len() + (end - i));
            let mut theirs = members[i..end].iter().peekable();
            for m in cur {
                while let Some(x) = theirs.next_if(|x| **x < m) {
                    merged.push(x);
                    added.push(*x);
                }
                theirs.next_if(|x| **x == m);
                merged.push(m);
            }
            for x in theirs {
                merged.push(x);
                added.push(*x);
            }
            if added.len() > before {
                let old_key = old.as_ref().map(|p| p.0.as_slice());
                let writes = Self::set_page_writes(old_key, &merged);
                self.set_apply_page_writes(db, key, version, writes);
            }
            i = end;
        }
        Ok(added)
    }

    /// Removes `members` (ascending, without repeats) from set version
    /// `version` of `key`; returns how many were there. A page left empty
    /// is deleted; pages are not merged.
    ///
    /// # Errors
    /// `Io`; `Corrupt` on a bad page.
    pub(crate) fn set_remove(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        members: &[&[u8]],
    ) -> Result<u64> {
        let mut removed = 0;
        let mut i = 0;
        while i < members.len() {
            let Some((k, v)) = self.set_page_from(db, key, version, members[i])? else {
                break;
            };
            let end = i + members[i..].partition_point(|m| *m <= k.as_slice());
            let mut gone = members[i..end].iter().peekable();
            let mut kept = Vec::new();
            let mut n = 0;
            for m in page::members(&k, &v)? {
                while gone.next_if(|x| **x < m).is_some() {}
                if gone.next_if(|x| **x == m).is_some() {
                    n += 1;
                } else {
                    kept.push(m);
                }
            }
            if n > 0 {
                removed += n;
                let writes = Self::set_page_writes(Some(&k), &kept);
                self.set_apply_page_writes(db, key, version, writes);
            }
            i = end;
        }
        Ok(removed)
    }

    /// The writes that store `members` (ascending) as the pages that
    /// replace the page keyed `old` (or that are new, for `None`), cut by
    /// [`page::cut`]: `(subkey, Some(value))` puts, then the delete of
    /// `old` when no new page takes its subkey.
    fn set_page_writes(old: Option<&[u8]>, members: &[&[u8]]) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
        let mut old = old;
        let mut out = Vec::new();
        if !members.is_empty() {
            for r in page::cut(members) {
                let (sub, value) = page::encode(&members[r]);
                if old == Some(sub.as_slice()) {
                    old = None;
                }
                out.push((sub, Some(value)));
            }
        }
        if let Some(k) = old {
            out.push((k.to_vec(), None));
        }
        out
    }

    /// Applies [`Txn::set_page_writes`]'s writes to `key`'s version.
    fn set_apply_page_writes(
        &mut self,
        db: u16,
        key: &[u8],
        version: u64,
        writes: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    ) {
        for (sub, value) in writes {
            match value {
                Some(v) => self.data_put(db, key, version, &sub, v),
                None => self.data_delete(db, key, version, &sub),
            }
        }
    }

    /// One random member of set version `version` of `key`, which holds
    /// `card` members ([`Txn::pick_by_rank`]: pages are skipped by the
    /// member counts in their headers, not read member by member). `None`
    /// when the set is empty.
    ///
    /// # Errors
    /// `Io`; `Corrupt` on a bad page.
    pub(crate) fn set_pick_one(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        card: u64,
    ) -> Result<Option<Vec<u8>>> {
        let bounds = || {
            let first = self
                .set_members(db, key, version, None, false)
                .next()
                .transpose()?;
            let last = self.data_first(db, key, version, Bound::Unbounded, true)?;
            Ok(first.zip(last.map(|(k, _)| k)))
        };
        self.pick_by_rank((db, key, version), card, bounds, page::count, |k, v, i| {
            Ok(page::members(k, v)?[i as usize].to_vec())
        })
    }

    /// The members of set version `version` of `key` above `after`
    /// (exclusive; `None`: all) ascending, or below it descending for
    /// `reverse`.
    pub(crate) fn set_members(
        &self,
        db: u16,
        key: &[u8],
        version: u64,
        after: Option<&[u8]>,
        reverse: bool,
    ) -> Box<dyn Iterator<Item = Result<Vec<u8>>> + '_> {
        let Some(a) = after.map(<[u8]>::to_vec) else {
            return Box::new(flatten(
                self.data_iter(db, key, version, None, reverse),
                |_| true,
                reverse,
            ));
        };
        if !reverse {
            // Pages above `a` hold every member above it.
            let pages = self.data_iter(db, key, version, Some(&a), false);
            return Box::new(flatten(pages, move |m| m > a.as_slice(), false));
        }
        // The page at or after `a` may hold members below it; the pages
        // below `a` hold only such members.
        let first = self.set_page_from(db, key, version, &a).transpose();
        let below = self.data_iter(db, key, version, Some(&a), true);
        Box::new(flatten(
            first.into_iter().chain(below),
            move |m| m < a.as_slice(),
            true,
        ))
    }
}
