//! Splitting a command line into arguments the way redis-cli does
//! (`sdssplitargs`): whitespace separates arguments; double quotes allow the
//! escapes `\n \r \t \b \a \\ \"` and `\xHH`; single quotes allow only `\'`;
//! a closing quote must be followed by whitespace or the end.

use std::fmt;

/// Why a command line could not be split.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SplitError {
    /// A quote was opened and never closed.
    UnbalancedQuotes,
    /// A closing quote is followed by something other than whitespace.
    QuoteNotFollowedBySpace,
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::UnbalancedQuotes => f.write_str("unbalanced quotes in command line"),
            SplitError::QuoteNotFollowedBySpace => {
                f.write_str("closing quote must be followed by a space or nothing")
            }
        }
    }
}

impl std::error::Error for SplitError {}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t' | 0x0b | 0x0c)
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Splits `line` into arguments (bytes, since `\xHH` may produce any byte).
///
/// # Errors
/// [`SplitError`] for unbalanced quotes or a closing quote glued to more
/// text, as redis-cli reports "Invalid argument(s)".
pub fn split_args(line: &str) -> Result<Vec<Vec<u8>>, SplitError> {
    let s = line.as_bytes();
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < s.len() && is_space(s[i]) {
            i += 1;
        }
        if i == s.len() {
            return Ok(args);
        }
        let mut cur = Vec::new();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                let c = *s.get(i).ok_or(SplitError::UnbalancedQuotes)?;
                match c {
                    b'\\'
                        if s.get(i + 1) == Some(&b'x')
                            && s.get(i + 2).and_then(|&b| hex(b)).is_some()
                            && s.get(i + 3).and_then(|&b| hex(b)).is_some() =>
                    {
                        cur.push(hex(s[i + 2]).unwrap_or(0) * 16 + hex(s[i + 3]).unwrap_or(0));
                        i += 3;
                    }
                    b'\\' if i + 1 < s.len() => {
                        i += 1;
                        cur.push(match s[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 0x08,
                            b'a' => 0x07,
                            other => other,
                        });
                    }
                    b'"' => {
                        if s.get(i + 1).is_some_and(|&b| !is_space(b)) {
                            return Err(SplitError::QuoteNotFollowedBySpace);
                        }
                        i += 1;
                        break;
                    }
                    other => cur.push(other),
                }
            } else if in_single {
                let c = *s.get(i).ok_or(SplitError::UnbalancedQuotes)?;
                match c {
                    b'\\' if s.get(i + 1) == Some(&b'\'') => {
                        cur.push(b'\'');
                        i += 1;
                    }
                    b'\'' => {
                        if s.get(i + 1).is_some_and(|&b| !is_space(b)) {
                            return Err(SplitError::QuoteNotFollowedBySpace);
                        }
                        i += 1;
                        break;
                    }
                    other => cur.push(other),
                }
            } else {
                match s.get(i) {
                    None => break,
                    Some(&c) if is_space(c) => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(&c) => cur.push(c),
                }
            }
            i += 1;
        }
        args.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &str) -> Vec<String> {
        split_args(line)
            .unwrap()
            .into_iter()
            .map(|a| String::from_utf8(a).unwrap())
            .collect()
    }

    #[test]
    fn split_plain_words_on_any_whitespace() {
        assert_eq!(
            split("  TR.GETBIT\tfoo-__RAND__  1 "),
            ["TR.GETBIT", "foo-__RAND__", "1"]
        );
        assert!(split("   ").is_empty());
    }

    #[test]
    fn split_double_quotes_with_escapes() {
        assert_eq!(split(r#"SET "a b" "x\ty\"z""#), ["SET", "a b", "x\ty\"z"]);
        // An invalid \x escape drops the backslash, as sdssplitargs does.
        assert_eq!(
            split_args(r#""\x41\x7a\xzz""#).unwrap(),
            [b"Azxzz".to_vec()]
        );
        assert_eq!(split(r#"SET k """#), ["SET", "k", ""]);
    }

    #[test]
    fn split_single_quotes_keep_backslashes() {
        assert_eq!(split(r"SET 'a\nb' 'it\'s'"), ["SET", r"a\nb", "it's"]);
    }

    #[test]
    fn split_quote_inside_word_starts_quoted_part() {
        assert_eq!(split(r#"foo"bar baz""#), ["foobar baz"]);
    }

    #[test]
    fn split_bad_quotes_are_errors() {
        assert_eq!(split_args(r#"SET "abc"#), Err(SplitError::UnbalancedQuotes));
        assert_eq!(split_args("SET 'abc"), Err(SplitError::UnbalancedQuotes));
        assert_eq!(
            split_args(r#"SET "a"b"#),
            Err(SplitError::QuoteNotFollowedBySpace)
        );
        assert_eq!(
            split_args("SET 'a'b"),
            Err(SplitError::QuoteNotFollowedBySpace)
        );
    }
}
