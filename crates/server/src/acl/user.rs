//! ACL users and selectors, and the rules of `ACL SETUSER` that change them
//! (Redis 7.0's `ACLSetUser` / `ACLSetSelector`).
//!
//! A [`User`] is a value: the registry stores each one behind an `Arc` and
//! replaces it whole on every change, so a connection holding a user sees
//! one consistent set of permissions for a whole command.

use std::collections::BTreeMap;

use roaringd_resp::Args;
use sha2::{Digest, Sha256};

use crate::acl::keys::{key_refs, Access};
use crate::command_table::{AclCat, CommandTable, Entry, Flag, KeySpec};
use roaringd_compat::glob::glob_match;

/// Why a rule was refused; [`RuleError::message`] is Redis's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// Not a rule, or a malformed one (`EINVAL`).
    Syntax,
    /// `+cmd`, `-cmd`, `+@cat`: no such command or category (`ENOENT`).
    UnknownCommand,
    /// A key pattern after `allkeys` / `~*` (`EEXIST`).
    KeyAfterAll,
    /// A channel pattern after `allchannels` / `&*` (`EISDIR`).
    ChannelAfterAll,
    /// `<pw` / `!hash` of a password the user does not have (`ENODEV`).
    NoSuchPassword,
    /// `#hash` / `!hash` that is not 64 lowercase hex digits (`EBADMSG`).
    BadHash,
    /// `+cmd|sub|arg`: first arguments of a subcommand (`ECHILD`).
    FirstArgOfSubcommand,
}

impl RuleError {
    /// The text Redis puts after `Error in ACL SETUSER modifier '...': `.
    pub fn message(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::KeyAfterAll => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::ChannelAfterAll => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => {
                "The password you are trying to remove from the user does not exist"
            }
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::FirstArgOfSubcommand => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// The set of commands a selector allows: one bit per [`Entry::acl_bit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandBits(Box<[u64]>);

impl CommandBits {
    /// No command.
    pub fn none() -> Self {
        CommandBits(vec![0; CommandTable::get().acl_bits().div_ceil(64)].into_boxed_slice())
    }

    /// Every command of the table (and no other bit).
    pub fn all() -> Self {
        let mut b = Self::none();
        for i in 0..CommandTable::get().acl_bits() {
            b.set(i, true);
        }
        b
    }

    /// True if bit `i` is set.
    #[inline]
    pub fn get(&self, i: usize) -> bool {
        self.0.get(i / 64).is_some_and(|w| w & (1 << (i % 64)) != 0)
    }

    /// Sets bit `i` to `v`.
    pub fn set(&mut self, i: usize, v: bool) {
        if let Some(w) = self.0.get_mut(i / 64) {
            if v {
                *w |= 1 << (i % 64);
            } else {
                *w &= !(1 << (i % 64));
            }
        }
    }

    /// True when every command of the table is set.
    pub fn is_all(&self) -> bool {
        (0..CommandTable::get().acl_bits()).all(|i| self.get(i))
    }

    /// Sets `e`'s bit and, for a container, every subcommand's bit.
    fn set_with_subs(&mut self, e: &'static Entry, v: bool) {
        self.set(e.acl_bit, v);
        for s in &e.subs {
            self.set(s.acl_bit, v);
        }
    }

    /// Applies `+@cat` (`v`) or `-@cat` to the bits, as Redis does: every
    /// entry in the category changes, a container with its subcommands.
    pub fn set_category(&mut self, cat: AclCat, v: bool) {
        for e in CommandTable::get().all_entries() {
            if e.spec.all_acl().has(cat) {
                self.set_with_subs(e, v);
            }
        }
    }

    /// `(allowed, denied)` counts of the entries in `cat`.
    pub fn count_category(&self, cat: AclCat) -> (usize, usize) {
        let (mut on, mut off) = (0, 0);
        for e in CommandTable::get().all_entries() {
            if e.spec.all_acl().has(cat) {
                if self.get(e.acl_bit) {
                    on += 1;
                } else {
                    off += 1;
                }
            }
        }
        (on, off)
    }
}

/// A key pattern and the access it grants (`~p`: both, `%R~p`, `%W~p`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    /// The glob.
    pub pattern: Vec<u8>,
    /// Grants reads.
    pub read: bool,
    /// Grants writes.
    pub write: bool,
}

/// One set of permissions: the root selector of a user, or one of its
/// `(...)` selectors. A command is allowed when some selector allows it
/// (its name and all its keys).
#[derive(Debug, Clone)]
pub struct Selector {
    /// Every key (`allkeys`, `~*`).
    pub all_keys: bool,
    /// Every channel (`allchannels`, `&*`).
    pub all_channels: bool,
    /// Set by `+@all`; cleared when any command is taken away.
    pub all_commands: bool,
    /// Allows commands added after the rules were set: set by `+@all`,
    /// cleared only by `-@all` (Redis's reserved command bit).
    pub future: bool,
    /// Allowed commands.
    pub commands: CommandBits,
    /// First arguments allowed for an otherwise denied command
    /// (`+select|0`), by the command's ACL bit, in the order added.
    pub first_args: BTreeMap<usize, Vec<Vec<u8>>>,
    /// Key patterns, in the order added.
    pub keys: Vec<KeyPattern>,
    /// Channel patterns, in the order added.
    pub channels: Vec<Vec<u8>>,
}

/// The category named `name` (without `@`, any case).
pub fn category(name: &[u8]) -> Option<AclCat> {
    AclCat::ALL
        .iter()
        .copied()
        .find(|c| c.name().as_bytes()[1..].eq_ignore_ascii_case(name))
}

/// True if `s` holds whitespace or NUL (not allowed in user names and
/// patterns).
pub fn has_spaces(s: &[u8]) -> bool {
    s.iter()
        .any(|&c| c == 0 || c.is_ascii_whitespace() || c == 0x0b)
}

impl Selector {
    /// A selector that allows nothing; `all_channels` per
    /// `acl-pubsub-default`.
    pub fn new(all_channels: bool) -> Self {
        Selector {
            all_keys: false,
            all_channels,
            all_commands: false,
            future: false,
            commands: CommandBits::none(),
            first_args: BTreeMap::new(),
            keys: Vec::new(),
            channels: Vec::new(),
        }
    }

