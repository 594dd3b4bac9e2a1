//! Client side: encoding a request as a RESP array of bulk strings, the form
//! every Redis-compatible server accepts.
//!
//! [`encode_command`] appends one request to a caller-owned buffer (the hot
//! path of the load generator); [`Command`] is a small owned builder for
//! tests and tools.

/// Appends `*<n>\r\n` then `$<len>\r\n<arg>\r\n` for each argument to `out`.
///
/// An empty `args` encodes `*0\r\n`, which servers ignore.
pub fn encode_command<A: AsRef<[u8]>>(out: &mut Vec<u8>, args: &[A]) {
    out.reserve(encoded_len(args));
    header(out, b'*', args.len());
    for arg in args {
        let arg = arg.as_ref();
        header(out, b'$', arg.len());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
}

/// The exact number of bytes [`encode_command`] appends for `args`.
pub fn encoded_len<A: AsRef<[u8]>>(args: &[A]) -> usize {
    let digits = |n: usize| itoa::Buffer::new().format(n).len();
    let mut len = 1 + digits(args.len()) + 2;
    for arg in args {
        let n = arg.as_ref().len();
        len += 1 + digits(n) + 2 + n + 2;
    }
    len
}

fn header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// An owned request: a command name and its arguments, as bytes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Command {
    args: Vec<Vec<u8>>,
}

impl Command {
    /// A request whose first argument is `name`.
    pub fn new(name: impl AsRef<[u8]>) -> Self {
        Command {
            args: vec![name.as_ref().to_vec()],
        }
    }

    /// A request from a whole argument list (name first).
    pub fn from_args<A: AsRef<[u8]>>(args: &[A]) -> Self {
        Command {
            args: args.iter().map(|a| a.as_ref().to_vec()).collect(),
        }
    }

    /// Appends one argument.
    #[must_use]
    pub fn arg(mut self, arg: impl AsRef<[u8]>) -> Self {
        self.args.push(arg.as_ref().to_vec());
        self
    }

    /// Appends an integer argument in decimal.
    #[must_use]
    pub fn arg_int(mut self, n: i64) -> Self {
        self.args
            .push(itoa::Buffer::new().format(n).as_bytes().to_vec());
        self
    }

    /// The arguments, name first.
    pub fn args(&self) -> &[Vec<u8>] {
        &self.args
    }

    /// Appends the wire form to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        encode_command(out, &self.args);
    }

    /// The wire form as a new vector.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(encoded_len(&self.args));
        self.encode(&mut out);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::Frame;
    use proptest::prelude::*;

    #[test]
    fn encode_command_writes_array_of_bulk_strings() {
        let mut out = Vec::new();
        encode_command(&mut out, &["SET", "k", ""]);
        assert_eq!(out, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n");
    }

    #[test]
    fn encode_command_with_no_args_is_empty_array() {
        let mut out = Vec::new();
        encode_command::<&[u8]>(&mut out, &[]);
        assert_eq!(out, b"*0\r\n");
    }

    #[test]
    fn command_builder_encodes_binary_and_integers() {
        let cmd = Command::new("TR.SETBIT").arg(b"k\r\n\0").arg_int(-5);
        assert_eq!(
            cmd.to_bytes(),
            b"*3\r\n$9\r\nTR.SETBIT\r\n$4\r\nk\r\n\0\r\n$2\r\n-5\r\n"
        );
        assert_eq!(cmd.args().len(), 3);
    }

    proptest! {
        #[test]
        fn encoded_command_decodes_as_array_of_bulks(
            args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..12)
        ) {
            let mut out = Vec::new();
            encode_command(&mut out, &args);
            prop_assert_eq!(out.len(), encoded_len(&args));
            let want = Frame::Array(args.iter().cloned().map(Frame::Bulk).collect());
            prop_assert_eq!(Frame::decode(&out), Ok(Some((want, out.len()))));
        }
    }
}
