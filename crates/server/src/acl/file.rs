//! The ACL file (`aclfile`): `ACL LOAD`, `ACL SAVE`, and the users the
//! server starts with (`user` directives of the config file, or the ACL
//! file), with Redis 7.0's rules and error texts.
//!
//! The file holds one `user <name> <rules...>` line per user, the words
//! separated by single spaces (no quoting, no comments); blank lines are
//! skipped. A file with any error loads nothing.

use std::collections::BTreeMap;

use crate::acl::describe::list_line;
use crate::acl::user::{has_spaces, merge_selector_args, RuleError, User};
use crate::acl::Acl;
use crate::config::Config;

/// What `ACL LOAD` says when a file has errors, after the errors.
const NOTHING_LOADED: &str =
    "WARNING: ACL errors detected, no change to the previously active ACL rules was performed";

/// The users of ACL file text `text` (named `filename` in errors), each
/// with a new id from `acl`.
///
/// # Errors
/// Every problem found, in one line, as Redis reports it.
pub fn parse(acl: &Acl, text: &[u8], filename: &str) -> Result<BTreeMap<Vec<u8>, User>, String> {
    let all_channels = acl.pubsub_all();
    let mut users = BTreeMap::new();
    let mut errors = String::new();
    for (i, raw) in text.split(|&c| c == b'\n').enumerate() {
        let line = trim(raw, b" \t\r\n");
        let n = i + 1;
        if line.is_empty() {
            continue;
        }
        let words: Vec<&[u8]> = line.split(|&c| c == b' ').collect();
        if words[0] != b"user" || words.len() < 2 {
            errors += &format!(
                "{filename}:{n} should start with user keyword followed by the username. "
            );
            continue;
        }
        let name = words[1];
        if has_spaces(name) {
            errors += &format!(
                "'{filename}:{n}: username '{}' contains invalid characters. ",
                String::from_utf8_lossy(name)
            );
            continue;
        }
        if users.contains_key(name) {
            errors += &format!(
                "WARNING: Duplicate user '{}' found on line {n}. ",
                String::from_utf8_lossy(name)
            );
            continue;
        }
        let mut u = User::new(name, acl.new_uid(), all_channels);
        let rules = match merge_selector_args(&words[2..]) {
            Ok(r) => r,
            Err(_) => {
                errors += &format!("{filename}:{n}: Unmatched parenthesis in selector definition.");
                continue;
            }
        };
        let mut reported = false;
        for rule in &rules {
            let rule = trim(rule, b"\t\r\n");
            match u.apply(rule, all_channels) {
                Ok(()) => {}
                Err(RuleError::UnknownCommand) => {
                    errors += &format!(
                        "{filename}:{n}: Error in applying operation '{}': {}. ",
                        String::from_utf8_lossy(rule),
                        RuleError::UnknownCommand.message()
                    );
                }
                // Only the first other error of a line: it may explain the rest.
                Err(e) if !reported => {
                    errors += &format!("{filename}:{n}: {}. ", e.message());
                    reported = true;
                }
                Err(_) => {}
            }
        }
        u.seal();
        users.insert(name.to_vec(), u);
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        Err(errors + NOTHING_LOADED)
    }
}

fn trim<'a>(mut s: &'a [u8], set: &[u8]) -> &'a [u8] {
    while let [first, rest @ ..] = s {
        if !set.contains(first) {
            break;
        }
        s = rest;
    }
    while let [rest @ .., last] = s {
        if !set.contains(last) {
            break;
        }
        s = rest;
    }
    s
}

/// `strerror`-like text of an I/O error (without Rust's `(os error N)`).
fn io_text(e: &std::io::Error) -> String {
    let t = e.to_string();
    match t.find(" (os error") {
        Some(i) => t[..i].to_string(),
        None => t,
    }
}

