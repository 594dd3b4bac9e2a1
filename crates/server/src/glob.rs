//! Redis's glob matcher (`stringmatchlen`): `*`, `?`, `[abc]`, `[^a-z]`,
//! `\x` escapes. Used by CONFIG GET, and available to KEYS/SCAN MATCH.

/// True if `text` matches `pattern`. `nocase` folds ASCII case.
pub fn glob_match(pattern: &[u8], text: &[u8], nocase: bool) -> bool {
    match_from(pattern, text, nocase, 0)
}

fn eq(a: u8, b: u8, nocase: bool) -> bool {
    if nocase {
        a.eq_ignore_ascii_case(&b)
    } else {
        a == b
    }
}

fn match_from(mut p: &[u8], mut s: &[u8], nocase: bool, depth: u32) -> bool {
    // Redis caps recursion to avoid stack exhaustion on hostile patterns.
    if depth > 1000 {
        return false;
    }
    while let Some(&c) = p.first() {
        match c {
            b'*' => {
                while p.len() > 1 && p[1] == b'*' {
                    p = &p[1..];
                }
                if p.len() == 1 {
                    return true;
                }
                for i in 0..=s.len() {
                    if match_from(&p[1..], &s[i..], nocase, depth + 1) {
                        return true;
                    }
                }
                return false;
            }
            b'?' => {
                if s.is_empty() {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
            b'[' => {
                if s.is_empty() {
                    return false;
                }
                let mut i = 1;
                let not = p.get(i) == Some(&b'^');
                if not {
                    i += 1;
                }
                let mut matched = false;
                loop {
                    match p.get(i) {
                        None => {
                            // Unterminated class: Redis treats the end as the close.
                            i -= 1;
                            break;
                        }
                        Some(b'\\') if i + 1 < p.len() => {
                            i += 1;
                            if eq(p[i], s[0], nocase) {
                                matched = true;
                            }
                        }
                        Some(b']') => break,
                        Some(_) if i + 2 < p.len() && p[i + 1] == b'-' => {
                            let (mut lo, mut hi) = (p[i], p[i + 2]);
                            if lo > hi {
                                std::mem::swap(&mut lo, &mut hi);
                            }
                            let mut ch = s[0];
                            if nocase {
                                lo = lo.to_ascii_lowercase();
                                hi = hi.to_ascii_lowercase();
                                ch = ch.to_ascii_lowercase();
                            }
                            if ch >= lo && ch <= hi {
                                matched = true;
                            }
                            i += 2;
                        }
                        Some(&x) => {
                            if eq(x, s[0], nocase) {
                                matched = true;
                            }
                        }
                    }
                    i += 1;
                }
                if matched == not {
                    return false;
                }
                s = &s[1..];
                p = &p[(i + 1).min(p.len())..];
            }
            b'\\' if p.len() >= 2 => {
                if s.is_empty() || !eq(p[1], s[0], nocase) {
                    return false;
                }
                s = &s[1..];
                p = &p[2..];
            }
            _ => {
                if s.is_empty() || !eq(c, s[0], nocase) {
                    return false;
                }
                s = &s[1..];
                p = &p[1..];
            }
        }
    }
    s.is_empty()
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs_match_like_redis() {
        assert!(glob_match(b"*", b"", false));
        assert!(glob_match(b"h?llo", b"hello", false));
        assert!(glob_match(b"h*llo", b"heeeello", false));
        assert!(glob_match(b"h[ae]llo", b"hallo", false));
        assert!(!glob_match(b"h[^e]llo", b"hello", false));
        assert!(glob_match(b"h[a-b]llo", b"hbllo", false));
        assert!(glob_match(b"h\\*", b"h*", false));
        assert!(glob_match(b"MAX*", b"maxclients", true));
        assert!(!glob_match(b"a*b", b"ac", false));
    }
}
