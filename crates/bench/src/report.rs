//! Rendering a run: the per-second progress line, the final text report
//! (counts, QPS, latency summary, log-bucket histogram as text bars) and the
//! same figures as one JSON object.

use std::fmt::Write;

use crate::dist::Distribution;
use crate::options::{Options, Stop};
use crate::runner::{Outcome, Progress};

/// Width of the longest histogram bar, in characters.
const BAR_WIDTH: usize = 40;

fn ms(ns: f64) -> f64 {
    ns / 1e6
}

/// The progress line for one sample.
pub fn progress_line(p: &Progress) -> String {
    format!(
        "[{:>4.0}s] requests: {:>10}  qps: {:>10.0}  avg: {:.3} ms",
        p.elapsed.as_secs_f64(),
        p.requests,
        p.qps,
        ms(p.avg_ns)
    )
}

fn dist_name(d: Distribution) -> String {
    match d {
        Distribution::Uniform => "uniform".into(),
        Distribution::Zipf(s) => format!("zipf(s={s})"),
    }
}

/// The one-line description of the run printed before it starts.
pub fn header(opts: &Options) -> String {
    let stop = match opts.stop {
        Stop::Requests(n) => format!("{n} requests"),
        Stop::Duration(d) => format!("{} s", d.as_secs_f64()),
    };
    let mode = if opts.batching > 0 {
        format!(", MULTI/EXEC batches of {}", opts.batching)
    } else if opts.pipeline > 1 {
        format!(", pipeline {}", opts.pipeline)
    } else {
        String::new()
    };
    format!(
        "roaringd-bench: {}:{}, {} connections, {stop}{mode}, command {:?} (r={}, r2={}, {})",
        opts.host,
        opts.port,
        opts.connections,
        opts.command_line,
        opts.r,
        opts.r2,
        dist_name(opts.dist)
    )
}

/// The final report as text.
pub fn text(opts: &Options, o: &Outcome) -> String {
    let h = &o.latency;
    let mut s = String::new();
    let secs = o.elapsed.as_secs_f64();
    let _ = writeln!(s, "requests:     {}", o.requests);
    if opts.batching > 0 {
        let _ = writeln!(
            s,
            "commands:     {} ({:.1}/s inside transactions)",
            o.commands,
            if secs > 0.0 {
                o.commands as f64 / secs
            } else {
                0.0
            }
        );
    }
    let _ = writeln!(s, "errors:       {}", o.errors);
    for e in &o.error_samples {
        let _ = writeln!(s, "  {e}");
    }
    if o.errors > o.error_samples.len() as u64 {
        let _ = writeln!(
            s,
            "  ... ({} more)",
            o.errors - o.error_samples.len() as u64
        );
    }
    if !o.failures.is_empty() {
        let _ = writeln!(s, "failed connections: {}", o.failures.len());
        for f in &o.failures {
            let _ = writeln!(s, "  {f}");
        }
    }
    let _ = writeln!(s, "duration:     {secs:.3} s");
    let _ = writeln!(s, "QPS:          {:.1}", o.qps());
    let _ = writeln!(
        s,
        "latency (ms): avg {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}",
        ms(h.mean()),
        ms(h.quantile(0.5) as f64),
        ms(h.quantile(0.9) as f64),
        ms(h.quantile(0.99) as f64),
        ms(h.quantile(0.999) as f64),
        ms(h.max() as f64)
    );
    let _ = writeln!(
        s,
        "              min {:.3}  stddev {:.3}",
        ms(h.min() as f64),
        ms(h.stddev())
    );
    let bins = h.log2_bins();
    if !bins.is_empty() {
        let _ = writeln!(s, "latency histogram (ms, one row per power of two):");
        let top = bins.iter().map(|b| b.1).max().unwrap_or(1).max(1);
        let mut cumulative = 0u64;
        for (upper, count) in bins {
            cumulative += count;
            let len = ((count as f64 / top as f64) * BAR_WIDTH as f64).round() as usize;
            let len = if count > 0 { len.max(1) } else { 0 };
            let _ = writeln!(
                s,
                "  < {:>9.3} |{:<width$}| {:>10} {:>6.2}% {:>7.2}%",
                ms(upper as f64),
                "#".repeat(len),
                count,
                100.0 * count as f64 / h.count() as f64,
                100.0 * cumulative as f64 / h.count() as f64,
                width = BAR_WIDTH
            );
        }
    }
    s
}

