//! The logic of the `resp_decoder` fuzz target (`fuzz/`), behind the
//! `fuzzing` feature (and always in this crate's tests, which run it over
//! random byte strings on the stable toolchain).
//!
//! [`fuzz_request_parser`] feeds arbitrary bytes to the server-side
//! [`RequestParser`] the way a connection does (one request after another
//! from the front of a buffer) under one of several [`Limits`] (the
//! defaults, the unauthenticated ones, tiny ones), twice: once with every
//! byte buffered, once with the bytes arriving in chunks whose sizes the
//! input chooses (the resumable path). It checks that
//!
//! - nothing panics;
//! - a complete request never claims more bytes than are buffered, nor
//!   zero bytes;
//! - a multibulk request respects the limits (argument count, bulk length,
//!   and the unauthenticated 10 arguments of 16384 bytes);
//! - an error is a [`ProtocolError`] whose message is Redis's
//!   `ERR Protocol error: ...` text;
//! - both ways of feeding give the same requests, the same error (if any)
//!   and the same partial state at the end;
//! - every request re-encoded as a multibulk request parses back to the
//!   same arguments.
//!
//! The same bytes also go to the client-side [`Frame::decode`], which must
//! not panic, must not claim more bytes than it has, and must decode its
//! own encoding of what it decoded to the same bytes.
//!
//! Allocation is bounded by the parser's design (one span per argument
//! actually buffered); under libFuzzer, `-rss_limit_mb` / `-malloc_limit_mb`
//! check it.

use crate::command::encode_command;
use crate::frame::Frame;
use crate::request::{Limits, ProtocolError, RequestParser, INLINE_MAX};

/// What parsing a byte stream gave: the requests in order, then the error
/// that stopped it (if any) and whether a request was left partly parsed.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    requests: Vec<Vec<Vec<u8>>>,
    error: Option<ProtocolError>,
    in_progress: bool,
}

/// Runs one fuzz input (see the module docs). The first byte picks the
/// limits and the chunking of the resumable pass; the rest is the stream.
///
/// # Panics
/// When an invariant fails (that is the fuzz target's finding).
pub fn fuzz_request_parser(data: &[u8]) {
    let (&config, stream) = data.split_first().unwrap_or((&0, &[]));
    let limits = limits_for(config);
    let whole = parse_stream(stream, &limits, &[stream.len()]);
    let cuts = cut_points(stream, config >> 2);
    let chunked = parse_stream(stream, &limits, &cuts);
    assert_eq!(
        whole, chunked,
        "parsing at once and in chunks (cuts {cuts:?}) disagree"
    );
    for args in &whole.requests {
        round_trip(args, &limits);
    }
    fuzz_frame_decoder(stream);
}

/// The limits a connection can have: the defaults, before authentication,
/// and tiny ones (a small `proto-max-bulk-len`, few arguments, short
/// inline requests) that inputs reach quickly.
fn limits_for(config: u8) -> Limits {
    match config & 3 {
        0 => Limits::default(),
        1 => Limits {
            unauthenticated: true,
            ..Limits::default()
        },
        2 => Limits {
            max_bulk_len: 16,
            max_multibulk_len: 8,
            max_inline_len: 32,
            ..Limits::default()
        },
        _ => Limits {
            max_bulk_len: 0,
            max_multibulk_len: 1,
            max_inline_len: 0,
            max_query_buf: 64,
            unauthenticated: true,
        },
    }
}

/// Where the resumable pass makes more bytes visible: ascending offsets
/// ending with `stream.len()`, spaced by sizes drawn from `seed` and the
/// stream's bytes (1 to 16 bytes apart, or byte by byte for seed 0).
fn cut_points(stream: &[u8], seed: u8) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut at = 0;
    let mut i = 0;
    while at < stream.len() {
        let step = if seed == 0 {
            1
        } else {
            let b = stream.get(i).copied().unwrap_or(0);
            1 + usize::from(b.wrapping_mul(seed) % 16)
        };
        at = (at + step).min(stream.len());
        cuts.push(at);
        i += 1;
    }
    cuts.push(stream.len());
    cuts
}

/// Parses `stream` as a connection does, with only `stream[..cut]` buffered
/// for each successive cut; checks the per-call invariants.
fn parse_stream(stream: &[u8], limits: &Limits, cuts: &[usize]) -> Outcome {
    let mut parser = RequestParser::new();
    let mut out = Outcome {
        requests: Vec::new(),
        error: None,
        in_progress: false,
    };
    let mut start = 0;
    for &end in cuts {
        while start < end {
            let buf = &stream[start..end];
            match parser.parse(buf, limits) {
                Ok(Some(used)) => {
                    assert!(
                        used >= 1 && used <= buf.len(),
                        "consumed {used} of {} bytes",
                        buf.len()
                    );
                    let args: Vec<Vec<u8>> = parser.args(buf).all().map(<[u8]>::to_vec).collect();
                    assert_eq!(args.len(), parser.argc());
                    if parser.multibulk_spans().is_some() {
                        check_multibulk_limits(&args, limits);
                    } else {
                        assert!(used <= limits.max_inline_len + 1, "inline line too long");
                    }
                    out.requests.push(args);
                    start += used;
                }
                Ok(None) => break,
                Err(e) => {
                    let text = e.message();
                    assert!(
                        text.starts_with("ERR Protocol error: ") && text.len() > 20,
                        "bad protocol error text {text:?}"
                    );
                    out.error = Some(e);
                    return out;
                }
            }
        }
    }
    out.in_progress = parser.in_progress();
    out
}

