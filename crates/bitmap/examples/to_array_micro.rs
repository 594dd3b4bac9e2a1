//! Micro-benchmark of bitset-to-array conversion, scalar kernel vs the chosen table:
//! `cargo run --release -p roaringd-bitmap --example to_array_micro`.

use roaringd_bitmap::kernels;

fn main() {
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for card in [100usize, 500, 2000, 4096, 16000] {
        let mut w = Box::new([0u64; 1024]);
        let mut n = 0;
        while n < card {
            let v = (next() % 65536) as usize;
            if w[v / 64] & (1 << (v % 64)) == 0 {
                w[v / 64] |= 1 << (v % 64);
                n += 1;
            }
        }
        let mut out = vec![0u16; card];
        let k = kernels::get();
        let mut best = [u128::MAX; 2];
        for _ in 0..3000 {
            for (i, f) in [kernels::SCALAR.bitset_to_array, k.bitset_to_array]
                .into_iter()
                .enumerate()
            {
                let t = std::time::Instant::now();
                let got = f(std::hint::black_box(&w), &mut out);
                best[i] = best[i].min(t.elapsed().as_nanos());
                assert_eq!(got, card);
            }
        }
        println!(
            "card {card}: scalar {} ns, {} {} ns",
            best[0], k.name, best[1]
        );
    }
}
