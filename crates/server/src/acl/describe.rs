//! Users written back as rules: the `ACL LIST` / `ACL SAVE` line and the
//! `ACL GETUSER` reply, in Redis 7.0's words.
//!
//! A selector's commands are described as Redis 7.0 does it: `+@all` or
//! `-@all` (by whether future commands are allowed), then the categories
//! that best fit the allowed set, then the single commands (and first
//! arguments) still needed, in command-table order. Redis lists those
//! single commands in its hash table's order, which changes from process
//! to process; the set of rules is what matches.

use crate::acl::user::{Sanitize, Selector, User};
use crate::command_table::{AclCat, CommandTable, Entry};
use crate::reply::Reply;

/// The command rules of `sel`, e.g. `+@all -@dangerous`, `-@all +get`.
/// Applied to a new selector they give exactly its command set.
pub fn command_rules(sel: &Selector) -> Vec<u8> {
    let mut rules: Vec<Vec<u8>> = Vec::new();
    let additive = !sel.future;
    let mut fake = Selector::new(false);
    fake.set_all_commands(!additive);
    rules.push(if additive {
        b"-@all".to_vec()
    } else {
        b"+@all".to_vec()
    });

    // Categories, best fit first, each applied once: a category is taken
    // while it has more commands in common with the selector than not.
    let mut temp = sel.commands.clone();
    let mut applied = [false; AclCat::ALL.len()];
    loop {
        let mut best = None;
        let (mut min_diff, mut max_same) = (usize::MAX, 0);
        for (j, &cat) in AclCat::ALL.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (on, off) = temp.count_category(cat);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < min_diff || (diff == min_diff && same > max_same)) {
                best = Some(j);
                min_diff = diff;
                max_same = same;
            }
        }
        let Some(j) = best else { break };
        let cat = AclCat::ALL[j];
        fake.set_category(cat, additive);
        temp.set_category(cat, !additive);
        let mut op = if additive {
            b"+".to_vec()
        } else {
            b"-".to_vec()
        };
        op.extend_from_slice(cat.name().as_bytes());
        rules.push(op);
        applied[j] = true;
    }

    for e in CommandTable::get().entries() {
        single_commands(e, sel, &mut fake, &mut rules);
    }
    debug_assert_eq!(fake.commands, sel.commands, "rules must rebuild the set");
    rules.join(&b' ')
}

/// The `+cmd` / `-cmd` / `+cmd|arg` rules that make `fake` agree with
/// `sel` on `e` and its subcommands.
fn single_commands(
    e: &'static Entry,
    sel: &Selector,
    fake: &mut Selector,
    rules: &mut Vec<Vec<u8>>,
) {
    let allowed = sel.commands.get(e.acl_bit);
    if allowed != fake.commands.get(e.acl_bit) {
        let mut op = if allowed {
            b"+".to_vec()
        } else {
            b"-".to_vec()
        };
        op.extend_from_slice(e.full_name.as_bytes());
        rules.push(op);
        fake.change(e, allowed);
    }
    for s in &e.subs {
        single_commands(s, sel, fake, rules);
    }
    if !allowed {
        for arg in sel.first_args.get(&e.acl_bit).into_iter().flatten() {
            let mut op = b"+".to_vec();
            op.extend_from_slice(e.full_name.as_bytes());
            op.push(b'|');
            op.extend_from_slice(arg);
            rules.push(op);
        }
    }
}

/// `~*`, or the key patterns (`~a %R~b %W~c`) joined by spaces.
fn key_patterns(sel: &Selector) -> Vec<Vec<u8>> {
    if sel.all_keys {
        return vec![b"~*".to_vec()];
    }
    sel.keys
        .iter()
        .map(|k| {
            let mut s = match (k.read, k.write) {
                (true, true) => b"~".to_vec(),
                (true, false) => b"%R~".to_vec(),
                _ => b"%W~".to_vec(),
            };
            s.extend_from_slice(&k.pattern);
            s
        })
        .collect()
}

/// `&*`, or the channel patterns (`&a &b`).
fn channel_patterns(sel: &Selector) -> Vec<Vec<u8>> {
    if sel.all_channels {
        return vec![b"&*".to_vec()];
    }
    sel.channels
        .iter()
        .map(|c| {
            let mut s = b"&".to_vec();
            s.extend_from_slice(c);
            s
        })
        .collect()
}

/// One selector as rules: keys, channels (`resetchannels` first unless
/// all are allowed), commands.
fn describe_selector(sel: &Selector) -> Vec<u8> {
    let mut out = Vec::new();
    for k in key_patterns(sel) {
        out.extend_from_slice(&k);
        out.push(b' ');
    }
    if !sel.all_channels {
        out.extend_from_slice(b"resetchannels ");
    }
    for c in channel_patterns(sel) {
        out.extend_from_slice(&c);
        out.push(b' ');
    }
    out.extend_from_slice(&command_rules(sel));
    out
}

/// The flags `ACL GETUSER` and `ACL LIST` show, in Redis's order.
fn flags(u: &User) -> Vec<&'static str> {
    let mut f = vec![if u.enabled { "on" } else { "off" }];
    if u.nopass {
        f.push("nopass");
    }
    match u.sanitize {
        Sanitize::Skip => f.push("skip-sanitize-payload"),
        Sanitize::Sanitize => f.push("sanitize-payload"),
        Sanitize::Unset => {}
    }
    f
}

