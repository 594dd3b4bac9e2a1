//! `CommandError`: every error a command can reply with, each variant owning
//! its exact Redis reply text (see `Display`). User errors become `-...`
//! replies and the connection stays open.

use std::borrow::Cow;
use std::fmt;

use roaringd_resp::ArgError;

/// An error reply. `Display` writes the full text without the leading `-`.
#[derive(Debug, Clone, PartialEq)]
pub enum CommandError {
    /// `WRONGTYPE Operation against a key holding the wrong kind of value`
    WrongType,
    /// `ERR syntax error`
    Syntax,
    /// `ERR value is not an integer or out of range`
    NotInteger,
    /// `ERR value is not a valid float`
    NotFloat,
    /// `ERR increment or decrement would overflow`
    Overflow,
    /// `ERR no such key`
    NoSuchKey,
    /// `ERR wrong number of arguments for '<name>' command`; `name` is the
    /// lowercase full name (`get`, `client|kill`).
    Arity(Cow<'static, str>),
    /// `ERR unknown command '<name>', with args beginning with: '<a>' '<b>' `
    /// (the whole text, as bytes: arguments are echoed verbatim; built by
    /// [`CommandError::unknown_command`]).
    UnknownCommand(Vec<u8>),
    /// `ERR unknown subcommand '<sub>'. Try <CMD> HELP.` (bytes, as above)
    UnknownSubcommand(Vec<u8>),
    /// Any other full error text (code first) that echoes client bytes:
    /// written to the wire verbatim, so non-UTF-8 arguments go out as sent
    /// (Redis formats them with `%s`). Built by [`CommandError::err_echo`].
    Raw(Vec<u8>),
    /// `NOAUTH Authentication required.`
    NoAuth,
    /// `WRONGPASS invalid username-password pair or user is disabled.`
    WrongPass,
    /// `EXECABORT Transaction discarded because of previous errors.`
    ExecAbort,
    /// `ERR DB index is out of range`
    DbIndexOutOfRange,
    /// `ERR bad arguments, must be unsigned 32-bit integer` (TR.* numeric
    /// argument that does not parse as an unsigned 32-bit value; spec 0.5).
    NotU32,
    /// `ERR invalid arguments, maybe out of range or illegal` (TR.* argument
    /// that parses but is not acceptable; spec 0.5, open point 12).
    OutOfRange,
    /// `ERR <text>`: any other `ERR` error.
    Err(Cow<'static, str>),
    /// A full error text with its own code (`NOPROTO ...`, `BUSYKEY ...`).
    Custom(Cow<'static, str>),
    /// An error from the store; its `Display` is the reply text.
    Store(roaringd_store::StoreError),
    /// `ERR internal error while running '<name>'`: the handler of `name`
    /// panicked (a bug; logged with the command name). `wrote` is true when
    /// the handler had written to its store transaction before it
    /// panicked: that transaction must then be dropped, not committed.
    Panicked {
        /// The command's lowercase full name.
        name: &'static str,
        /// The transaction holds writes of the failed command.
        wrote: bool,
    },
}

impl CommandError {
    /// `ERR <text>` from a static string.
    pub const fn err(text: &'static str) -> Self {
        CommandError::Err(Cow::Borrowed(text))
    }

    /// The unknown-command error exactly as Redis 7 words it: the name
    /// (at most 128 bytes) and the first arguments (quoted, each followed by
    /// a space) while the argument text is under 128 bytes.
    pub fn unknown_command<'a>(name: &[u8], args: impl Iterator<Item = &'a [u8]>) -> Self {
        let mut list: Vec<u8> = Vec::new();
        for a in args {
            if list.len() >= 128 {
                break;
            }
            let room = 128 - list.len();
            let a = c_str(a);
            list.push(b'\'');
            list.extend_from_slice(&a[..a.len().min(room)]);
            list.extend_from_slice(b"' ");
        }
        let name = c_str(name);
        let mut t = b"ERR unknown command '".to_vec();
        t.extend_from_slice(&name[..name.len().min(128)]);
        t.extend_from_slice(b"', with args beginning with: ");
        t.extend_from_slice(&list);
        CommandError::UnknownCommand(t)
    }

    /// `ERR unknown subcommand '<sub>'. Try <CMD> HELP.`
    pub fn unknown_subcommand(cmd: &str, sub: &[u8]) -> Self {
        let sub = c_str(sub);
        let mut t = b"ERR unknown subcommand '".to_vec();
        t.extend_from_slice(&sub[..sub.len().min(128)]);
        t.extend_from_slice(b"'. Try ");
        t.extend_from_slice(cmd.to_ascii_uppercase().as_bytes());
        t.extend_from_slice(b" HELP.");
        CommandError::UnknownSubcommand(t)
    }

    /// `ERR <before><arg><after>` with `arg` echoed as Redis's `%s` would:
    /// its raw bytes (not necessarily UTF-8) up to the first NUL. Only the
    /// error path pays for the allocation.
    pub fn err_echo(before: &str, arg: &[u8], after: &str) -> Self {
        let arg = c_str(arg);
        let mut t = Vec::with_capacity(4 + before.len() + arg.len() + after.len());
        t.extend_from_slice(b"ERR ");
        t.extend_from_slice(before.as_bytes());
        t.extend_from_slice(arg);
        t.extend_from_slice(after.as_bytes());
        CommandError::Raw(t)
    }

    /// The full reply text (code first, no leading `-`), as bytes: the raw
    /// bytes for the variants that echo arguments, the `Display` text for
    /// the others.
    pub fn text(&self) -> Cow<'_, [u8]> {
        match self {
            CommandError::UnknownCommand(t)
            | CommandError::UnknownSubcommand(t)
            | CommandError::Raw(t) => Cow::Borrowed(t),
            CommandError::Custom(t) => Cow::Borrowed(t.as_bytes()),
            other => Cow::Owned(other.to_string().into_bytes()),
        }
    }

    /// True for errors the store raised because it failed (I/O, corruption),
    /// which the server also logs.
    pub fn is_internal(&self) -> bool {
        matches!(self, CommandError::Store(e) if !e.is_user_error())
    }
}

/// `bytes` up to its first NUL: Redis formats echoed arguments as C strings.
pub fn c_str(bytes: &[u8]) -> &[u8] {
    match memchr::memchr(0, bytes) {
        Some(i) => &bytes[..i],
        None => bytes,
    }
}

impl fmt::Display for CommandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CommandError::WrongType => {
                f.write_str("WRONGTYPE Operation against a key holding the wrong kind of value")
            }
            CommandError::Syntax => f.write_str("ERR syntax error"),
            CommandError::NotInteger => f.write_str("ERR value is not an integer or out of range"),
            CommandError::NotFloat => f.write_str("ERR value is not a valid float"),
            CommandError::Overflow => f.write_str("ERR increment or decrement would overflow"),
            CommandError::NoSuchKey => f.write_str("ERR no such key"),
            CommandError::Arity(name) => {
                write!(f, "ERR wrong number of arguments for '{name}' command")
            }
            CommandError::UnknownCommand(text)
            | CommandError::UnknownSubcommand(text)
            | CommandError::Raw(text) => {
                // Lossy only here (logs, INFO codes); the reply itself is
                // written from the bytes (`text()`).
                f.write_str(&String::from_utf8_lossy(text))
            }
            CommandError::NoAuth => f.write_str("NOAUTH Authentication required."),
            CommandError::WrongPass => {
                f.write_str("WRONGPASS invalid username-password pair or user is disabled.")
            }
            CommandError::ExecAbort => {
                f.write_str("EXECABORT Transaction discarded because of previous errors.")
            }
            CommandError::DbIndexOutOfRange => f.write_str("ERR DB index is out of range"),
            CommandError::NotU32 => {
                f.write_str("ERR bad arguments, must be unsigned 32-bit integer")
            }
            CommandError::OutOfRange => {
                f.write_str("ERR invalid arguments, maybe out of range or illegal")
            }
            CommandError::Err(text) => write!(f, "ERR {text}"),
            CommandError::Custom(text) => f.write_str(text),
            CommandError::Store(e) => write!(f, "{e}"),
            CommandError::Panicked { name, .. } => {
                write!(f, "ERR internal error while running '{name}'")
            }
        }
    }
}

