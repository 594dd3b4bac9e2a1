//! The peer's memory figure for `bench/tier-many-keys`: the total size of
//! the portable Roaring serialization, by the `croaring` crate, of the
//! bitmaps in a file of one bitmap per line (comma-separated values).
//! Prints the total bytes, then the number of bitmaps.
//!
//! ```text
//! cargo run --release -p roaringd-bitmap --example portable_size -- FILE
//! ```

use std::io::BufRead;

fn main() {
    let path = std::env::args().nth(1).expect("usage: portable_size FILE");
    let file = std::fs::File::open(&path).expect("open the file");
    let (mut bytes, mut n) = (0usize, 0usize);
    for line in std::io::BufReader::new(file).lines() {
        let line = line.expect("read a line");
        let mut b = croaring::Bitmap::new();
        for v in line.split(',').filter(|v| !v.is_empty()) {
            b.add(v.trim().parse().expect("a u32 value"));
        }
        bytes += b.get_serialized_size_in_bytes::<croaring::Portable>();
        n += 1;
    }
    println!("{bytes} {n}");
}
