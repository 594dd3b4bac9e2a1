//! Redis-compatible glob matching (KEYS, SCAN MATCH, SSCAN/HSCAN MATCH):
//! `*`, `?`, `[abc]`, `[^a]`, `[a-z]`, `\` escapes, with Redis's handling of
//! unterminated brackets and reversed ranges. Bytes, not characters; range
//! bounds compare as signed bytes, as Redis's `char` does.

/// True when `s` matches `pattern` (Redis `stringmatchlen`, case-sensitive).
/// The pattern `*` alone matches everything, the empty string included, as
/// every Redis caller skips matching for it.
#[must_use]
pub fn glob_match(pattern: &[u8], s: &[u8]) -> bool {
    glob_match_with(pattern, s, false)
}

/// [`glob_match`] ignoring ASCII case (Redis `stringmatchlen(..., nocase=1)`,
/// used by CONFIG GET and friends).
#[must_use]
pub fn glob_match_nocase(pattern: &[u8], s: &[u8]) -> bool {
    glob_match_with(pattern, s, true)
}

fn glob_match_with(pattern: &[u8], s: &[u8], nocase: bool) -> bool {
    if pattern == b"*" {
        return true;
    }
    let mut skip_longer = false;
    match_impl(pattern, s, nocase, &mut skip_longer, 0)
}

/// Nested `*`s a match follows at most (Redis's `stringmatchlen` cap): each
/// `*` recurses once, so a pattern of 200,000 `*a` overflowed the stack
/// and aborted the process. Past it the pattern matches nothing, as in
/// Redis (1,000 `*` match, 1,001 do not).
const MAX_NESTING: u32 = 1000;

/// The literal bytes every match must start with (up to the first special
/// character), used to narrow a key scan.
#[must_use]
pub fn literal_prefix(pattern: &[u8]) -> &[u8] {
    let end = pattern
        .iter()
        .position(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
        .unwrap_or(pattern.len());
    &pattern[..end]
}

fn match_impl(pat: &[u8], s: &[u8], nocase: bool, skip_longer: &mut bool, nesting: u32) -> bool {
    if nesting > MAX_NESTING {
        return false;
    }
    let fold = |c: u8| if nocase { c.to_ascii_lowercase() } else { c };
    // `at` emulates reading a NUL-terminated C string past the end.
    let at = |i: usize| -> u8 { pat.get(i).copied().unwrap_or(0) };
    let mut p = 0usize;
    let mut si = 0usize;
    while p < pat.len() && si < s.len() {
        match pat[p] {
            b'*' => {
                while p + 1 < pat.len() && pat[p + 1] == b'*' {
                    p += 1;
                }
                if p + 1 == pat.len() {
                    return true;
                }
                while si < s.len() {
                    if match_impl(&pat[p + 1..], &s[si..], nocase, skip_longer, nesting + 1) {
                        return true;
                    }
                    if *skip_longer {
                        return false;
                    }
                    si += 1;
                }
                *skip_longer = true;
                return false;
            }
            b'?' => si += 1,
            b'[' => {
                p += 1;
                let not = at(p) == b'^';
                if not {
                    p += 1;
                }
                let c = s[si];
                let mut matched = false;
                loop {
                    let remaining = pat.len().saturating_sub(p);
                    if at(p) == b'\\' && remaining >= 2 {
                        p += 1;
                        if at(p) == c {
                            matched = true;
                        }
                    } else if at(p) == b']' && remaining > 0 {
                        break;
                    } else if remaining == 0 {
                        // Unterminated: step back so the outer advance ends it.
                        p -= 1;
                        break;
                    } else if remaining >= 3 && at(p + 1) == b'-' {
                        let mut start = at(p) as i8;
                        let mut end = at(p + 2) as i8;
                        if start > end {
                            std::mem::swap(&mut start, &mut end);
                        }
                        if nocase {
                            start = fold(start as u8) as i8;
                            end = fold(end as u8) as i8;
                        }
                        p += 2;
                        let ci = fold(c) as i8;
                        if ci >= start && ci <= end {
                            matched = true;
                        }
                    } else if fold(at(p)) == fold(c) {
                        matched = true;
                    }
                    p += 1;
                }
                if not {
                    matched = !matched;
                }
                if !matched {
                    return false;
                }
                si += 1;
            }
            b'\\' => {
                if pat.len() - p >= 2 {
                    p += 1;
                }
                if fold(pat[p]) != fold(s[si]) {
                    return false;
                }
                si += 1;
            }
            ch => {
                if fold(ch) != fold(s[si]) {
                    return false;
                }
                si += 1;
            }
        }
        p += 1;
        if si == s.len() {
            while p < pat.len() && pat[p] == b'*' {
                p += 1;
            }
            break;
        }
    }
    p >= pat.len() && si == s.len()
}

#[cfg(test)]
mod tests {
    use super::glob_match as m;
    use super::literal_prefix;

    #[test]
    fn nesting_is_capped_as_in_redis() {
        let key = vec![b'a'; 3000];
        assert!(m(&b"*a".repeat(1000), &key));
        assert!(!m(&b"*a".repeat(1001), &key));
        // Deep enough to overflow the stack without the cap.
        assert!(!m(&b"*a".repeat(200_000), &key));
        assert!(!m(&[b"*a".repeat(30_000), b"*b".to_vec()].concat(), &key));
    }

    #[test]
    fn glob_basics() {
        assert!(m(b"*", b""));
        assert!(m(b"*", b"abc"));
        assert!(m(b"a*", b"abc"));
        assert!(!m(b"a*", b"bac"));
        assert!(m(b"*c", b"abc"));
        assert!(m(b"a?c", b"abc"));
        assert!(!m(b"a?c", b"ac"));
        assert!(m(b"h[ae]llo", b"hello"));
        assert!(!m(b"h[ae]llo", b"hillo"));
        assert!(m(b"h[^e]llo", b"hallo"));
        assert!(!m(b"h[^e]llo", b"hello"));
        assert!(m(b"h[a-b]llo", b"hbllo"));
        assert!(m(b"h[b-a]llo", b"hallo"));
        assert!(m(b"h\\*llo", b"h*llo"));
        assert!(!m(b"h\\*llo", b"hallo"));
        assert!(m(b"a**b", b"axxb"));
        assert!(m(b"abc*", b"abc"));
        // Redis's matcher needs at least one byte of input for `**`.
        assert!(!m(b"**", b""));
        assert!(!m(b"", b"a"));
        assert!(m(b"", b""));
        assert!(m(b"[\\]]", b"]"));
    }

    #[test]
    fn glob_unterminated_bracket_matches_like_redis() {
        // Redis: "[a" matches "a" (the bracket runs to the end).
        assert!(m(b"[a", b"a"));
        assert!(!m(b"[a", b"b"));
        assert!(!m(b"x[", b"x"));
    }

    #[test]
    fn glob_nocase_folds_ascii() {
        use super::glob_match_nocase as n;
        assert!(n(b"MAX*", b"maxmemory"));
        assert!(n(b"h[A-C]llo", b"hbllo"));
        assert!(n(b"h[a-c]llo", b"HBLLO"));
        assert!(!m(b"MAX*", b"maxmemory"));
    }

    #[test]
    fn glob_literal_prefix() {
        assert_eq!(literal_prefix(b"user:*"), b"user:");
        assert_eq!(literal_prefix(b"a\\*"), b"a");
        assert_eq!(literal_prefix(b"plain"), b"plain");
    }
}
