//! Loads the real-data bitmaps (zip files of 200 comma-separated text files)
//! from `ROARINGD_DATASETS`, default `../shared/datasets` beside the workspace root.

use std::path::PathBuf;
use std::process::Command;

/// The data-set folder, if it exists.
pub fn dir() -> Option<PathBuf> {
    let p = match std::env::var_os("ROARINGD_DATASETS") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"),
    };
    p.is_dir().then_some(p)
}

/// Names of the zip files (without `.zip`), sorted.
pub fn names() -> Vec<String> {
    let Some(d) = dir() else { return Vec::new() };
    let mut v: Vec<String> = std::fs::read_dir(d)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .filter_map(|n| n.strip_suffix(".zip").map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// The bitmaps of one data set, ordered by the number in each file name; each ascending.
pub fn load(name: &str) -> Vec<Vec<u32>> {
    let zip = dir().expect("data-set folder").join(format!("{name}.zip"));
    let list = Command::new("unzip")
        .arg("-Z1")
        .arg(&zip)
        .output()
        .expect("run unzip -Z1");
    let names: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .map(str::to_owned)
        .filter(|n| !n.ends_with('/'))
        .collect();
    let all = Command::new("unzip")
        .arg("-p")
        .arg(&zip)
        .output()
        .expect("run unzip -p");
    let text = String::from_utf8_lossy(&all.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), names.len(), "one line per file in {name}");
    let index = |n: &str| -> u64 {
        let digits: String = n
            .trim_end_matches(".txt")
            .chars()
            .rev()
            .take_while(|c| c.is_ascii_digit())
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        digits.parse().unwrap_or(0)
    };
    let mut pairs: Vec<(u64, Vec<u32>)> = names
        .iter()
        .zip(lines)
        .map(|(n, l)| {
            let mut v: Vec<u32> = l.split(',').filter_map(|s| s.trim().parse().ok()).collect();
            v.sort_unstable();
            v.dedup();
            (index(n), v)
        })
        .collect();
    pairs.sort_by_key(|p| p.0);
    pairs.into_iter().map(|p| p.1).collect()
}