    /// Allows (`v`) or denies `e` (a container with its subcommands) and
    /// forgets its allowed first arguments.
    pub fn change(&mut self, e: &'static Entry, v: bool) {
        self.commands.set_with_subs(e, v);
        self.first_args.remove(&e.acl_bit);
        if !v {
            self.all_commands = false;
        }
    }

    /// `+@all` (`v`) or `-@all`.
    pub fn set_all_commands(&mut self, v: bool) {
        self.commands = if v {
            CommandBits::all()
        } else {
            CommandBits::none()
        };
        self.all_commands = v;
        self.future = v;
        self.first_args.clear();
    }

    /// `+@cat` (`v`) or `-@cat`.
    pub fn set_category(&mut self, cat: AclCat, v: bool) {
        for e in CommandTable::get().all_entries() {
            if e.spec.all_acl().has(cat) {
                self.change(e, v);
            }
        }
    }

    /// Applies one selector rule (everything `ACL SETUSER` takes but the
    /// user flags, passwords and selectors).
    ///
    /// # Errors
    /// [`RuleError`] as Redis; the selector is then partly changed only if
    /// the caller applied earlier rules (callers work on a copy).
    pub fn apply(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if is("allkeys") || is("~*") {
            self.all_keys = true;
            self.keys.clear();
        } else if is("resetkeys") {
            self.all_keys = false;
            self.keys.clear();
        } else if is("allchannels") || is("&*") {
            self.all_channels = true;
            self.channels.clear();
        } else if is("resetchannels") {
            self.all_channels = false;
            self.channels.clear();
        } else if is("allcommands") || is("+@all") {
            self.set_all_commands(true);
        } else if is("nocommands") || is("-@all") {
            self.set_all_commands(false);
        } else if op[0] == b'~' || op[0] == b'%' {
            self.add_key_pattern(op)?;
        } else if op[0] == b'&' {
            if self.all_channels {
                return Err(RuleError::ChannelAfterAll);
            }
            let pattern = &op[1..];
            if has_spaces(pattern) {
                return Err(RuleError::Syntax);
            }
            if !self.channels.iter().any(|c| c == pattern) {
                self.channels.push(pattern.to_vec());
            }
        } else if op[0] == b'+' && op.get(1) != Some(&b'@') {
            self.allow_command(&op[1..])?;
        } else if op[0] == b'-' && op.get(1) != Some(&b'@') {
            let e = CommandTable::get()
                .lookup_full(&op[1..])
                .ok_or(RuleError::UnknownCommand)?;
            self.change(e, false);
        } else if op[0] == b'+' || op[0] == b'-' {
            let cat = category(&op[2..]).ok_or(RuleError::UnknownCommand)?;
            self.set_category(cat, op[0] == b'+');
        } else {
            return Err(RuleError::Syntax);
        }
        Ok(())
    }