fn json_string(out: &mut String, text: &str) {
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn json_strings(out: &mut String, items: &[String]) {
    out.push('[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json_string(out, item);
    }
    out.push(']');
}

/// A finite number as JSON (non-finite numbers become 0).
fn num(x: f64) -> String {
    if x.is_finite() {
        format!("{x}")
    } else {
        "0".into()
    }
}

/// The final report as one JSON object (no trailing newline). Latencies are
/// in milliseconds; `histogram` lists the power-of-two rows as
/// `{"lt_ms": upper bound, "count": n}`.
pub fn json(opts: &Options, o: &Outcome) -> String {
    let h = &o.latency;
    let secs = o.elapsed.as_secs_f64();
    let mut s = String::from("{");
    s.push_str("\"host\":");
    json_string(&mut s, &opts.host);
    let _ = write!(
        s,
        ",\"port\":{},\"connections\":{}",
        opts.port, opts.connections
    );
    s.push_str(",\"command\":");
    json_string(&mut s, &opts.command_line);
    let _ = write!(
        s,
        ",\"r\":{},\"r2\":{},\"dist\":\"{}\",\"batching\":{},\"pipeline\":{}",
        opts.r,
        opts.r2,
        dist_name(opts.dist),
        opts.batching,
        opts.pipeline
    );
    let _ = write!(
        s,
        ",\"requests\":{},\"commands\":{},\"errors\":{}",
        o.requests, o.commands, o.errors
    );
    s.push_str(",\"error_samples\":");
    json_strings(&mut s, &o.error_samples);
    s.push_str(",\"failures\":");
    json_strings(&mut s, &o.failures);
    let _ = write!(
        s,
        ",\"elapsed_s\":{},\"qps\":{},\"commands_per_s\":{}",
        num(secs),
        num(o.qps()),
        num(if secs > 0.0 {
            o.commands as f64 / secs
        } else {
            0.0
        })
    );
    let _ = write!(
        s,
        ",\"latency_ms\":{{\"avg\":{},\"min\":{},\"p50\":{},\"p90\":{},\"p99\":{},\"p99_9\":{},\"max\":{},\"stddev\":{}}}",
        num(ms(h.mean())),
        num(ms(h.min() as f64)),
        num(ms(h.quantile(0.5) as f64)),
        num(ms(h.quantile(0.9) as f64)),
        num(ms(h.quantile(0.99) as f64)),
        num(ms(h.quantile(0.999) as f64)),
        num(ms(h.max() as f64)),
        num(ms(h.stddev()))
    );
    s.push_str(",\"histogram\":[");
    for (i, (upper, count)) in h.log2_bins().into_iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        let _ = write!(
            s,
            "{{\"lt_ms\":{},\"count\":{count}}}",
            num(ms(upper as f64))
        );
    }
    s.push_str("]}");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Histogram;
    use std::time::Duration;

    fn outcome() -> Outcome {
        let mut latency = Histogram::new();
        for v in [100_000u64, 200_000, 210_000, 5_000_000] {
            latency.record(v);
        }
        Outcome {
            requests: 4,
            commands: 4,
            errors: 7,
            error_samples: vec!["(error) ERR \"quoted\"\n".into()],
            failures: vec![],
            elapsed: Duration::from_secs(2),
            latency,
        }
    }

    #[test]
    fn text_report_has_every_figure_and_bars() {
        let t = text(&Options::default(), &outcome());
        for needle in [
            "requests:     4",
            "errors:       7",
            "... (6 more)",
            "QPS:          2.0",
            "p99.9",
            "max 5.000",
            "|#",
        ] {
            assert!(t.contains(needle), "missing {needle:?} in\n{t}");
        }
    }

    #[test]
    fn json_report_escapes_strings() {
        let j = json(&Options::default(), &outcome());
        assert!(j.starts_with('{') && j.ends_with('}'));
        assert!(
            j.contains(r#""error_samples":["(error) ERR \"quoted\"\n"]"#),
            "{j}"
        );
        assert!(j.contains("\"requests\":4,"));
        assert!(j.contains("\"qps\":2,"));
    }
}
