//! The command template: arguments with `__RAND__` / `__RAND2__`
//! placeholders, rendered into a fresh RESP request for every command.
//!
//! Each occurrence of a placeholder is replaced, in place, by its own
//! unpadded decimal draw: `__RAND__` from `[0, r)`, `__RAND2__` from
//! `[0, r2)`. For the usual suffix use (`foo-__RAND__` → `foo-123`) this is
//! exactly the original tool's "remove and append"; unlike the original, a
//! placeholder in the middle of an argument stays where it is, and several
//! occurrences draw several values.
//!
//! Arguments without placeholders are encoded once, up front.

use rand::Rng;

use crate::dist::Sampler;

const RAND: &[u8] = b"__RAND__";
const RAND2: &[u8] = b"__RAND2__";

/// Which range a placeholder draws from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placeholder {
    /// `__RAND__`, range `r`.
    Rand,
    /// `__RAND2__`, range `r2`.
    Rand2,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(Vec<u8>),
    Value(Placeholder),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    /// Already encoded bytes (headers and fixed arguments).
    Encoded(Vec<u8>),
    /// One argument with placeholders.
    Dynamic(Vec<Segment>),
}

/// A parsed command template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
    placeholders: usize,
}

fn segments(arg: &[u8]) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut literal = Vec::new();
    let mut i = 0;
    while i < arg.len() {
        let rest = &arg[i..];
        // `__RAND2__` first: `__RAND__` is not a prefix of it, but be explicit.
        let found = if rest.starts_with(RAND2) {
            Some((Placeholder::Rand2, RAND2.len()))
        } else if rest.starts_with(RAND) {
            Some((Placeholder::Rand, RAND.len()))
        } else {
            None
        };
        match found {
            Some((p, len)) => {
                if !literal.is_empty() {
                    out.push(Segment::Literal(std::mem::take(&mut literal)));
                }
                out.push(Segment::Value(p));
                i += len;
            }
            None => {
                literal.push(arg[i]);
                i += 1;
            }
        }
    }
    if !literal.is_empty() {
        out.push(Segment::Literal(literal));
    }
    out
}