    /// `~pattern`, `%R~pattern`, `%W~pattern`, `%RW~pattern`.
    fn add_key_pattern(&mut self, op: &[u8]) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::KeyAfterAll);
        }
        let (mut read, mut write) = (op[0] == b'~', op[0] == b'~');
        let mut offset = 1;
        if op[0] == b'%' {
            while offset < op.len() {
                match op[offset].to_ascii_uppercase() {
                    b'R' if !read => read = true,
                    b'W' if !write => write = true,
                    b'~' => {
                        offset += 1;
                        break;
                    }
                    _ => return Err(RuleError::Syntax),
                }
                offset += 1;
            }
            if !read && !write {
                return Err(RuleError::Syntax);
            }
        }
        let pattern = &op[offset..];
        if has_spaces(pattern) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => {
                k.read |= read;
                k.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        self.all_keys = false;
        Ok(())
    }

    /// `+cmd`, `+container|sub`, or `+cmd|firstarg` (the name after `+`).
    fn allow_command(&mut self, name: &[u8]) -> Result<(), RuleError> {
        let table = CommandTable::get();
        let Some(bar) = name.iter().rposition(|&c| c == b'|') else {
            let e = table.lookup(name).ok_or(RuleError::UnknownCommand)?;
            self.change(e, true);
            return Ok(());
        };
        let (cmd, arg) = (&name[..bar], &name[bar + 1..]);
        let e = table.lookup_full(cmd).ok_or(RuleError::UnknownCommand)?;
        if e.is_sub {
            return Err(RuleError::FirstArgOfSubcommand);
        }
        if arg.is_empty() {
            return Err(RuleError::Syntax);
        }
        if !e.subs.is_empty() {
            let sub = e.sub(arg).ok_or(RuleError::UnknownCommand)?;
            self.change(sub, true);
        } else {
            let args = self.first_args.entry(e.acl_bit).or_default();
            if !args.iter().any(|a| a.eq_ignore_ascii_case(arg)) {
                args.push(arg.to_vec());
            }
        }
        Ok(())
    }

    /// Whether this selector allows `entry` with arguments `args` (name at
    /// index 0). `keys` caches the command's key positions across the
    /// selectors of one check.
    fn check(
        &self,
        entry: &'static Entry,
        args: &Args<'_>,
        keys: &mut Option<Vec<(usize, Access)>>,
    ) -> Result<(), Denial> {
        if !self.all_commands && !entry.spec.has(Flag::NoAuth) && !self.commands.get(entry.acl_bit)
        {
            let arg = args.get(if entry.is_sub { 2 } else { 1 });
            let allowed = match (arg, self.first_args.get(&entry.acl_bit)) {
                (Some(a), Some(list)) => list.iter().any(|x| x.eq_ignore_ascii_case(a)),
                _ => false,
            };
            if !allowed {
                return Err(Denial::Command);
            }
        }
        if !self.all_keys && has_keys(entry) {
            let keys = keys.get_or_insert_with(|| {
                let mut v = Vec::new();
                key_refs(entry.spec, args, &mut v);
                v
            });
            for &(pos, access) in keys.iter() {
                let key = args.get(pos).unwrap_or_default();
                if !self.key_allowed(key, access) {
                    return Err(Denial::Key(pos));
                }
            }
        }
        Ok(())
    }

    /// True if some pattern grants `access` to `key`.
    pub fn key_allowed(&self, key: &[u8], access: Access) -> bool {
        self.all_keys
            || self.keys.iter().any(|p| {
                (!access.read || p.read)
                    && (!access.write || p.write)
                    && glob_match(&p.pattern, key)
            })
    }
}

