//! ACL users, as Redis 6+/7.0 has them: the user registry, the permission
//! check that dispatch runs before every command, the ACL log and the ACL
//! file.
//!
//! Users are immutable values ([`User`]) behind `Arc`s in one registry;
//! a change replaces the user and bumps [`Acl::generation`]. Each
//! connection keeps its user's `Arc` and compares generations before a
//! command ([`sync`]): unchanged (the usual case) costs one atomic load;
//! changed, it takes the user's new value, or finds its user deleted and
//! closes (Redis closes such clients too).

pub mod describe;
pub mod file;
pub mod keys;
pub mod log;
pub mod user;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use roaringd_resp::Args;

use crate::client::Client;
use crate::command_table::Entry;
use crate::error::CommandError;
use crate::state::{now_ms, Server};
pub use log::AclLog;
pub use user::{Denial, RuleError, User};

/// The user registry and the ACL log.
#[derive(Debug)]
pub struct Acl {
    users: RwLock<BTreeMap<Vec<u8>, Arc<User>>>,
    /// Bumped on every change of the registry.
    generation: AtomicU64,
    /// The `default` user has a password or is off: connections start
    /// unauthenticated.
    default_needs_auth: AtomicBool,
    next_uid: AtomicU64,
    /// `acl-pubsub-default allchannels`.
    pubsub_all: AtomicBool,
    /// `ACL LOG`.
    pub log: AclLog,
}

impl Default for Acl {
    fn default() -> Self {
        Self::new()
    }
}

/// Why `ACL SETUSER` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetUserError {
    /// The rule, as given (selectors merged).
    pub rule: Vec<u8>,
    /// Why.
    pub error: RuleError,
}

impl Acl {
    /// A registry holding only `default` (on, nopass, every command, key
    /// and channel).
    pub fn new() -> Self {
        let mut users = BTreeMap::new();
        users.insert(b"default".to_vec(), Arc::new(User::new_default(0)));
        Acl {
            users: RwLock::new(users),
            generation: AtomicU64::new(0),
            default_needs_auth: AtomicBool::new(false),
            next_uid: AtomicU64::new(1),
            pubsub_all: AtomicBool::new(false),
            log: AclLog::default(),
        }
    }

    /// Changes with every change of any user.
    #[inline]
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// True when a connection that has not authenticated may not run
    /// commands: `default` has passwords or is off.
    #[inline]
    pub fn default_needs_auth(&self) -> bool {
        self.default_needs_auth.load(Ordering::Relaxed)
    }

    /// `acl-pubsub-default`: true for `allchannels`.
    pub fn pubsub_all(&self) -> bool {
        self.pubsub_all.load(Ordering::Relaxed)
    }

    /// Sets `acl-pubsub-default` (for users and selectors made later).
    pub fn set_pubsub_all(&self, all: bool) {
        self.pubsub_all.store(all, Ordering::Relaxed);
    }

    /// A fresh user id.
    pub fn new_uid(&self) -> u64 {
        self.next_uid.fetch_add(1, Ordering::Relaxed)
    }

    /// The `default` user (always present).
    pub fn default_user(&self) -> Arc<User> {
        self.users.read()[&b"default"[..]].clone()
    }

    /// The user named `name`.
    pub fn get(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user, by name.
    pub fn users(&self) -> Vec<Arc<User>> {
        self.users.read().values().cloned().collect()
    }

    /// The user `name` if it is on and `password` is one of its passwords
    /// (any password for a `nopass` user).
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        self.get(name).filter(|u| u.password_ok(password))
    }

    /// Applies `rules` to user `name` (created when missing), all or
    /// nothing.
    ///
    /// # Errors
    /// The first refused rule; the registry is then unchanged.
    pub fn set_user(&self, name: &[u8], rules: &[Vec<u8>]) -> Result<(), SetUserError> {
        let all_channels = self.pubsub_all();
        let mut users = self.users.write();
        let mut u = match users.get(name) {
            Some(u) => User::clone(u),
            None => User::new(name, self.new_uid(), all_channels),
        };
        for r in rules {
            u.apply(r, all_channels).map_err(|error| SetUserError {
                rule: r.clone(),
                error,
            })?;
        }
        u.seal();
        users.insert(name.to_vec(), Arc::new(u));
        self.published(&users);
        Ok(())
    }

