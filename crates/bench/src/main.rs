//! `roaringd-bench`: parse the command line, run, print. See `bench/README.md`.

use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use roaringd_bench::options::{Options, Parsed, USAGE};
use roaringd_bench::{report, runner};

fn main() -> ExitCode {
    let seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let opts = match Options::parse(std::env::args().skip(1), seed) {
        Ok(Parsed::Run(o)) => o,
        Ok(Parsed::Help) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("roaringd-bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if !opts.json {
        println!("{}", report::header(&opts));
    }
    let quiet = opts.quiet;
    let outcome = runner::run(&opts, |p| {
        if !quiet {
            eprintln!("{}", report::progress_line(&p));
        }
    });
    if opts.json {
        println!("{}", report::json(&opts, &outcome));
    } else {
        print!("{}", report::text(&opts, &outcome));
    }
    if outcome.errors > 0 || !outcome.failures.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
