//! Engine vs CRoaring (`croaring`) and `roaring` on the real data sets, in one
//! process, interleaved: every round runs each operation once per engine, in
//! rotating engine order, and the table reports medians over the rounds.
//!
//! ```text
//! cargo bench -p roaringd-bitmap --bench engine_vs_peers
//! ROARINGD_DATASETS=/path ROARINGD_BENCH_ROUNDS=41 ROARINGD_BENCH_ONLY=census1881 ROARINGD_BENCH_OP=and ...
//! ```
//!
//! Operations on the bitmaps as built from sorted values (arrays and bitsets,
//! no run optimization, for all three); sizes after each library's run
//! optimization. Prints one table per data set and a last line
//! `geomean_vs_croaring=<x>` over all timed operations.

#[path = "../tests/common/datasets.rs"]
mod datasets;

use roaring::MultiOps;
use roaringd_bitmap::Bitmap;
use std::hint::black_box;
use std::time::Instant;

struct Sets {
    ours: Vec<Bitmap>,
    cr: Vec<croaring::Bitmap>,
    ro: Vec<roaring::RoaringBitmap>,
    probes: Vec<u32>,
}

type OpFn = fn(&Sets, usize) -> u64;

fn pairs<T>(v: &[T]) -> impl Iterator<Item = (&T, &T)> {
    v.windows(2).map(|w| (&w[0], &w[1]))
}

macro_rules! op {
    ($name:expr, $ours:expr, $cr:expr, $ro:expr) => {
        ($name, [$ours as OpFn, $cr as OpFn, $ro as OpFn])
    };
}