    /// Removes the named users (never `default`, which the caller refuses);
    /// returns the ids of those that existed.
    pub fn delete(&self, names: &[&[u8]]) -> Vec<u64> {
        let mut users = self.users.write();
        let gone: Vec<u64> = names
            .iter()
            .filter(|n| **n != b"default")
            .filter_map(|n| users.remove(*n))
            .map(|u| u.uid)
            .collect();
        if !gone.is_empty() {
            self.published(&users);
        }
        gone
    }

    /// `requirepass`: `default` gets exactly this password, or `nopass`
    /// for `None`.
    pub fn set_default_password(&self, password: Option<&[u8]>) {
        let mut rule = b">".to_vec();
        let rules = match password {
            Some(p) => {
                rule.extend_from_slice(p);
                vec![b"resetpass".to_vec(), rule]
            }
            None => vec![b"resetpass".to_vec(), b"nopass".to_vec()],
        };
        // Both rules always apply.
        let _ = self.set_user(b"default", &rules);
    }

    /// Replaces every user by `new` (ACL LOAD): `default` keeps its
    /// identity (its connections stay) and takes `new`'s `default`, or a
    /// fresh one when `new` has none. Returns the ids of the replaced
    /// users, whose connections must close.
    pub fn replace_all(&self, mut new: BTreeMap<Vec<u8>, User>) -> Vec<u64> {
        let mut users = self.users.write();
        let default_uid = users[&b"default"[..]].uid;
        let mut default = new
            .remove(&b"default"[..])
            .unwrap_or_else(|| User::new_default(default_uid));
        default.uid = default_uid;
        default.seal();
        let gone = users
            .values()
            .map(|u| u.uid)
            .filter(|&id| id != default_uid)
            .collect();
        *users = new
            .into_iter()
            .map(|(k, mut u)| {
                u.seal();
                (k, Arc::new(u))
            })
            .collect();
        users.insert(b"default".to_vec(), Arc::new(default));
        self.published(&users);
        gone
    }

    /// Publishes a change made under the write lock `users`.
    fn published(&self, users: &BTreeMap<Vec<u8>, Arc<User>>) {
        let d = &users[&b"default"[..]];
        self.default_needs_auth
            .store(!(d.nopass && d.enabled), Ordering::Relaxed);
        self.generation.fetch_add(1, Ordering::Release);
    }
}

/// Brings `client`'s user up to date with the registry. Returns false
/// when the client's user was deleted (or replaced by ACL LOAD): the
/// client is then `default` and unauthenticated, and must close.
#[inline]
pub fn sync(acl: &Acl, client: &mut Client) -> bool {
    let g = acl.generation();
    if g == client.acl_gen {
        return true;
    }
    client.acl_gen = g;
    match acl.get(&client.user.name) {
        Some(u) if u.uid == client.user.uid => {
            client.set_user(u);
            true
        }
        _ => {
            client.set_user(acl.default_user());
            client.authenticated = false;
            false
        }
    }
}

/// The NOPERM error of a command refused when sent or queued (Redis 7.0's
/// texts).
pub fn denial_error(entry: &'static Entry, d: Denial) -> CommandError {
    CommandError::Custom(
        match d {
            Denial::Command => format!(
                "NOPERM this user has no permissions to run the '{}' command",
                entry.full_name
            ),
            Denial::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .to_string()
            }
        }
        .into(),
    )
}

/// The NOPERM error of a queued command that EXEC finds refused (the
/// user's rules changed after it was queued).
pub fn exec_denial_error(d: Denial) -> CommandError {
    let reason = match d {
        Denial::Command => "no permission to execute the command or subcommand",
        Denial::Key(_) => "no permission to touch the specified keys",
    };
    CommandError::Custom(
        format!(
            "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: {reason}"
        )
        .into(),
    )
}

/// Records refusal `d` of `entry` with `args` (name at index 0) in the
/// ACL log, in the client's context; `cmd` overrides the command its
/// CLIENT LIST line shows (EXEC shows `exec`).
pub fn log_denial(
    server: &Server,
    client: &Client,
    entry: &'static Entry,
    args: &Args<'_>,
    d: Denial,
    cmd: Option<&str>,
) {
    let (reason, object) = match d {
        Denial::Command => (log::Reason::Command, entry.full_name.as_bytes().to_vec()),
        Denial::Key(i) => (log::Reason::Key, args.get(i).unwrap_or_default().to_vec()),
    };
    server.acl.log.add(log::Event {
        reason,
        context: context(client),
        object,
        username: client.user.name.clone(),
        client_info: match cmd {
            Some(c) => client.info.describe_as(now_ms(), c),
            None => client.info.describe(now_ms()),
        },
    });
}

