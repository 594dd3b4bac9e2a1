//! Real data: every bitmap of `../shared/datasets/census1881.zip` loaded as
//! a key (TR.SETBITS), then TR.BITOP / TR.BITOPCARD / TR.JACCARD /
//! TR.CONTAINS on successive pairs and a 200-key OR / AND, each checked
//! against the `croaring` crate; TR.STAT cardinality and sum, TR.EXPORT
//! bytes read back by croaring. Skips (with a message) when the data set or
//! `unzip` is not available.

use std::path::PathBuf;
use std::process::Command;

use croaring::Bitmap as CBitmap;
use roaringd_testkit::{Client, Frame, TestServer};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_roaringd")
}

/// The data set's bitmaps, in file order, or `None` when unavailable.
fn census() -> Option<Vec<Vec<u32>>> {
    let zip =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets/census1881.zip");
    if !zip.exists() {
        eprintln!("skipping: {} not found", zip.display());
        return None;
    }
    let dir = tempfile::tempdir().ok()?;
    let st = Command::new("unzip")
        .arg("-q")
        .arg(&zip)
        .arg("-d")
        .arg(dir.path())
        .status();
    if !st.is_ok_and(|s| s.success()) {
        eprintln!("skipping: unzip failed or is not installed");
        return None;
    }
    let mut files: Vec<PathBuf> = walk(dir.path());
    // Order by the number in `census1881.csvN.txt`.
    files.sort_by_key(|p| {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        name.rsplit("csv")
            .next()
            .and_then(|t| t.trim_end_matches(".txt").parse::<u32>().ok())
            .unwrap_or(u32::MAX)
    });
    let out = files
        .iter()
        .map(|f| {
            std::fs::read_to_string(f)
                .unwrap()
                .split(',')
                .filter_map(|t| t.trim().parse::<u32>().ok())
                .collect()
        })
        .collect();
    Some(out)
}

fn walk(d: &std::path::Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(d).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "txt") {
            out.push(p);
        }
    }
    out
}

fn int(c: &mut Client, args: &[&str]) -> i64 {
    match c.call(args).unwrap() {
        Frame::Integer(n) => n,
        f => panic!("{args:?}: {f:?}"),
    }
}

fn load(c: &mut Client, key: &str, vals: &[u32]) {
    for chunk in vals.chunks(10_000) {
        let mut args: Vec<String> = vec!["TR.SETBITS".into(), key.into()];
        args.extend(chunk.iter().map(u32::to_string));
        assert!(matches!(c.call(&args).unwrap(), Frame::Integer(_)));
    }
}

#[test]
fn census1881_setops_match_croaring() {
    let Some(sets) = census() else { return };
    assert_eq!(sets.len(), 200, "census1881 holds 200 bitmaps");
    let s = TestServer::start_with(bin(), &[]);
    let mut c = s.client();
    let cb: Vec<CBitmap> = sets.iter().map(|v| CBitmap::of(v)).collect();
    for (i, v) in sets.iter().enumerate() {
        load(&mut c, &format!("c{i}"), v);
    }
    for (i, b) in cb.iter().enumerate() {
        let k = format!("c{i}");
        assert_eq!(
            int(&mut c, &["TR.BITCOUNT", &k]) as u64,
            b.cardinality(),
            "{k}"
        );
        let Frame::Bulk(stat) = c.call(&["TR.STAT", &k]).unwrap() else {
            panic!()
        };
        let sum: u64 = b.iter().map(u64::from).sum();
        let text = String::from_utf8(stat).unwrap();
        assert!(
            text.contains(&format!("sum value: {sum}\r\n")),
            "{k}: {text}"
        );
    }
    for i in 0..cb.len() - 1 {
        let (a, b) = (format!("c{i}"), format!("c{}", i + 1));
        let (x, y) = (&cb[i], &cb[i + 1]);
        // Every result goes to the same destination, so most overwrite the
        // previous one in place (only the containers that changed are
        // written); each stored result must equal croaring's.
        for (op, want) in [
            ("AND", x & y),
            ("OR", x | y),
            ("XOR", x ^ y),
            ("DIFF", x - y),
        ] {
            assert_eq!(
                int(&mut c, &["TR.BITOPCARD", op, &a, &b]) as u64,
                want.cardinality(),
                "{op} {a} {b}"
            );
            assert_eq!(
                int(&mut c, &["TR.BITOP", "dest", op, &a, &b]) as u64,
                want.cardinality(),
                "{op} {a} {b}"
            );
            let Frame::Bulk(bytes) = c.call(&["TR.EXPORT", "dest"]).unwrap() else {
                panic!()
            };
            let got = CBitmap::try_deserialize::<croaring::Portable>(&bytes).expect("portable");
            assert_eq!(got, want, "{op} {a} {b}");
        }
        let Frame::Bulk(j) = c.call(&["TR.JACCARD", &a, &b]).unwrap() else {
            panic!()
        };
        let j: f64 = String::from_utf8(j).unwrap().parse().unwrap();
        let want = x.and_cardinality(y) as f64 / x.or_cardinality(y) as f64;
        assert_eq!(j, want, "JACCARD {a} {b}");
        let sub = x.is_subset(y);
        assert_eq!(
            int(&mut c, &["TR.CONTAINS", &a, &b]) == 1,
            sub,
            "CONTAINS {a} {b}"
        );
        let and = x & y;
        load(&mut c, "and", &and.to_vec());
        assert_eq!(int(&mut c, &["TR.CONTAINS", "and", &a]), 1);
        c.call(&["DEL", "and"]).unwrap();
    }
    let keys: Vec<String> = (0..cb.len()).map(|i| format!("c{i}")).collect();
    let refs: Vec<&CBitmap> = cb.iter().collect();
    let union = CBitmap::fast_or(&refs);
    let mut args: Vec<&str> = vec!["TR.BITOP", "all", "OR"];
    args.extend(keys.iter().map(String::as_str));
    assert_eq!(int(&mut c, &args) as u64, union.cardinality());
    args[2] = "XOR";
    let xor = CBitmap::fast_xor(&refs);
    assert_eq!(int(&mut c, &args) as u64, xor.cardinality());
    let mut card: Vec<&str> = vec!["TR.BITOPCARD", "AND"];
    card.extend(keys.iter().take(3).map(String::as_str));
    let and3 = &(&cb[0] & &cb[1]) & &cb[2];
    assert_eq!(int(&mut c, &card) as u64, and3.cardinality());
    args[2] = "OR";
    assert_eq!(int(&mut c, &args) as u64, union.cardinality());
    let Frame::Bulk(bytes) = c.call(&["TR.EXPORT", "all"]).unwrap() else {
        panic!()
    };
    let got = CBitmap::try_deserialize::<croaring::Portable>(&bytes).expect("portable");
    assert_eq!(got, union);
}