fn ops() -> Vec<(&'static str, [OpFn; 3])> {
    vec![
        op!(
            "and",
            |s: &Sets, _| pairs(&s.ours)
                .map(|(a, b)| a.and(b).container_count() as u64)
                .sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.and(b).is_empty() as u64).sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| (a & b).is_empty() as u64).sum()
        ),
        op!(
            "or",
            |s: &Sets, _| pairs(&s.ours)
                .map(|(a, b)| a.or(b).container_count() as u64)
                .sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.or(b).is_empty() as u64).sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| (a | b).is_empty() as u64).sum()
        ),
        op!(
            "xor",
            |s: &Sets, _| pairs(&s.ours)
                .map(|(a, b)| a.xor(b).container_count() as u64)
                .sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.xor(b).is_empty() as u64).sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| (a ^ b).is_empty() as u64).sum()
        ),
        op!(
            "andnot",
            |s: &Sets, _| pairs(&s.ours)
                .map(|(a, b)| a.andnot(b).container_count() as u64)
                .sum(),
            |s: &Sets, _| pairs(&s.cr)
                .map(|(a, b)| a.andnot(b).is_empty() as u64)
                .sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| (a - b).is_empty() as u64).sum()
        ),
        op!(
            "and_len",
            |s: &Sets, _| pairs(&s.ours).map(|(a, b)| a.and_len(b)).sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.and_cardinality(b)).sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| a.intersection_len(b)).sum()
        ),
        op!(
            "or_len",
            |s: &Sets, _| pairs(&s.ours).map(|(a, b)| a.or_len(b)).sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.or_cardinality(b)).sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| a.union_len(b)).sum()
        ),
        op!(
            "xor_len",
            |s: &Sets, _| pairs(&s.ours).map(|(a, b)| a.xor_len(b)).sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.xor_cardinality(b)).sum(),
            |s: &Sets, _| pairs(&s.ro)
                .map(|(a, b)| a.symmetric_difference_len(b))
                .sum()
        ),
        op!(
            "andnot_len",
            |s: &Sets, _| pairs(&s.ours).map(|(a, b)| a.andnot_len(b)).sum(),
            |s: &Sets, _| pairs(&s.cr).map(|(a, b)| a.andnot_cardinality(b)).sum(),
            |s: &Sets, _| pairs(&s.ro).map(|(a, b)| a.difference_len(b)).sum()
        ),
        op!(
            "wide_union",
            |s: &Sets, _| Bitmap::union_many(&s.ours.iter().collect::<Vec<_>>()).len(),
            |s: &Sets, _| croaring::Bitmap::fast_or(&s.cr.iter().collect::<Vec<_>>()).cardinality(),
            |s: &Sets, _| s.ro.iter().union().len()
        ),
        op!(
            "contains",
            |s: &Sets, _| s
                .ours
                .iter()
                .map(|b| s.probes.iter().filter(|&&p| b.contains(p)).count() as u64)
                .sum(),
            |s: &Sets, _| s
                .cr
                .iter()
                .map(|b| s.probes.iter().filter(|&&p| b.contains(p)).count() as u64)
                .sum(),
            |s: &Sets, _| s
                .ro
                .iter()
                .map(|b| s.probes.iter().filter(|&&p| b.contains(p)).count() as u64)
                .sum()
        ),
        op!(
            "iterate",
            |s: &Sets, _| s
                .ours
                .iter()
                .map(|b| b.iter().fold(0u64, |a, v| a.wrapping_add(v as u64)))
                .sum(),
            |s: &Sets, _| s
                .cr
                .iter()
                .map(|b| b.iter().fold(0u64, |a, v| a.wrapping_add(v as u64)))
                .sum(),
            |s: &Sets, _| s
                .ro
                .iter()
                .map(|b| b.iter().fold(0u64, |a, v| a.wrapping_add(v as u64)))
                .sum()
        ),
    ]
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn fmt_time(s: f64) -> String {
    if s >= 1e-3 {
        format!("{:.3} ms", s * 1e3)
    } else {
        format!("{:.1} us", s * 1e6)
    }
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let rounds: usize = std::env::var("ROARINGD_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(41);
    let only = std::env::var("ROARINGD_BENCH_ONLY").ok();
    // Profiling aid: ROARINGD_BENCH_OP=<op> runs only that operation.
    let only_op = std::env::var("ROARINGD_BENCH_OP").ok();
    // Profiling aid: ROARINGD_BENCH_ENGINE=0|1|2 (ours, croaring, roaring) times only that engine.
    let only_engine: Option<usize> = std::env::var("ROARINGD_BENCH_ENGINE")
        .ok()
        .and_then(|s| s.parse().ok());
    let names = datasets::names();
    if names.is_empty() {
        eprintln!("data sets not found: set ROARINGD_DATASETS");
        std::process::exit(1);
    }
    println!(
        "kernels={} rounds={rounds} (medians; ratios = ours / peer, < 1 means ours is faster)",
        roaringd_bitmap::kernels::get().name
    );
    let mut log_sum = 0.0;
    let mut log_n = 0usize;
    for name in names {
        if only.as_deref().is_some_and(|o| o != name) {
            continue;
        }
        let data = datasets::load(&name);
        let total: u64 = data.iter().map(|v| v.len() as u64).sum();
        let max = data
            .iter()
            .filter_map(|v| v.last())
            .copied()
            .max()
            .unwrap_or(0);
        let mut rng = 0x1234_5678_9abc_def0u64;
        let probes: Vec<u32> = (0..1000)
            .map(|_| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                (rng % (max as u64 + 1)) as u32
            })
            .collect();
        let sets = Sets {
            ours: data.iter().map(|v| Bitmap::from_sorted(v)).collect(),
            cr: data.iter().map(|v| croaring::Bitmap::of(v)).collect(),
            ro: data
                .iter()
                .map(|v| roaring::RoaringBitmap::from_sorted_iter(v.iter().copied()).unwrap())
                .collect(),
            probes,
        };
        let ops = ops();
        let mut times = vec![[Vec::new(), Vec::new(), Vec::new()]; ops.len()];
        for round in 0..rounds {
            for (oi, (opname, fns)) in ops.iter().enumerate() {
                if only_op.as_deref().is_some_and(|o| o != *opname) {
                    continue;
                }
                let mut answers = [0u64; 3];
                for k in 0..3 {
                    let e = (k + round + oi) % 3;
                    if only_engine.is_some_and(|o| o != e) {
                        continue;
                    }
                    let t = Instant::now();
                    answers[e] = black_box(fns[e](black_box(&sets), round));
                    times[oi][e].push(t.elapsed().as_secs_f64());
                }
                if only_engine.is_none()
                    && (ops[oi].0.ends_with("_len")
                        || ops[oi].0 == "wide_union"
                        || ops[oi].0 == "contains"
                        || ops[oi].0 == "iterate")
                {
                    assert!(
                        answers[0] == answers[1] && answers[1] == answers[2],
                        "{name} {}: engines disagree {answers:?}",
                        ops[oi].0
                    );
                }
            }
        }
        println!();
        println!("## {name} ({} bitmaps, {total} values)", data.len());
        println!(
            "| op | ours | croaring | roaring | ours/croaring | ours/roaring |\n|---|---|---|---|---|---|"
        );
        for (oi, (opname, _)) in ops.iter().enumerate() {
            if times[oi].iter().any(|t| t.is_empty()) {
                for (e, t) in times[oi].iter_mut().enumerate() {
                    if !t.is_empty() {
                        println!("| {opname} | engine {e} | {} |", fmt_time(median(t)));
                    }
                }
                continue;
            }
            let m: Vec<f64> = (0..3).map(|e| median(&mut times[oi][e])).collect();
            let (rc, rr) = (m[0] / m[1], m[0] / m[2]);
            log_sum += rc.ln();
            log_n += 1;
            println!(
                "| {opname} | {} | {} | {} | {rc:.2} | {rr:.2} |",
                fmt_time(m[0]),
                fmt_time(m[1]),
                fmt_time(m[2])
            );
        }
        // Serialized size after each library's run optimization.
        let mut ours = sets.ours.clone();
        let mut cr = sets.cr.clone();
        let mut ro = sets.ro.clone();
        ours.iter_mut().for_each(|b| {
            b.optimize();
        });
        cr.iter_mut().for_each(|b| {
            b.run_optimize();
        });
        ro.iter_mut().for_each(|b| {
            b.optimize();
        });
        let so: usize = ours.iter().map(|b| b.serialized_size()).sum();
        let sp: usize = ours.iter().map(|b| b.portable_size()).sum();
        let sc: usize = cr
            .iter()
            .map(|b| b.get_serialized_size_in_bytes::<croaring::Portable>())
            .sum();
        let sr: usize = ro.iter().map(|b| b.serialized_size()).sum();
        let bpv = |s: usize| 8.0 * s as f64 / total as f64;
        println!(
            "| size, bits/value (native / portable) | {:.3} / {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            bpv(so),
            bpv(sp),
            bpv(sc),
            bpv(sr),
            so as f64 / sc as f64,
            so as f64 / sr as f64
        );
    }
    println!();
    println!(
        "geomean_vs_croaring={:.3}",
        (log_sum / log_n.max(1) as f64).exp()
    );
}