/// Records a refused AUTH / HELLO AUTH of user `username`; `command` is
/// the command's name as sent.
pub fn log_auth_failure(server: &Server, client: &Client, command: &[u8], username: &[u8]) {
    server.acl.log.add(log::Event {
        reason: log::Reason::Auth,
        context: context(client),
        object: command.to_vec(),
        username: username.to_vec(),
        // EXEC runs a queued AUTH: Redis shows `exec` as the command.
        client_info: if client.in_exec {
            client.info.describe_as(now_ms(), "exec")
        } else {
            client.info.describe(now_ms())
        },
    });
}

fn context(client: &Client) -> log::Context {
    if client.in_transaction() {
        log::Context::Multi
    } else {
        log::Context::Toplevel
    }
}

/// Closes the connections authenticated as one of the users `uids`: the
/// calling client after its reply, the others now.
pub fn disconnect(server: &Server, me: &mut Client, uids: &[u64]) {
    if uids.is_empty() {
        return;
    }
    let clients: Vec<_> = server.clients.lock().values().cloned().collect();
    for c in clients {
        if !uids.contains(&c.user_uid()) {
            continue;
        }
        if c.id == me.id {
            me.close_after_reply = true;
        } else {
            server.clients.lock().remove(&c.id);
            c.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(r: &[&str]) -> Vec<Vec<u8>> {
        r.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn set_user_is_all_or_nothing() {
        let acl = Acl::new();
        let g = acl.generation();
        acl.set_user(b"alice", &rules(&["on", ">pw", "+get"]))
            .unwrap();
        assert!(acl.generation() > g);
        let err = acl
            .set_user(b"alice", &rules(&["off", "+nosuch"]))
            .unwrap_err();
        assert_eq!(err.rule, b"+nosuch");
        assert!(
            acl.get(b"alice").unwrap().enabled,
            "unchanged after an error"
        );
        assert!(acl.set_user(b"bob", &rules(&["bad"])).is_err());
        assert!(acl.get(b"bob").is_none(), "not created after an error");
    }

    #[test]
    fn authentication_and_requirepass() {
        let acl = Acl::new();
        assert!(!acl.default_needs_auth());
        assert!(acl.authenticate(b"default", b"x").is_some());
        acl.set_default_password(Some(b"pw"));
        assert!(acl.default_needs_auth());
        assert!(acl.authenticate(b"default", b"x").is_none());
        assert!(acl.authenticate(b"default", b"pw").is_some());
        acl.set_default_password(None);
        assert!(!acl.default_needs_auth());
        acl.set_user(b"u", &rules(&[">pw"])).unwrap();
        assert!(acl.authenticate(b"u", b"pw").is_none(), "off");
        assert!(acl.authenticate(b"nouser", b"pw").is_none());
        acl.set_user(b"default", &rules(&["off"])).unwrap();
        assert!(acl.default_needs_auth());
    }

    #[test]
    fn identities_survive_changes_not_deletion_or_load() {
        let acl = Acl::new();
        acl.set_user(b"a", &rules(&["on"])).unwrap();
        let id = acl.get(b"a").unwrap().uid;
        acl.set_user(b"a", &rules(&["+get"])).unwrap();
        assert_eq!(acl.get(b"a").unwrap().uid, id);
        assert_eq!(acl.delete(&[b"a", b"nosuch", b"default"]), [id]);
        acl.set_user(b"a", &rules(&["on"])).unwrap();
        let id2 = acl.get(b"a").unwrap().uid;
        assert_ne!(id, id2);
        let mut new = BTreeMap::new();
        new.insert(b"a".to_vec(), User::new(b"a", acl.new_uid(), false));
        assert_eq!(acl.replace_all(new), [id2]);
        assert_eq!(acl.default_user().uid, 0);
        assert_ne!(acl.get(b"a").unwrap().uid, id2);
    }
}