/// True if `entry` names keys (so key patterns apply to it).
fn has_keys(entry: &Entry) -> bool {
    !matches!(entry.spec.keys, KeySpec::None) || !entry.spec.key_specs.is_empty()
}

/// Why a command was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denial {
    /// The command (or subcommand) is not allowed.
    Command,
    /// The key at this argument index is not allowed.
    Key(usize),
}

impl Denial {
    /// Redis's order of relevance: a key error beats a command error, a
    /// later key a former one.
    fn rank(self) -> (u8, usize) {
        match self {
            Denial::Command => (1, 0),
            Denial::Key(i) => (2, i),
        }
    }
}

/// `sanitize-payload` / `skip-sanitize-payload` (kept and shown only:
/// roaringd has no RESTORE).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sanitize {
    /// Neither flag was given.
    Unset,
    /// `sanitize-payload`.
    Sanitize,
    /// `skip-sanitize-payload`.
    Skip,
}

/// An ACL user.
#[derive(Debug, Clone)]
pub struct User {
    /// The name (no spaces, no NUL).
    pub name: Vec<u8>,
    /// Identity that survives changes to the user but not its deletion: a
    /// connection whose user's id is gone was authenticated as a deleted
    /// user.
    pub uid: u64,
    /// `on` (else `off`).
    pub enabled: bool,
    /// `nopass`: any password authenticates.
    pub nopass: bool,
    /// `sanitize-payload` flags.
    pub sanitize: Sanitize,
    /// SHA-256 digests of the passwords, 64 lowercase hex digits each, in
    /// the order added.
    pub passwords: Vec<String>,
    /// The root selector first, then the `(...)` selectors.
    pub selectors: Vec<Selector>,
    /// Every command on every key: checks are skipped.
    unrestricted: bool,
}

/// The SHA-256 of `password` as 64 lowercase hex digits.
pub fn hash_password(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    let mut s = String::with_capacity(64);
    for b in digest {
        s.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        s.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    s
}

/// The digest a password rule names: `>pw` / `<pw` hash the password,
/// `#digest` / `!digest` give it.
///
/// # Errors
/// `BadHash` for a given digest that is not 64 lowercase hex digits.
fn rule_digest(op: &[u8]) -> Result<String, RuleError> {
    let rest = &op[1..];
    if matches!(op[0], b'>' | b'<') {
        Ok(hash_password(rest))
    } else if rest.len() == 64 && rest.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
        Ok(String::from_utf8_lossy(rest).into_owned())
    } else {
        Err(RuleError::BadHash)
    }
}

