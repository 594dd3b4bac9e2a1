//! Reads of one key that outlive the `Txn` that found it: the server's
//! streamed replies (TR.RANGE, SMEMBERS, ... produced a chunk at a time
//! while the client reads) read the key from a snapshot of the `Kv`, so
//! they hold no lock while they wait for a slow client.
//!
//! Contract:
//! - [`Txn::read_after_commit`] pins the key's version (the data GC keeps
//!   its entries, which a snapshot alone does not protect) and asks the
//!   `Txn` for a snapshot; [`Txn::commit`] takes it once its batch is
//!   written and before it lets go of the locks. Every key the `Txn`
//!   absorbed from the write-back tier is in that batch, so the snapshot
//!   holds the key exactly as the `Txn` left it.
//! - The caller must not write the key in the same `Txn` after the call
//!   (the snapshot is taken at the commit, so it would show that write).
//! - Reads before the commit, or after a `Txn` dropped without one, fail
//!   (`Corrupt`, "read before its transaction committed").
//! - Each read opens its own range scan from where the last one stopped,
//!   so a caller can hold a [`KeyRead`] across awaits and read it in
//!   chunks of its choosing.
//! - Held, it costs its snapshot (fjall keeps the memtables and tables
//!   the snapshot reads until it is dropped) and its pinned version (the
//!   data GC keeps that version, and newer ones, meanwhile).

use std::ops::Bound;
use std::sync::{Arc, OnceLock};

use roaringd_bitmap::ContainerView;

use crate::error::{Result, StoreError};
use crate::keys;
use crate::kv::{KvIter, KvRead, Space};
use crate::meta::{KeyMeta, Kind};
use crate::store::{Inner, Store};
use crate::txn::Txn;
use crate::types::bitmap::page::Unpacked;

/// Where a `Txn` leaves the snapshot it takes at its commit.
pub(crate) type SnapshotCell = Arc<OnceLock<Arc<dyn KvRead>>>;

/// One key version read from the state its `Txn` committed (see the
/// module docs). Dropping it lets the data GC have the version again.
pub struct KeyRead {
    snap: SnapshotCell,
    inner: Arc<Inner>,
    db: u16,
    key: Vec<u8>,
    meta: KeyMeta,
}