fn check_multibulk_limits(args: &[Vec<u8>], limits: &Limits) {
    assert!(args.len() <= limits.max_multibulk_len, "too many arguments");
    assert!(args.iter().all(|a| a.len() <= limits.max_bulk_len));
    if limits.unauthenticated {
        assert!(args.len() <= 10 && args.iter().all(|a| a.len() <= 16384));
    }
}

/// A request re-encoded as a multibulk request parses to the same
/// arguments in one call, consuming exactly its encoding (arguments from
/// inline requests included: they are below the inline limit).
fn round_trip(args: &[Vec<u8>], limits: &Limits) {
    let mut wire = Vec::new();
    encode_command(&mut wire, args);
    let roomy = Limits {
        max_bulk_len: limits.max_bulk_len.max(INLINE_MAX),
        max_multibulk_len: limits.max_multibulk_len.max(INLINE_MAX),
        unauthenticated: false,
        ..*limits
    };
    let mut parser = RequestParser::new();
    assert_eq!(parser.parse(&wire, &roomy), Ok(Some(wire.len())));
    let back: Vec<&[u8]> = parser.args(&wire).all().collect();
    assert!(back.iter().copied().eq(args.iter().map(Vec::as_slice)));
}

/// The client-side decoder on the same bytes: no panic, no overrun, and
/// its own encoding of a decoded frame decodes to the same encoding.
fn fuzz_frame_decoder(bytes: &[u8]) {
    let mut at = 0;
    while let Ok(Some((frame, used))) = Frame::decode(&bytes[at..]) {
        assert!(used >= 1 && used <= bytes.len() - at);
        let encoded = frame.to_bytes();
        match Frame::decode(&encoded) {
            Ok(Some((again, n))) => {
                assert_eq!(n, encoded.len(), "re-decoding {frame:?} left bytes");
                assert_eq!(again.to_bytes(), encoded, "{frame:?} does not round-trip");
            }
            other => panic!("the encoding of {frame:?} decodes as {other:?}"),
        }
        at += used;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Byte strings that look like requests often enough to get past the
    /// first header: fragments of valid requests and hostile headers.
    fn random_stream(rng: &mut rand::rngs::StdRng) -> Vec<u8> {
        const PIECES: &[&[u8]] = &[
            b"*",
            b"$",
            b"\r\n",
            b"\n",
            b"\r",
            b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
            b"*1\r\n$4\r\nPING\r\n",
            b"PING\r\n",
            b"set a \"b\\x41\" 'c\\'d'\r\n",
            b"\"unbalanced",
            b"*-1\r\n",
            b"*0\r\n",
            b"$-1\r\n",
            b"*11\r\n",
            b"$16385\r\n",
            b"$17\r\n",
            b"*99999999999999999999\r\n",
            b"+OK\r\n",
            b":1\r\n",
            b"%1\r\n",
            b",nan\r\n",
            b"=5\r\ntxt:a\r\n",
            b"|1\r\n",
            b"0",
            b"1",
            b"9",
            b"-",
            b" ",
        ];
        let mut out = vec![rng.random::<u8>()];
        let parts = rng.random_range(0..24);
        for _ in 0..parts {
            if rng.random_bool(0.7) {
                out.extend_from_slice(PIECES[rng.random_range(0..PIECES.len())]);
            } else {
                let n = rng.random_range(0..8);
                out.extend((0..n).map(|_| rng.random::<u8>()));
            }
        }
        out
    }

    #[test]
    fn request_parser_fuzz_logic_over_random_streams() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x5eed_0e5b);
        for _ in 0..20_000 {
            fuzz_request_parser(&random_stream(&mut rng));
        }
        for _ in 0..5_000 {
            let n = rng.random_range(0..256);
            let bytes: Vec<u8> = (0..n).map(|_| rng.random()).collect();
            fuzz_request_parser(&bytes);
        }
    }

    #[test]
    fn request_parser_fuzz_logic_on_edge_inputs() {
        // 0x3c: default limits, chunks of 16 bytes over runs of `a` or `1`
        // (byte-by-byte chunks over 64 KiB take seconds in debug builds).
        let long_inline = [b"\x3c".as_slice(), &vec![b'a'; INLINE_MAX + 2]].concat();
        let mut long_header = b"\x3c*1\r\n$".to_vec();
        long_header.extend(std::iter::repeat_n(b'1', INLINE_MAX + 3));
        for input in [
            &b""[..],
            b"\x00",
            b"\x01*11\r\n",
            b"\x01*1\r\n$16385\r\n",
            b"\x02*9\r\n",
            b"\x03*2\r\n$0\r\n\r\n",
            b"\x00*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\nPING\r\n*1",
            &long_inline,
            &long_header,
        ] {
            fuzz_request_parser(input);
        }
    }
}
