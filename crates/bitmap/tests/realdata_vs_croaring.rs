//! Cross-check against CRoaring on the real data sets: every successive
//! pairwise operation (result and count-only forms), the wide union and
//! intersection, and the portable bytes after run optimization.

mod common;
use common::datasets;
use croaring::Portable;
use roaringd_bitmap::Bitmap;

fn same(ours: &Bitmap, theirs: &croaring::Bitmap, what: &str) {
    ours.validate().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!(ours.len(), theirs.cardinality(), "{what}: cardinality");
    assert!(ours.iter().eq(theirs.iter()), "{what}: content");
}

#[test]
fn real_data_sets_match_croaring() {
    let names = datasets::names();
    if names.is_empty() {
        eprintln!("data sets not found; set ROARINGD_DATASETS");
        return;
    }
    for name in names {
        let data = datasets::load(&name);
        let ours: Vec<Bitmap> = data.iter().map(|v| Bitmap::from_sorted(v)).collect();
        let theirs: Vec<croaring::Bitmap> = data.iter().map(|v| croaring::Bitmap::of(v)).collect();
        for i in 0..ours.len() - 1 {
            let (a, b) = (&ours[i], &ours[i + 1]);
            let (x, y) = (&theirs[i], &theirs[i + 1]);
            let w = |op: &str| format!("{name} #{i} {op}");
            same(&a.and(b), &x.and(y), &w("and"));
            same(&a.or(b), &x.or(y), &w("or"));
            same(&a.xor(b), &x.xor(y), &w("xor"));
            same(&a.andnot(b), &x.andnot(y), &w("andnot"));
            assert_eq!(a.and_len(b), x.and_cardinality(y), "{}", w("and_len"));
            assert_eq!(a.or_len(b), x.or_cardinality(y), "{}", w("or_len"));
            assert_eq!(a.xor_len(b), x.xor_cardinality(y), "{}", w("xor_len"));
            assert_eq!(
                a.andnot_len(b),
                x.andnot_cardinality(y),
                "{}",
                w("andnot_len")
            );
            assert_eq!(a.intersects(b), x.intersect(y), "{}", w("intersects"));
        }
        let refs: Vec<&Bitmap> = ours.iter().collect();
        let trefs: Vec<&croaring::Bitmap> = theirs.iter().collect();
        same(
            &Bitmap::union_many(&refs),
            &croaring::Bitmap::fast_or(&trefs),
            &format!("{name} wide union"),
        );
        let mut inter = theirs[0].clone();
        for t in &theirs[1..4] {
            inter.and_inplace(t);
        }
        same(
            &Bitmap::intersection_many(&refs[..4]),
            &inter,
            &format!("{name} 4-way intersection"),
        );

        // After run optimization both choose the same kinds: identical portable bytes.
        for (o, t) in ours.iter().zip(&theirs).step_by(7) {
            let (mut o, mut t) = (o.clone(), t.clone());
            o.optimize();
            t.run_optimize();
            assert_eq!(
                o.serialize_portable(),
                t.serialize::<Portable>(),
                "{name} portable bytes"
            );
            let back = Bitmap::deserialize_portable(&t.serialize::<Portable>()).unwrap();
            assert_eq!(back, o);
        }
    }
}