impl std::error::Error for CommandError {}

impl From<ArgError> for CommandError {
    fn from(e: ArgError) -> Self {
        match e {
            ArgError::Syntax => CommandError::Syntax,
            ArgError::NotInteger => CommandError::NotInteger,
            ArgError::NotFloat => CommandError::NotFloat,
        }
    }
}

impl From<roaringd_store::StoreError> for CommandError {
    fn from(e: roaringd_store::StoreError) -> Self {
        CommandError::Store(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_command_matches_redis7() {
        let e = CommandError::unknown_command(b"foo", [&b"a"[..], b"b"].into_iter());
        assert_eq!(
            e.to_string(),
            "ERR unknown command 'foo', with args beginning with: 'a' 'b' "
        );
        let e = CommandError::unknown_command(b"foo", [&b"a\x00b"[..]].into_iter());
        assert_eq!(
            e.to_string(),
            "ERR unknown command 'foo', with args beginning with: 'a' "
        );
        let e = CommandError::unknown_command(b"foo", std::iter::empty());
        assert_eq!(
            e.to_string(),
            "ERR unknown command 'foo', with args beginning with: "
        );
    }

    #[test]
    fn err_echo_keeps_raw_bytes_up_to_nul() {
        let e = CommandError::err_echo("Unsupported option ", b"\xff", "");
        assert_eq!(&*e.text(), b"ERR Unsupported option \xff");
        let e = CommandError::err_echo("Unknown client type '", b"a\x00b", "'");
        assert_eq!(&*e.text(), b"ERR Unknown client type 'a'");
        assert_eq!(&*CommandError::Syntax.text(), b"ERR syntax error");
    }

    #[test]
    fn arity_names_the_command() {
        assert_eq!(
            CommandError::Arity("get".into()).to_string(),
            "ERR wrong number of arguments for 'get' command"
        );
    }
}