fn push_header(out: &mut Vec<u8>, kind: u8, n: usize) {
    out.push(kind);
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

impl Template {
    /// Parses `args` (name first).
    pub fn new<A: AsRef<[u8]>>(args: &[A]) -> Template {
        let mut parts = Vec::new();
        let mut fixed = Vec::new();
        let mut placeholders = 0;
        push_header(&mut fixed, b'*', args.len());
        for arg in args {
            let arg = arg.as_ref();
            let segs = segments(arg);
            let n = segs
                .iter()
                .filter(|s| matches!(s, Segment::Value(_)))
                .count();
            if n == 0 {
                push_header(&mut fixed, b'$', arg.len());
                fixed.extend_from_slice(arg);
                fixed.extend_from_slice(b"\r\n");
            } else {
                placeholders += n;
                parts.push(Part::Encoded(std::mem::take(&mut fixed)));
                parts.push(Part::Dynamic(segs));
            }
        }
        if !fixed.is_empty() {
            parts.push(Part::Encoded(fixed));
        }
        Template {
            parts,
            placeholders,
        }
    }

    /// How many placeholder occurrences the template has in all.
    pub fn placeholders(&self) -> usize {
        self.placeholders
    }

    /// Appends one request to `out`, drawing every placeholder afresh from
    /// `rand` (`__RAND__`) or `rand2` (`__RAND2__`). `scratch` is reused
    /// between calls to avoid allocating.
    pub fn render<R: Rng + ?Sized>(
        &self,
        out: &mut Vec<u8>,
        scratch: &mut Vec<u8>,
        rng: &mut R,
        rand: &Sampler,
        rand2: &Sampler,
    ) {
        let mut digits = itoa::Buffer::new();
        for part in &self.parts {
            match part {
                Part::Encoded(bytes) => out.extend_from_slice(bytes),
                Part::Dynamic(segs) => {
                    scratch.clear();
                    for seg in segs {
                        match seg {
                            Segment::Literal(bytes) => scratch.extend_from_slice(bytes),
                            Segment::Value(p) => {
                                let v = match p {
                                    Placeholder::Rand => rand.sample(rng),
                                    Placeholder::Rand2 => rand2.sample(rng),
                                };
                                scratch.extend_from_slice(digits.format(v).as_bytes());
                            }
                        }
                    }
                    push_header(out, b'$', scratch.len());
                    out.extend_from_slice(scratch);
                    out.extend_from_slice(b"\r\n");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dist::Distribution;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;
    use roaringd_resp::frame::Frame;

    fn render_args(t: &Template, rng: &mut SmallRng, r: u64, r2: u64) -> Vec<Vec<u8>> {
        let (a, b) = (
            Sampler::new(Distribution::Uniform, r),
            Sampler::new(Distribution::Uniform, r2),
        );
        let mut out = Vec::new();
        t.render(&mut out, &mut Vec::new(), rng, &a, &b);
        let (frame, used) = Frame::decode(&out).unwrap().unwrap();
        assert_eq!(used, out.len());
        frame
            .as_items()
            .unwrap()
            .iter()
            .map(|f| match f {
                Frame::Bulk(b) => b.clone(),
                other => panic!("not a bulk: {other:?}"),
            })
            .collect()
    }

    fn number_after(arg: &[u8], prefix: &[u8]) -> u64 {
        assert!(arg.starts_with(prefix), "{arg:?}");
        std::str::from_utf8(&arg[prefix.len()..])
            .unwrap()
            .parse()
            .unwrap()
    }

    #[test]
    fn template_without_placeholders_encodes_verbatim() {
        let t = Template::new(&["PING"]);
        assert_eq!(t.placeholders(), 0);
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(render_args(&t, &mut rng, 10, 10), [b"PING".to_vec()]);
    }

    #[test]
    fn suffix_placeholder_becomes_unpadded_decimal_in_range() {
        let t = Template::new(&["TR.GETBIT", "foo-__RAND__", "__RAND2__"]);
        assert_eq!(t.placeholders(), 2);
        let mut rng = SmallRng::seed_from_u64(7);
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..2000 {
            let args = render_args(&t, &mut rng, 1000, 3);
            assert_eq!(args[0], b"TR.GETBIT");
            let v = number_after(&args[1], b"foo-");
            assert!(v < 1000);
            assert!(!args[1][4..].starts_with(b"0") || args[1] == b"foo-0");
            assert!(number_after(&args[2], b"") < 3);
            seen.insert(v);
        }
        assert!(seen.len() > 500, "values not spread: {}", seen.len());
    }

    #[test]
    fn several_occurrences_each_draw_their_own_value() {
        let t = Template::new(&["SET", "__RAND__:__RAND__:__RAND2__", "v"]);
        assert_eq!(t.placeholders(), 3);
        let mut rng = SmallRng::seed_from_u64(3);
        let mut differ = false;
        for _ in 0..100 {
            let args = render_args(&t, &mut rng, 1_000_000, 5);
            let text = String::from_utf8(args[1].clone()).unwrap();
            let nums: Vec<u64> = text.split(':').map(|s| s.parse().unwrap()).collect();
            assert_eq!(nums.len(), 3);
            assert!(nums[0] < 1_000_000 && nums[1] < 1_000_000 && nums[2] < 5);
            differ |= nums[0] != nums[1];
            assert_eq!(args[2], b"v");
        }
        assert!(differ, "two occurrences always drew the same value");
    }

    #[test]
    fn partial_placeholder_text_stays_literal() {
        let t = Template::new(&["GET", "__RAND_", "_RAND__", "__rand__"]);
        assert_eq!(t.placeholders(), 0);
    }

    #[test]
    fn range_of_one_always_gives_zero() {
        let t = Template::new(&["GET", "k__RAND__"]);
        let mut rng = SmallRng::seed_from_u64(9);
        for _ in 0..10 {
            assert_eq!(render_args(&t, &mut rng, 1, 1)[1], b"k0");
        }
    }
}
