//! The keys a request names and whether it reads or writes each: what ACL
//! key patterns (`~`, `%R~`, `%W~`) are checked against.
//!
//! Rows with explicit key specs ([`CommandSpec::key_specs`]) use them, one
//! access per spec; other rows use their
//! [`KeySpec`](crate::command_table::KeySpec) with the row's key flags. As
//! in Redis, `access` means a read and `insert` / `update` /
//! `delete` a write; a spec with neither (`EXISTS`, `TYPE`) needs no
//! particular access, so any pattern covers it.

use roaringd_resp::Args;

use crate::command_table::{CommandSpec, Flag, KeyFind, KeySpecDoc};

/// The access a command needs to one of its keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// Reads the key's value.
    pub read: bool,
    /// Writes the key.
    pub write: bool,
}

impl Access {
    /// The access of key-spec flags (`RW`, `access`, `update`, ...).
    pub fn of(flags: &[&str]) -> Access {
        let mut a = Access::default();
        for f in flags {
            match f.to_ascii_lowercase().as_str() {
                "access" => a.read = true,
                "insert" | "update" | "delete" => a.write = true,
                _ => {}
            }
        }
        a
    }
}

/// Pushes `(argument index, access)` for every key of `args` (name at
/// index 0) onto `out`, in argument order. Indices are within `args`.
pub fn key_refs(spec: &CommandSpec, args: &Args<'_>, out: &mut Vec<(usize, Access)>) {
    if let Some(a) = variable_access(spec, args) {
        let mut idx = Vec::new();
        spec.keys.extract(args, &mut idx);
        out.extend(idx.into_iter().map(|i| (i, a)));
        return;
    }
    if spec.key_specs.is_empty() {
        let access = match spec.key_flags {
            Some(flags) => Access::of(flags),
            None if spec.has(Flag::Write) => Access::of(&["OW", "update"]),
            None => Access::of(&["RO", "access"]),
        };
        let mut idx = Vec::new();
        spec.keys.extract(args, &mut idx);
        out.extend(idx.into_iter().map(|i| (i, access)));
        return;
    }
    let start = out.len();
    for doc in spec.key_specs {
        let access = Access::of(doc.flags);
        out.extend(doc_positions(doc, args).map(|i| (i, access)));
    }
    out[start..].sort_by_key(|&(i, _)| i);
}

/// The key positions one key spec names in `args`.
fn doc_positions(doc: &KeySpecDoc, args: &Args<'_>) -> impl Iterator<Item = usize> {
    let argc = args.len() as i64;
    let begin = doc.begin_index as i64;
    let (first, last, step) = match doc.find {
        KeyFind::Range { lastkey, step, .. } => {
            let last = if lastkey >= 0 {
                begin + i64::from(lastkey)
            } else {
                argc + i64::from(lastkey)
            };
            (begin, last, step as i64)
        }
        KeyFind::KeyNum {
            keynumidx,
            firstkey,
            step,
        } => {
            let n = args
                .get(doc.begin_index + keynumidx)
                .and_then(roaringd_compat::number::parse_i64)
                .unwrap_or(0)
                .max(0);
            let first = begin + firstkey as i64;
            (first, first + (n - 1) * step as i64, step as i64)
        }
    };
    let last = last.min(argc - 1);
    let step = step.max(1);
    (0..)
        .map(move |k| first + k * step)
        .take_while(move |&i| i <= last)
        .filter(|&i| i >= 1)
        .map(|i| i as usize)
}

/// The access of rows whose key flags depend on the arguments (Redis's
/// `VARIABLE_FLAGS`): SET reads its key only with `GET`.
fn variable_access(spec: &CommandSpec, args: &Args<'_>) -> Option<Access> {
    if !spec
        .key_flags
        .is_some_and(|f| f.contains(&"variable_flags"))
    {
        return None;
    }
    match spec.name {
        "set" => {
            let get = (3..args.len())
                .any(|i| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(b"get")));
            Some(Access {
                read: get,
                write: true,
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command_table::CommandTable;

    fn with_args<R>(words: &[&str], f: impl FnOnce(&Args<'_>) -> R) -> R {
        f(&crate::transaction::OwnedArgs::new(words.iter().map(|w| w.as_bytes())).args())
    }

    /// Every row with explicit key specs names the same positions through
    /// them as through its locking key spec.
    #[test]
    fn key_specs_agree_with_lock_positions() {
        for spec in CommandTable::get().iter() {
            if spec.key_specs.is_empty() {
                continue;
            }
            for argc in 2..9 {
                let words: Vec<String> = (0..argc)
                    .map(|i| {
                        if i == 0 {
                            spec.name.to_string()
                        } else {
                            format!("a{i}")
                        }
                    })
                    .collect();
                let words: Vec<&str> = words.iter().map(String::as_str).collect();
                if !spec.arity_ok(argc) {
                    continue;
                }
                with_args(&words, |args| {
                    let mut lock = Vec::new();
                    spec.keys.extract(args, &mut lock);
                    lock.sort_unstable();
                    let mut refs = Vec::new();
                    key_refs(spec, args, &mut refs);
                    let acl: Vec<usize> = refs.iter().map(|r| r.0).collect();
                    assert_eq!(acl, lock, "{} with {argc} arguments", spec.name);
                });
            }
        }
    }

    #[test]
    fn accesses_follow_the_specs() {
        let r = Access {
            read: true,
            write: false,
        };
        let w = Access {
            read: false,
            write: true,
        };
        let rw = Access {
            read: true,
            write: true,
        };
        let refs = |words: &[&str]| {
            with_args(words, |args| {
                let e = CommandTable::get().lookup(words[0].as_bytes()).unwrap();
                let mut v = Vec::new();
                key_refs(e.spec, args, &mut v);
                v
            })
        };
        assert_eq!(refs(&["get", "k"]), [(1, r)]);
        assert_eq!(refs(&["del", "a", "b"]), [(1, w), (2, w)]);
        assert_eq!(refs(&["rename", "a", "b"]), [(1, rw), (2, w)]);
        assert_eq!(
            refs(&["sinterstore", "d", "a", "b"]),
            [(1, w), (2, r), (3, r)]
        );
        assert_eq!(refs(&["exists", "a"]), [(1, Access::default())]);
        assert_eq!(refs(&["set", "k", "v"]), [(1, w)]);
        assert_eq!(refs(&["set", "k", "v", "nx", "get"]), [(1, rw)]);
        assert_eq!(
            refs(&["tr.bitop", "d", "AND", "a", "b"]),
            [(1, w), (3, r), (4, r)]
        );
        assert_eq!(refs(&["tr.diff", "d", "a", "b"]), [(1, w), (2, r), (3, r)]);
        assert_eq!(refs(&["tr.loadstring", "d", "s"]), [(1, w), (2, r)]);
        assert_eq!(refs(&["tr.setbit", "k", "1", "1"]), [(1, rw)]);
        assert_eq!(
            refs(&["sintercard", "2", "a", "b", "LIMIT", "1"]),
            [(2, r), (3, r)]
        );
    }
}
