//! Driver for profiling the n-way union (callgrind / perf):
//! `cargo run --release -p roaringd-bitmap --example wide_union_driver -- census-income 10`.

#[path = "../tests/common/datasets.rs"]
#[allow(dead_code)]
mod datasets;

use roaringd_bitmap::Bitmap;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let name = args.get(1).map(String::as_str).unwrap_or("census-income");
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let op = args.get(3).map(String::as_str).unwrap_or("wide_union");
    let sets: Vec<Bitmap> = datasets::load(name)
        .iter()
        .map(|v| Bitmap::from_sorted(v))
        .collect();
    let mut kinds = std::collections::BTreeMap::new();
    for b in &sets {
        for (k, c) in b.containers() {
            let e = kinds
                .entry((k, c.as_ref().kind().name()))
                .or_insert((0u64, 0u64));
            e.0 += 1;
            e.1 += c.as_ref().cardinality() as u64;
        }
    }
    if reps == 0 {
        for ((k, kind), (n, card)) in &kinds {
            println!("key {k} {kind}: {n} containers, {card} values");
        }
        return;
    }
    let refs: Vec<&Bitmap> = sets.iter().collect();
    if op == "split" {
        for want in ["array", "bitset"] {
            let part: Vec<Bitmap> = sets
                .iter()
                .map(|b| {
                    Bitmap::from_containers(
                        b.containers()
                            .filter(|(_, c)| c.as_ref().kind().name() == want)
                            .map(|(k, c)| (k, c.clone())),
                    )
                    .unwrap()
                })
                .collect();
            let prefs: Vec<&Bitmap> = part.iter().collect();
            let mut best = u128::MAX;
            for _ in 0..reps {
                let t = std::time::Instant::now();
                std::hint::black_box(Bitmap::union_many(&prefs).len());
                best = best.min(t.elapsed().as_nanos());
            }
            let cr: Vec<croaring::Bitmap> = part
                .iter()
                .map(|b| croaring::Bitmap::of(&b.iter().collect::<Vec<u32>>()))
                .collect();
            let crefs: Vec<&croaring::Bitmap> = cr.iter().collect();
            let mut best_c = u128::MAX;
            for _ in 0..reps {
                let t = std::time::Instant::now();
                std::hint::black_box(croaring::Bitmap::fast_or(&crefs).cardinality());
                best_c = best_c.min(t.elapsed().as_nanos());
            }
            println!("{want} only: min {best}ns croaring {best_c}ns");
        }
        return;
    }
    if op == "cmp" {
        let cr: Vec<croaring::Bitmap> = datasets::load(name)
            .iter()
            .map(|v| croaring::Bitmap::of(v))
            .collect();
        let crefs: Vec<&croaring::Bitmap> = cr.iter().collect();
        let (mut best_o, mut best_c) = (u128::MAX, u128::MAX);
        for _ in 0..reps {
            let t = std::time::Instant::now();
            let a = Bitmap::union_many(&refs).len();
            best_o = best_o.min(t.elapsed().as_nanos());
            let t = std::time::Instant::now();
            let b = croaring::Bitmap::fast_or(&crefs).cardinality();
            best_c = best_c.min(t.elapsed().as_nanos());
            assert_eq!(a, b);
        }
        println!(
            "min ours={best_o}ns croaring={best_c}ns ratio={:.2}",
            best_o as f64 / best_c as f64
        );
        return;
    }
    let mut total = 0u64;
    let t = std::time::Instant::now();
    for _ in 0..reps {
        total += match op {
            "wide_union" => Bitmap::union_many(&refs).len(),
            "andnot" => sets
                .windows(2)
                .map(|w| w[0].andnot(&w[1]).container_count() as u64)
                .sum(),
            "and" => sets
                .windows(2)
                .map(|w| w[0].and(&w[1]).container_count() as u64)
                .sum(),
            _ => panic!("unknown op {op}"),
        };
    }
    println!(
        "{op} {name} total={total} per_rep={:?}",
        t.elapsed() / reps as u32
    );
}