/// `ACL LOAD`: replaces every user by the file's. Returns the ids of the
/// users replaced (their connections must close).
///
/// # Errors
/// The file cannot be read or has errors; nothing changed.
pub fn load(acl: &Acl, path: &str) -> Result<Vec<u64>, String> {
    let text = std::fs::read(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{path}': {}", io_text(&e)))?;
    let users = parse(acl, &text, path)?;
    Ok(acl.replace_all(users))
}

/// The ACL file text of every user (ACL LIST's lines, one per line).
pub fn render(acl: &Acl) -> Vec<u8> {
    let mut out = Vec::new();
    for u in acl.users() {
        out.extend_from_slice(&list_line(&u));
        out.push(b'\n');
    }
    out
}

/// `ACL SAVE`: writes every user to `path` (a temporary file renamed over
/// it, so a reader never sees half a file).
///
/// # Errors
/// The I/O error (also logged).
pub fn save(acl: &Acl, path: &str) -> std::io::Result<()> {
    let tmp = format!(
        "{path}.tmp-{}-{}",
        std::process::id(),
        crate::state::now_ms()
    );
    let r = std::fs::write(&tmp, render(acl)).and_then(|()| std::fs::rename(&tmp, path));
    if let Err(e) = &r {
        crate::warning!("Saving the ACL file {path}: {e}");
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// Sets up the users the server starts with: the config file's `user`
/// directives, or the `aclfile` (not both).
///
/// # Errors
/// Why the server must not start, as Redis logs it.
pub fn load_at_startup(acl: &Acl, config: &Config) -> Result<(), String> {
    if !config.aclfile.is_empty() && !config.users.is_empty() {
        return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
    }
    let mut seen = std::collections::HashSet::new();
    for words in &config.users {
        let Some((name, rest)) = words.split_first() else {
            continue;
        };
        let name = name.as_bytes();
        if !seen.insert(name) {
            return Err(format!(
                "Error in user declaration '{}': Duplicate user found. A user can only be defined once in config files",
                words[0]
            ));
        }
        if has_spaces(name) {
            return Err("Spaces not allowed in ACL usernames".into());
        }
        let raw: Vec<&[u8]> = rest.iter().map(|w| w.as_bytes()).collect();
        let rules = merge_selector_args(&raw).map_err(|i| {
            format!(
                "Error in user declaration '{}': Unmatched parenthesis in selector definition",
                rest[i]
            )
        })?;
        // `default` exists already: it starts again from nothing.
        let mut all = Vec::new();
        if name == b"default" {
            all.push(b"reset".to_vec());
        }
        all.extend(rules);
        acl.set_user(name, &all).map_err(|e| {
            format!(
                "Error loading ACL rule '{}' for the user named '{}': {}",
                String::from_utf8_lossy(&e.rule),
                words[0],
                e.error.message()
            )
        })?;
    }
    if !config.aclfile.is_empty() {
        load(acl, &config.aclfile)
            .map_err(|e| format!("Aborting Redis startup because of ACL errors: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_loads_and_renders_back() {
        let acl = Acl::new();
        let users = parse(
            &acl,
            b"user default on nopass ~* &* +@all\n\n  user bob on >pw ~k* +get \r\n\t\nuser alice on (+get ~a*) (+set ~b*)",
            "f",
        )
        .unwrap();
        acl.replace_all(users);
        assert_eq!(
            String::from_utf8(render(&acl)).unwrap(),
            "user alice on resetchannels -@all (~a* resetchannels -@all +get) (~b* resetchannels -@all +set)\n\
             user bob on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~k* resetchannels -@all +get\n\
             user default on nopass ~* &* +@all\n"
        );
    }

    #[test]
    fn file_errors_are_reported_like_redis() {
        let acl = Acl::new();
        let err = parse(
            &acl,
            b"user default on nopass ~* &* +@all\nuser bob on >pw ~k* +get +nosuch\n# comment\nuser bob off\nfoo bar\nuser \"a b\"\n\nuser x (+get\nuser y %Z~a\n",
            "/f.acl",
        )
        .unwrap_err();
        assert_eq!(
            err,
            "/f.acl:2: Error in applying operation '+nosuch': Unknown command or category name in ACL. \
             /f.acl:3 should start with user keyword followed by the username. \
             WARNING: Duplicate user 'bob' found on line 4. \
             /f.acl:5 should start with user keyword followed by the username. \
             /f.acl:6: Syntax error. \
             /f.acl:8: Unmatched parenthesis in selector definition.\
             /f.acl:9: Syntax error. \
             WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
        let err = parse(&acl, b"user   bob  on", "f").unwrap_err();
        assert!(err.starts_with("f:1: Syntax error. "), "{err}");
        let err = parse(&acl, b"USER x\nuser\n", "f").unwrap_err();
        assert_eq!(
            err,
            "f:1 should start with user keyword followed by the username. \
             f:2 should start with user keyword followed by the username. \
             WARNING: ACL errors detected, no change to the previously active ACL rules was performed"
        );
    }

    #[test]
    fn a_missing_default_user_is_a_fresh_one() {
        let acl = Acl::new();
        acl.set_default_password(Some(b"pw"));
        let users = parse(&acl, b"user bob on nopass", "f").unwrap();
        acl.replace_all(users);
        let d = acl.default_user();
        assert!(d.nopass && d.enabled && d.uid == 0);
    }
}