impl std::fmt::Debug for KeyRead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRead")
            .field("db", &self.db)
            .field("version", &self.meta.version)
            .field("ready", &self.snap.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Drop for KeyRead {
    fn drop(&mut self) {
        Store::release_versions(&self.inner, &[self.meta.version]);
    }
}

impl Txn {
    /// A read of live key `(db, key)` as this `Txn` leaves it, usable
    /// once the `Txn` has committed (module docs: the caller must not
    /// write the key in this `Txn` afterwards). `None` when the key is
    /// missing or expired.
    ///
    /// # Errors
    /// `Io` / `Corrupt` reading its meta.
    pub fn read_after_commit(&mut self, db: u16, key: &[u8]) -> Result<Option<KeyRead>> {
        let Some(meta) = self.live_meta(db, key)? else {
            return Ok(None);
        };
        Store::hold_version(&self.inner, meta.version);
        Ok(Some(KeyRead {
            snap: Arc::clone(self.snapshot_cell.get_or_insert_with(Default::default)),
            inner: Arc::clone(&self.inner),
            db,
            key: key.to_vec(),
            meta,
        }))
    }
}

impl KeyRead {
    /// The key's meta as the `Txn` read it (type, cardinality, `big`).
    #[must_use]
    pub fn meta(&self) -> &KeyMeta {
        &self.meta
    }

    fn kv(&self) -> Result<&dyn KvRead> {
        self.snap
            .get()
            .map(|s| &**s)
            .ok_or_else(|| StoreError::corrupt("read before its transaction committed"))
    }

    /// The `data` entries `(subkey, value)` of the key version from block
    /// `fhi`'s entry to the one holding block `ehi` (which may be a page
    /// under a later key; the reader stops past `ehi`), in order.
    ///
    /// # Errors
    /// `Io` from the seek.
    fn entries_within<'a>(&self, kv: &'a dyn KvRead, (fhi, ehi): (u16, u16)) -> Result<KvIter<'a>> {
        let v = self.meta.version;
        let prefix = keys::data_prefix(self.db, &self.key, v);
        let pend = crate::kv::prefix_end(&prefix);
        let to_end = pend.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let plen = prefix.len();
        let first = keys::data_key(self.db, &self.key, v, &fhi.to_be_bytes());
        let holder = kv.range_first(
            Space::Data,
            Bound::Included(&keys::data_key(self.db, &self.key, v, &ehi.to_be_bytes())),
            to_end,
            false,
        )?;
        let last = holder.map(|(k, _)| k);
        Ok(Box::new(
            kv.range(
                Space::Data,
                Bound::Included(&first),
                last.as_deref().map_or(to_end, Bound::Included),
                false,
            )
            .map(move |r| r.map(|(k, val)| (k[plen..].to_vec(), val))),
        ))
    }

    /// Calls `f` with the set bits of a bitmap in `[from, end]`,
    /// ascending, at most `max` of them. Returns where to go on (the bit
    /// after the last one given) when it stopped at `max`, `None` when it
    /// reached `end`.
    ///
    /// # Errors
    /// `WrongType` for another type; `Corrupt` on a bad container entry.
    pub fn bitmap_values(
        &self,
        from: u32,
        end: u32,
        max: usize,
        mut f: impl FnMut(u32),
    ) -> Result<Option<u32>> {
        if self.meta.kind() != Kind::Bitmap {
            return Err(StoreError::WrongType);
        }
        if from > end {
            return Ok(None);
        }
        let (fhi, ehi) = ((from >> 16) as u16, (end >> 16) as u16);
        let v = self.meta.version;
        let kv = self.kv()?;
        // A key whose only entry is inline in its meta has none in `data`.
        let inline = match kv.get(Space::Meta, &keys::meta_key(self.db, &self.key))? {
            Some(b) if KeyMeta::decode_version(&b)? == v => {
                KeyMeta::inline_entry(&b)?.map(|(sub, val)| (sub.to_vec(), val.to_vec()))
            }
            _ => None,
        };
        let entries: KvIter<'_> = match inline {
            Some(e) => Box::new(std::iter::once(Ok(e))),
            None => self.entries_within(kv, (fhi, ehi))?,
        };
        let mut given = 0usize;
        for block in Unpacked::new(entries, false, (fhi, ehi)) {
            let (hi, bytes) = block?;
            let view = ContainerView::parse(&bytes)
                .map_err(|e| StoreError::Corrupt(format!("bitmap container: {e}")))?;
            let c = view.as_ref();
            let base = u32::from(hi) << 16;
            let it = if hi == fhi {
                c.iter_from(from as u16)
            } else {
                c.iter()
            };
            for lo in it {
                let x = base | u32::from(lo);
                if x > end {
                    return Ok(None);
                }
                if given == max {
                    return Ok(Some(x));
                }
                f(x);
                given += 1;
            }
        }
        Ok(None)
    }

    /// Calls `f` with the elements of a set (member, empty value; read from
    /// its pages) or a
    /// hash (field, value) in byte order of member or field (the order
    /// of SMEMBERS / HGETALL for a `big` key; a small one replies in
    /// another order), from the one after `after` (`None`: the first),
    /// until the bytes given reach `max_bytes`. Returns the last member
    /// or field given when it stopped there, `None` at the end.
    ///
    /// # Errors
    /// `WrongType` for another type; `Corrupt` on a bad hash entry.
    pub fn elements(
        &self,
        after: Option<&[u8]>,
        max_bytes: usize,
        mut f: impl FnMut(&[u8], &[u8]),
    ) -> Result<Option<Vec<u8>>> {
        let hash = match self.meta.kind() {
            Kind::Set => false,
            Kind::Hash => true,
            _ => return Err(StoreError::WrongType),
        };
        let v = self.meta.version;
        let prefix = keys::data_prefix(self.db, &self.key, v);
        let pend = crate::kv::prefix_end(&prefix);
        let cursor = after.map(|a| keys::data_key(self.db, &self.key, v, a));
        let start = match &cursor {
            Some(c) => Bound::Excluded(&c[..]),
            None => Bound::Included(&prefix[..]),
        };
        let end = match &pend {
            Some(e) => Bound::Excluded(&e[..]),
            None => Bound::Unbounded,
        };
        let mut bytes = 0usize;
        for e in self.kv()?.range(Space::Data, start, end, false) {
            let (k, val) = e?;
            let sub = &k[prefix.len()..];
            if hash {
                let val = val
                    .get(8..)
                    .ok_or_else(|| StoreError::corrupt("hash field entry shorter than 8 bytes"))?;
                f(sub, val);
                bytes += sub.len() + val.len();
                if bytes >= max_bytes {
                    return Ok(Some(sub.to_vec()));
                }
                continue;
            }
            // A set page: its members above `after` (the page after the
            // cursor's may hold some at or below it).
            for m in crate::types::sets::page::Members::new(sub, &val)? {
                let m = m?;
                if after.is_some_and(|a| m <= a) {
                    continue;
                }
                f(m, &[]);
                bytes += m.len();
                if bytes >= max_bytes {
                    return Ok(Some(m.to_vec()));
                }
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use crate::keys;
    use crate::kv::Space;
    use crate::meta::KeyMeta;
    use crate::store::{Store, StoreConfig};

    /// An LSM store, the server's (its compactions run the data GC).
    fn store(dir: &tempfile::TempDir) -> Store {
        Store::open(StoreConfig {
            dir: Some(dir.path().to_path_buf()),
            ..StoreConfig::default()
        })
        .expect("open")
    }

    fn all_values(r: &super::KeyRead, from: u32, end: u32, max: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut next = Some(from);
        while let Some(n) = next {
            next = r.bitmap_values(n, end, max, |v| out.push(v)).expect("read");
        }
        out
    }

    /// A key whose only entry is inline in its meta (one run container
    /// of 65,536 values: a few bytes) is read whole from the snapshot.
    #[test]
    fn a_read_of_an_inline_key_sees_its_values() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = store(&dir);
        let mut t = s.begin(&[(0, b"run")]);
        t.tr_range_write(
            0,
            b"run",
            1 << 16,
            (2 << 16) - 1,
            crate::types::bitmap::RangeOp::Set,
        )
        .expect("setrange");
        t.commit().expect("commit");
        let meta = s
            .inner
            .kv
            .get(Space::Meta, &keys::meta_key(0, b"run"))
            .expect("get")
            .expect("meta");
        assert!(KeyMeta::inline_entry(&meta).expect("decode").is_some());
        let mut t = s.begin(&[(0, b"run")]);
        let r = t
            .read_after_commit(0, b"run")
            .expect("read")
            .expect("exists");
        t.commit().expect("commit");
        let all = all_values(&r, 0, u32::MAX, 1000);
        assert_eq!(all, ((1 << 16)..(2 << 16)).collect::<Vec<u32>>());
    }

    #[test]
    fn a_read_sees_the_committed_state_in_chunks_and_not_later_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = store(&dir);
        let mut t = s.begin(&[(0, b"bm")]);
        let offs: Vec<u32> = (0..200_000u32)
            .step_by(3)
            .chain([1 << 20, u32::MAX])
            .collect();
        t.tr_setbits(0, b"bm", &offs).expect("setbits");
        t.commit().expect("commit");

        let mut t = s.begin(&[(0, b"bm")]);
        let r = t
            .read_after_commit(0, b"bm")
            .expect("read")
            .expect("exists");
        assert!(
            r.bitmap_values(0, 10, 10, |_| {}).is_err(),
            "before the commit"
        );
        t.commit().expect("commit");
        // A later write and delete do not reach the read.
        let mut t = s.begin(&[(0, b"bm")]);
        t.tr_setbits(0, b"bm", &[1, 2]).expect("setbits");
        t.commit().expect("commit");
        let mut t = s.begin(&[(0, b"bm")]);
        assert!(t.del(0, b"bm").expect("del"));
        t.commit().expect("commit");
        s.compact().expect("compact");
        // The read's pin keeps the deleted version from the data GC.
        let prefix = crate::keys::data_prefix(0, b"bm", r.meta().version);
        let stored = || {
            s.inner
                .kv
                .prefix(crate::kv::Space::Data, &prefix, false)
                .count()
        };
        assert!(stored() > 0, "the pinned version was collected");

        for max in [1, 7, 1000, usize::MAX] {
            assert_eq!(all_values(&r, 0, u32::MAX, max), offs);
        }
        let inner: Vec<u32> = offs
            .iter()
            .copied()
            .filter(|&v| (5..=70_000).contains(&v))
            .collect();
        assert_eq!(all_values(&r, 5, 70_000, 13), inner);
        assert_eq!(all_values(&r, 7, 5, 13), Vec::<u32>::new());
        drop(r);
        s.compact().expect("compact");
        assert_eq!(stored(), 0, "collected once the read is gone");
    }

    #[test]
    fn a_read_sees_edits_absorbed_from_the_write_back_tier() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = store(&dir);
        let mut t = s.begin(&[(0, b"bm")]);
        let offs: Vec<u32> = (0..5000u32).map(|i| i * 2).collect();
        t.tr_setbits(0, b"bm", &offs).expect("setbits");
        t.commit().expect("commit");
        // Single-bit edits through the tier: dirty, not in the `Kv` yet.
        for off in [1u32, 3, 5] {
            let mut t = s.begin_keep_dirty(&[(0, b"bm")]);
            t.tr_setbit(0, b"bm", off, true).expect("setbit");
            t.commit().expect("commit");
        }
        let mk = crate::keys::KeyBuf::meta(0, b"bm");
        assert!(s.inner.dirty.meta(&mk).is_some(), "the edits stayed dirty");
        let mut t = s.begin(&[(0, b"bm")]);
        let r = t
            .read_after_commit(0, b"bm")
            .expect("read")
            .expect("exists");
        t.commit().expect("commit");
        let mut want = offs.clone();
        want.extend([1, 3, 5]);
        want.sort_unstable();
        assert_eq!(all_values(&r, 0, u32::MAX, 100), want);
    }

    #[test]
    fn elements_of_sets_and_hashes_come_in_byte_order_and_resume() {
        let dir = tempfile::tempdir().expect("tempdir");
        let s = store(&dir);
        let members: Vec<Vec<u8>> = (0..1000).map(|i| format!("m{i:05}").into_bytes()).collect();
        let mut t = s.begin(&[(0, b"s"), (0, b"h")]);
        t.sadd(0, b"s", &members).expect("sadd");
        let pairs: Vec<(Vec<u8>, Vec<u8>)> =
            members.iter().map(|m| (m.clone(), b"v".to_vec())).collect();
        t.hset(0, b"h", &pairs, false).expect("hset");
        t.commit().expect("commit");

        let mut t = s.begin(&[(0, b"s"), (0, b"h")]);
        let rs = t.read_after_commit(0, b"s").expect("read").expect("exists");
        let rh = t.read_after_commit(0, b"h").expect("read").expect("exists");
        assert!(t.read_after_commit(0, b"nokey").expect("read").is_none());
        t.commit().expect("commit");
        for (r, val) in [(&rs, &b""[..]), (&rh, &b"v"[..])] {
            let mut got = Vec::new();
            let mut after: Option<Vec<u8>> = None;
            loop {
                after = r
                    .elements(after.as_deref(), 100, |m, v| {
                        assert_eq!(v, val);
                        got.push(m.to_vec());
                    })
                    .expect("elements");
                if after.is_none() {
                    break;
                }
            }
            assert_eq!(got, members);
        }
        assert!(rs.bitmap_values(0, 1, 1, |_| {}).is_err());
    }
}