/// Equality of two digests in time independent of where they differ.
fn digest_eq(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

impl User {
    /// A new user as `ACL SETUSER name` creates it: off, no passwords, no
    /// commands, no keys; channels per `acl-pubsub-default`
    /// (`all_channels`).
    pub fn new(name: &[u8], uid: u64, all_channels: bool) -> Self {
        let mut u = User {
            name: name.to_vec(),
            uid,
            enabled: false,
            nopass: false,
            sanitize: Sanitize::Unset,
            passwords: Vec::new(),
            selectors: vec![Selector::new(all_channels)],
            unrestricted: false,
        };
        u.seal();
        u
    }

    /// The `default` user of a fresh server: on, nopass, `~* &* +@all`.
    pub fn new_default(uid: u64) -> Self {
        let mut u = User::new(b"default", uid, true);
        for op in ["+@all", "~*", "&*", "on", "nopass"] {
            // Fixed, valid rules.
            let _ = u.apply(op.as_bytes(), true);
        }
        u.seal();
        u
    }

    /// Applies one `ACL SETUSER` rule. `all_channels` is
    /// `acl-pubsub-default` (for `reset` and new selectors). Call
    /// [`User::seal`] after the last rule.
    ///
    /// # Errors
    /// [`RuleError`]; work on a copy to keep a user unchanged on error.
    pub fn apply(&mut self, op: &[u8], all_channels: bool) -> Result<(), RuleError> {
        let is = |word: &str| op.eq_ignore_ascii_case(word.as_bytes());
        if op.is_empty() {
            return Ok(());
        } else if is("on") {
            self.enabled = true;
        } else if is("off") {
            self.enabled = false;
        } else if is("skip-sanitize-payload") {
            self.sanitize = Sanitize::Skip;
        } else if is("sanitize-payload") {
            self.sanitize = Sanitize::Sanitize;
        } else if is("nopass") {
            self.nopass = true;
            self.passwords.clear();
        } else if is("resetpass") {
            self.nopass = false;
            self.passwords.clear();
        } else if op[0] == b'>' || op[0] == b'#' {
            let h = rule_digest(op)?;
            if !self.passwords.contains(&h) {
                self.passwords.push(h);
            }
            self.nopass = false;
        } else if op[0] == b'<' || op[0] == b'!' {
            let h = rule_digest(op)?;
            let i = self
                .passwords
                .iter()
                .position(|p| *p == h)
                .ok_or(RuleError::NoSuchPassword)?;
            self.passwords.remove(i);
        } else if op[0] == b'(' && op[op.len() - 1] == b')' {
            let mut s = Selector::new(all_channels);
            let inner = String::from_utf8_lossy(&op[1..op.len() - 1]).into_owned();
            for rule in crate::config::split_words(&inner).unwrap_or_default() {
                if !rule.is_empty() {
                    s.apply(rule.as_bytes())?;
                }
            }
            self.selectors.push(s);
        } else if is("clearselectors") {
            self.selectors.truncate(1);
        } else if is("reset") {
            self.nopass = false;
            self.passwords.clear();
            let root = &mut self.selectors[0];
            root.all_keys = false;
            root.keys.clear();
            root.all_channels = all_channels;
            root.channels.clear();
            self.enabled = false;
            self.sanitize = Sanitize::Sanitize;
            self.selectors.truncate(1);
            self.selectors[0].set_all_commands(false);
        } else {
            self.selectors[0].apply(op)?;
        }
        Ok(())
    }

    /// Recomputes what checks may skip; call after changing the user.
    pub fn seal(&mut self) {
        let root = &self.selectors[0];
        self.unrestricted = root.all_keys && (root.all_commands || root.commands.is_all());
    }

    /// True if `password` authenticates this user (which must be on).
    pub fn password_ok(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let h = hash_password(password);
        // Every digest is compared, whichever matches.
        self.passwords
            .iter()
            .fold(false, |ok, p| digest_eq(p, &h) | ok)
    }

    /// Whether this user may run `entry` with `args` (name at index 0).
    ///
    /// # Errors
    /// The most relevant [`Denial`] over all selectors, as Redis picks it.
    #[inline]
    pub fn check(&self, entry: &'static Entry, args: &Args<'_>) -> Result<(), Denial> {
        if self.unrestricted {
            return Ok(());
        }
        self.check_selectors(entry, args)
    }

    fn check_selectors(&self, entry: &'static Entry, args: &Args<'_>) -> Result<(), Denial> {
        let mut keys = None;
        let mut worst = Denial::Command;
        for s in &self.selectors {
            match s.check(entry, args, &mut keys) {
                Ok(()) => return Ok(()),
                Err(d) if d.rank() > worst.rank() => worst = d,
                Err(_) => {}
            }
        }
        Err(worst)
    }
}

/// Joins `(...)` selector rules given as several arguments into one, as
/// Redis's `ACLMergeSelectorArguments` does.
///
/// # Errors
/// The index of the argument that opens an unclosed selector.
pub fn merge_selector_args(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, usize> {
    let mut out = Vec::with_capacity(args.len());
    let mut open: Option<(usize, Vec<u8>)> = None;
    for (i, &a) in args.iter().enumerate() {
        if let Some((_, sel)) = open.as_mut() {
            sel.push(b' ');
            sel.extend_from_slice(a);
            if a.last() == Some(&b')') {
                out.push(open.take().map(|(_, s)| s).unwrap_or_default());
            }
        } else if a.first() == Some(&b'(') && a.last() != Some(&b')') {
            open = Some((i, a.to_vec()));
        } else {
            out.push(a.to_vec());
        }
    }
    match open {
        Some((i, _)) => Err(i),
        None => Ok(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &[&str]) -> Result<User, (String, RuleError)> {
        let mut u = User::new(b"u", 1, false);
        for r in rules {
            u.apply(r.as_bytes(), false)
                .map_err(|e| (r.to_string(), e))?;
        }
        u.seal();
        Ok(u)
    }

    fn check(u: &User, words: &[&str]) -> Result<(), Denial> {
        let owned = crate::transaction::OwnedArgs::new(words.iter().map(|w| w.as_bytes()));
        let table = CommandTable::get();
        let mut e = table.lookup(words[0].as_bytes()).expect("known command");
        if !e.subs.is_empty() {
            e = e.sub(words[1].as_bytes()).expect("known subcommand");
        }
        u.check(e, &owned.args())
    }

    #[test]
    fn passwords_are_sha256_and_checked() {
        assert_eq!(
            hash_password(b"p1"),
            "f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a"
        );
        let u = user(&["on", ">p1", ">p2"]).unwrap();
        assert!(u.password_ok(b"p1") && u.password_ok(b"p2") && !u.password_ok(b"p3"));
        let u = user(&[">p1"]).unwrap();
        assert!(
            !u.password_ok(b"p1"),
            "a user that is off never authenticates"
        );
        let u = user(&["on", ">p1", "<p1"]).unwrap();
        assert!(u.passwords.is_empty() && !u.password_ok(b"p1"));
        let u = user(&["on", ">p1", "nopass"]).unwrap();
        assert!(u.password_ok(b"anything") && u.passwords.is_empty());
        let u = user(&["on", "nopass", ">x"]).unwrap();
        assert!(!u.nopass && u.password_ok(b"x") && !u.password_ok(b"y"));
    }

    #[test]
    fn rule_errors_are_redis_errnos() {
        let bad = |r: &str| user(&[r]).unwrap_err().1;
        assert_eq!(bad("bogus"), RuleError::Syntax);
        assert_eq!(bad("+nosuch"), RuleError::UnknownCommand);
        assert_eq!(bad("+@nosuch"), RuleError::UnknownCommand);
        assert_eq!(bad("+"), RuleError::UnknownCommand);
        assert_eq!(bad("-@"), RuleError::UnknownCommand);
        assert_eq!(bad("#abc"), RuleError::BadHash);
        assert_eq!(bad(&format!("#{}", "A".repeat(64))), RuleError::BadHash);
        assert_eq!(bad("<nopw"), RuleError::NoSuchPassword);
        assert_eq!(bad("%X~a"), RuleError::Syntax);
        assert_eq!(bad("%~x"), RuleError::Syntax);
        assert_eq!(bad("%RR~x"), RuleError::Syntax);
        assert_eq!(bad("+get|"), RuleError::Syntax);
        assert_eq!(bad("+|"), RuleError::UnknownCommand);
        assert_eq!(bad("-get|x"), RuleError::UnknownCommand);
        assert_eq!(bad("+config|nosuch"), RuleError::UnknownCommand);
        assert_eq!(bad("+config|get|x"), RuleError::FirstArgOfSubcommand);
        let e = user(&["allkeys", "~x"]).unwrap_err();
        assert_eq!(e, ("~x".into(), RuleError::KeyAfterAll));
        let e = user(&["&*", "&x"]).unwrap_err();
        assert_eq!(e, ("&x".into(), RuleError::ChannelAfterAll));
        assert_eq!(bad("(~x +nosuch)"), RuleError::UnknownCommand);
    }

    #[test]
    fn key_patterns_merge_and_reset() {
        let u = user(&["%R~a", "%W~a", "%Rw~b", "%R", "~c", "~c"]).unwrap();
        let k: Vec<_> = u.selectors[0]
            .keys
            .iter()
            .map(|k| (k.pattern.as_slice(), k.read, k.write))
            .collect();
        assert_eq!(
            k,
            [
                (&b"a"[..], true, true),
                (b"b", true, true),
                (b"", true, false),
                (b"c", true, true)
            ]
        );
        let u = user(&["~a", "allkeys"]).unwrap();
        assert!(u.selectors[0].all_keys && u.selectors[0].keys.is_empty());
        let u = user(&["~*", "resetkeys", "~x"]).unwrap();
        assert!(!u.selectors[0].all_keys);
        let u = user(&["%R~*", "~x"]).unwrap();
        assert_eq!(
            u.selectors[0].keys.len(),
            2,
            "%R~* is a pattern, not allkeys"
        );
    }

    #[test]
    fn commands_categories_and_subcommands() {
        let u = user(&["+get", "~*"]).unwrap();
        assert_eq!(check(&u, &["get", "k"]), Ok(()));
        assert_eq!(check(&u, &["set", "k", "v"]), Err(Denial::Command));
        let u = user(&["+@all", "-@string", "~*"]).unwrap();
        assert_eq!(check(&u, &["get", "k"]), Err(Denial::Command));
        assert_eq!(check(&u, &["sadd", "k", "m"]), Ok(()));
        let u = user(&["+client", "-client|kill", "~*"]).unwrap();
        assert_eq!(check(&u, &["client", "id"]), Ok(()));
        assert_eq!(
            check(&u, &["client", "kill", "id", "1"]),
            Err(Denial::Command)
        );
        let u = user(&["+config|get"]).unwrap();
        assert_eq!(check(&u, &["config", "get", "x"]), Ok(()));
        assert_eq!(
            check(&u, &["config", "set", "x", "y"]),
            Err(Denial::Command)
        );
        // AUTH-like commands (no_auth) are never refused.
        let u = user(&[]).unwrap();
        assert_eq!(check(&u, &["auth", "a", "b"]), Ok(()));
        assert_eq!(check(&u, &["ping"]), Err(Denial::Command));
    }

    #[test]
    fn first_args_allow_one_argument_of_a_denied_command() {
        let u = user(&["+select|0", "+SELECT|1"]).unwrap();
        assert_eq!(check(&u, &["select", "0"]), Ok(()));
        assert_eq!(check(&u, &["select", "1"]), Ok(()));
        assert_eq!(check(&u, &["select", "2"]), Err(Denial::Command));
        let u = user(&["+select|0", "-select"]).unwrap();
        assert_eq!(check(&u, &["select", "0"]), Err(Denial::Command));
        assert!(u.selectors[0].first_args.is_empty());
    }

    #[test]
    fn keys_use_globs_and_read_write_access() {
        let u = user(&["+@all", "~foo*", "%R~r*", "%W~w*"]).unwrap();
        assert_eq!(check(&u, &["get", "foo1"]), Ok(()));
        assert_eq!(check(&u, &["get", "bar"]), Err(Denial::Key(1)));
        assert_eq!(check(&u, &["get", "r1"]), Ok(()));
        assert_eq!(check(&u, &["set", "r1", "v"]), Err(Denial::Key(1)));
        assert_eq!(
            check(&u, &["set", "w1", "v"]),
            Ok(()),
            "SET without GET only writes"
        );
        assert_eq!(
            check(&u, &["set", "w1", "v", "GET"]),
            Err(Denial::Key(1)),
            "SET ... GET also reads"
        );
        assert_eq!(check(&u, &["get", "w1"]), Err(Denial::Key(1)));
        assert_eq!(check(&u, &["mget", "foo", "r2", "x"]), Err(Denial::Key(3)));
        // A key spec with no access flag (EXISTS) matches any pattern.
        assert_eq!(check(&u, &["exists", "w1"]), Ok(()));
        // SMOVE: the source is read and written, the destination written.
        assert_eq!(check(&u, &["smove", "foo", "w1", "m"]), Ok(()));
        assert_eq!(check(&u, &["smove", "w1", "foo", "m"]), Err(Denial::Key(1)));
        // TR.BITOP: the destination is written, the sources read.
        assert_eq!(check(&u, &["tr.bitop", "w1", "OR", "r1", "foo"]), Ok(()));
        assert_eq!(
            check(&u, &["tr.bitop", "r1", "OR", "w1"]),
            Err(Denial::Key(1)),
            "a selector reports its first refused key"
        );
        let two = user(&["+@all", "~a", "(+@all ~b)"]).unwrap();
        assert_eq!(
            check(&two, &["mget", "a", "b"]),
            Err(Denial::Key(2)),
            "of several selectors, the latest refused key is reported"
        );
        // Keyless commands are not checked against key patterns.
        assert_eq!(check(&u, &["dbsize"]), Ok(()));
        let none = user(&["+@all"]).unwrap();
        assert_eq!(check(&none, &["get", "k"]), Err(Denial::Key(1)));
    }

    #[test]
    fn selectors_add_permissions() {
        let u = user(&["+get", "~a*", "(+set ~b*)", "(%R~c* +@read)"]).unwrap();
        assert_eq!(u.selectors.len(), 3);
        assert_eq!(check(&u, &["get", "a1"]), Ok(()));
        assert_eq!(check(&u, &["set", "b1", "v"]), Ok(()));
        assert_eq!(check(&u, &["get", "c1"]), Ok(()));
        assert_eq!(check(&u, &["set", "a1", "v"]), Err(Denial::Key(1)));
        assert_eq!(check(&u, &["incr", "a1"]), Err(Denial::Command));
        let u = user(&["(+set ~b*)", "clearselectors"]).unwrap();
        assert_eq!(u.selectors.len(), 1);
    }

    #[test]
    fn reset_returns_to_a_new_user() {
        let u = user(&["on", ">x", "~*", "&*", "+@all", "(+get)", "reset"]).unwrap();
        assert!(!u.enabled && u.passwords.is_empty() && !u.nopass);
        let root = &u.selectors[0];
        assert!(!root.all_keys && !root.all_channels && !root.future);
        assert_eq!(u.sanitize, Sanitize::Sanitize);
        assert_eq!(u.selectors.len(), 1);
    }

    #[test]
    fn unrestricted_users_skip_checks_only_when_everything_is_allowed() {
        assert!(User::new_default(0).unrestricted);
        assert!(user(&["+@all", "allkeys"]).unwrap().unrestricted);
        assert!(!user(&["+@all", "-get", "allkeys"]).unwrap().unrestricted);
        assert!(
            user(&["+@all", "-get", "+get", "allkeys"])
                .unwrap()
                .unrestricted
        );
        assert!(!user(&["+@all", "~a"]).unwrap().unrestricted);
    }

    #[test]
    fn selector_arguments_merge() {
        let m = merge_selector_args(&[b"on", b"(~x", b"+get)", b"(+set)"]).unwrap();
        assert_eq!(
            m,
            [b"on".to_vec(), b"(~x +get)".to_vec(), b"(+set)".to_vec()]
        );
        assert_eq!(merge_selector_args(&[b"(~x", b"+get"]), Err(0));
        assert_eq!(merge_selector_args(&[b"on", b"(+set"]), Err(1));
    }
}
