//! Client side: [`Client`], a tiny blocking RESP client over one TCP
//! connection, for tests and tools. Not for the load generator's hot path.
//!
//! It sends requests as arrays of bulk strings and reads replies one
//! [`Frame`] at a time, in order; RESP3 push frames are returned like any
//! other frame. A reply larger than [`Client::max_reply_len`] bytes is
//! refused rather than buffered without bound.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use crate::command::encode_command;
use crate::frame::Frame;

/// A blocking connection to a RESP server.
#[derive(Debug)]
pub struct Client {
    stream: TcpStream,
    /// Bytes read but not yet decoded start at `start`.
    buf: Vec<u8>,
    start: usize,
    out: Vec<u8>,
    max_reply_len: usize,
}

impl Client {
    /// The default limit on one reply's size: 512 MiB, Redis's
    /// `proto-max-bulk-len`.
    pub const DEFAULT_MAX_REPLY_LEN: usize = 512 << 20;

    /// Connects with `TCP_NODELAY` set.
    ///
    /// # Errors
    /// Any connect error.
    pub fn connect(addr: impl ToSocketAddrs) -> io::Result<Client> {
        let stream = TcpStream::connect(addr)?;
        stream.set_nodelay(true)?;
        Ok(Client::from_stream(stream))
    }

    /// Wraps an already connected stream.
    pub fn from_stream(stream: TcpStream) -> Client {
        Client {
            stream,
            buf: Vec::with_capacity(16 * 1024),
            start: 0,
            out: Vec::new(),
            max_reply_len: Self::DEFAULT_MAX_REPLY_LEN,
        }
    }

    /// Sets the read and write timeout (`None`: block forever).
    ///
    /// # Errors
    /// As [`TcpStream::set_read_timeout`].
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        self.stream.set_read_timeout(timeout)?;
        self.stream.set_write_timeout(timeout)
    }

    /// The largest reply, in bytes, that [`Client::read_frame`] buffers.
    pub fn max_reply_len(&self) -> usize {
        self.max_reply_len
    }

    /// Sets the largest reply, in bytes, that [`Client::read_frame`] buffers.
    pub fn set_max_reply_len(&mut self, len: usize) {
        self.max_reply_len = len;
    }

    /// The underlying stream (e.g. to shut it down or to send raw bytes).
    pub fn stream(&mut self) -> &mut TcpStream {
        &mut self.stream
    }

    /// Sends one request without waiting for its reply.
    ///
    /// # Errors
    /// Any write error.
    pub fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<()> {
        self.out.clear();
        encode_command(&mut self.out, args);
        self.stream.write_all(&self.out)
    }

    /// Sends raw bytes as they are (inline commands, malformed input).
    ///
    /// # Errors
    /// Any write error.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Reads the next reply.
    ///
    /// # Errors
    /// `UnexpectedEof` if the server closes the connection first,
    /// `InvalidData` for bytes that are not RESP or a reply over the size
    /// limit, or any read error (including a timeout).
    pub fn read_frame(&mut self) -> io::Result<Frame> {
        loop {
            match Frame::decode(&self.buf[self.start..]) {
                Ok(Some((frame, used))) => {
                    self.start += used;
                    if self.start == self.buf.len() {
                        self.buf.clear();
                        self.start = 0;
                    }
                    return Ok(frame);
                }
                Ok(None) => {}
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
            if self.buf.len() - self.start > self.max_reply_len {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "reply larger than the client's limit",
                ));
            }
            if self.start > 0 {
                self.buf.drain(..self.start);
                self.start = 0;
            }
            // Read at least as much as is buffered, so a large reply is
            // decoded O(log n) times rather than once per 16 KiB.
            let len = self.buf.len();
            self.buf.resize(len + len.max(16 * 1024), 0);
            let n = match self.stream.read(&mut self.buf[len..]) {
                Ok(n) => n,
                Err(e) => {
                    self.buf.truncate(len);
                    return Err(e);
                }
            };
            self.buf.truncate(len + n);
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed by the server",
                ));
            }
        }
    }

    /// Sends one request and reads its reply.
    ///
    /// # Errors
    /// As [`Client::send`] and [`Client::read_frame`].
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<Frame> {
        self.send(args)?;
        self.read_frame()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn call_sends_request_and_reads_split_reply() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            let want = b"*2\r\n$4\r\nECHO\r\n$2\r\nhi\r\n";
            let mut got = vec![0; want.len()];
            sock.read_exact(&mut got).unwrap();
            assert_eq!(&got, want);
            // The reply arrives in two pieces, then a second reply.
            sock.write_all(b"$2\r\n").unwrap();
            sock.flush().unwrap();
            std::thread::sleep(Duration::from_millis(20));
            sock.write_all(b"hi\r\n:-1\r\n").unwrap();
        });
        let mut client = Client::connect(addr).unwrap();
        assert_eq!(
            client.call(&["ECHO", "hi"]).unwrap(),
            Frame::Bulk(b"hi".to_vec())
        );
        assert_eq!(client.read_frame().unwrap(), Frame::Integer(-1));
        server.join().unwrap();
        let err = client.read_frame().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }

    #[test]
    fn read_frame_of_large_replies_and_the_size_limit() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let items: Vec<Frame> = (0..100_000).map(Frame::Integer).collect();
        let array = Frame::Array(items);
        let mut bytes = Frame::Bulk(vec![7; 3 << 20]).to_bytes();
        array.encode(&mut bytes);
        bytes.extend_from_slice(b"$100000\r\n");
        let server = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            sock.write_all(&bytes).unwrap();
            sock.write_all(&vec![0; 100_000]).unwrap();
        });
        let mut client = Client::connect(addr).unwrap();
        assert_eq!(client.read_frame().unwrap(), Frame::Bulk(vec![7; 3 << 20]));
        assert_eq!(client.read_frame().unwrap(), array);
        client.set_max_reply_len(50_000);
        let err = client.read_frame().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        server.join().unwrap();
    }

    #[test]
    fn read_frame_of_garbage_is_invalid_data() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (mut sock, _) = listener.accept().unwrap();
            sock.write_all(b"hello\r\n").unwrap();
        });
        let mut client = Client::connect(addr).unwrap();
        let err = client.read_frame().unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        server.join().unwrap();
    }
}