/// The user as `ACL SETUSER` rules, without `user <name> `: flags,
/// password hashes, the root selector, then each `(selector)`.
pub fn describe_user(u: &User) -> Vec<u8> {
    let mut out = Vec::new();
    for f in flags(u) {
        out.extend_from_slice(f.as_bytes());
        out.push(b' ');
    }
    for p in &u.passwords {
        out.push(b'#');
        out.extend_from_slice(p.as_bytes());
        out.push(b' ');
    }
    out.extend_from_slice(&describe_selector(&u.selectors[0]));
    for s in &u.selectors[1..] {
        out.extend_from_slice(b" (");
        out.extend_from_slice(&describe_selector(s));
        out.push(b')');
    }
    out
}

/// The `ACL LIST` line of `u`: `user <name> <rules>`.
pub fn list_line(u: &User) -> Vec<u8> {
    let mut out = b"user ".to_vec();
    out.extend_from_slice(&u.name);
    out.push(b' ');
    out.extend_from_slice(&describe_user(u));
    out
}

/// `commands`, `keys` and `channels` of one selector, as `ACL GETUSER`
/// pairs.
fn selector_fields(sel: &Selector) -> Vec<(Reply, Reply)> {
    vec![
        (Reply::Static(b"commands"), Reply::Bulk(command_rules(sel))),
        (
            Reply::Static(b"keys"),
            Reply::Bulk(key_patterns(sel).join(&b' ')),
        ),
        (
            Reply::Static(b"channels"),
            Reply::Bulk(channel_patterns(sel).join(&b' ')),
        ),
    ]
}

/// The `ACL GETUSER` reply: a map of flags (a set), passwords, the root
/// selector's commands / keys / channels, and the other selectors.
pub fn getuser_reply(u: &User) -> Reply {
    let mut m = vec![
        (
            Reply::Static(b"flags"),
            Reply::Set(
                flags(u)
                    .into_iter()
                    .map(|f| Reply::Static(f.as_bytes()))
                    .collect(),
            ),
        ),
        (
            Reply::Static(b"passwords"),
            Reply::Array(
                u.passwords
                    .iter()
                    .map(|p| Reply::Bulk(p.clone().into_bytes()))
                    .collect(),
            ),
        ),
    ];
    m.extend(selector_fields(&u.selectors[0]));
    m.push((
        Reply::Static(b"selectors"),
        Reply::Array(
            u.selectors[1..]
                .iter()
                .map(|s| Reply::Map(selector_fields(s)))
                .collect(),
        ),
    ));
    Reply::Map(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(rules: &str) -> User {
        let mut u = User::new(b"u", 1, false);
        let words: Vec<&[u8]> = rules.split(' ').map(str::as_bytes).collect();
        for r in crate::acl::user::merge_selector_args(&words).unwrap() {
            u.apply(&r, false).unwrap();
        }
        u.seal();
        u
    }

    fn rules(r: &str) -> String {
        String::from_utf8(command_rules(&user(r).selectors[0])).unwrap()
    }

    #[test]
    fn command_rules_match_redis() {
        assert_eq!(rules(""), "-@all");
        assert_eq!(rules("+@all"), "+@all");
        assert_eq!(rules("allcommands -get +get"), "+@all");
        assert_eq!(rules("+@all -@all +get"), "-@all +get");
        assert_eq!(rules("-@all +config|get"), "-@all +config|get");
        assert_eq!(rules("+@all -config|set"), "+@all -config|set");
        assert_eq!(rules("-@all +client"), "-@all +client");
        assert_eq!(
            rules("-@all +select|0 +select|1"),
            "-@all +select|0 +select|1"
        );
        assert_eq!(rules("+@read -get"), "-@all +@read -get");
        assert_eq!(rules("+@all -@dangerous"), "+@all -@dangerous");
        assert_eq!(rules("-@all +@string -get"), "-@all +@string -get");
        assert_eq!(
            rules("+@all -client +client|id"),
            "+@all -client +client|id"
        );
        assert_eq!(rules("-@all +@bitmap"), "-@all +@bitmap");
        assert_eq!(rules("+select|0 -select"), "-@all");
        assert_eq!(rules("+select|0 +select"), "-@all +select");
        assert_eq!(
            rules("+multi +exec +discard +watch +unwatch"),
            "-@all +@transaction"
        );
    }

    #[test]
    fn command_rules_rebuild_the_command_set() {
        for r in [
            "+@read -get +set",
            "+@all -@write +del",
            "-@all +@hash +@set -hset +client|id",
            "+@write -@bitmap +tr.setbit",
            "+@connection -client|kill +@fast",
        ] {
            let u = user(r);
            let text = String::from_utf8(command_rules(&u.selectors[0])).unwrap();
            let again = user(&text);
            assert_eq!(
                again.selectors[0].commands, u.selectors[0].commands,
                "{r} -> {text}"
            );
        }
    }

    #[test]
    fn list_lines_match_redis() {
        let line = |r: &str| String::from_utf8(list_line(&user(r))).unwrap();
        assert_eq!(line(""), "user u off resetchannels -@all");
        assert_eq!(
            line("on >p1 ~foo* +get"),
            "user u on #f64551fcd6f07823cb87971cfb91446425da18286b3ab1ef935e0cbd7a69f68a ~foo* resetchannels -@all +get"
        );
        assert_eq!(
            line("on ~a* %W~w* &ch +get (+set ~s*)"),
            "user u on ~a* %W~w* resetchannels &ch -@all +get (~s* resetchannels -@all +set)"
        );
        assert_eq!(
            line("reset"),
            "user u off sanitize-payload resetchannels -@all"
        );
        assert_eq!(line("& ~"), "user u off ~ resetchannels & -@all");
        assert_eq!(
            String::from_utf8(list_line(&User::new_default(0))).unwrap(),
            "user default on nopass ~* &* +@all"
        );
    }
}
