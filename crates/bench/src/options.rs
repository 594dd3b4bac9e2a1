//! The command line: the original tool's single-dash flags (`-h` is the
//! host, as there), plus `-P`, `-dist`, `-json` and a few conveniences.
//! Flags take their value as the next argument or after `=`; a double dash
//! (`--port`) is accepted too. `-help` / `--help` print [`USAGE`].

use std::time::Duration;

use crate::dist::Distribution;
use crate::split::split_args;

/// Usage text printed by `--help`.
pub const USAGE: &str = "\
roaringd-bench: load generator for RESP servers (roaringd, Redis)

Usage: roaringd-bench [flags]

  -h HOST          server host (127.0.0.1)
  -port PORT       server port (6379)
  -a PASSWORD      AUTH on every connection (redis-benchmark's -a): `AUTH PASSWORD`,
                   or `AUTH USER PASSWORD` with -user. Without -user, a value
                   `user:password` is tried first as `AUTH user password`, then
                   whole as `AUTH user:password` (a default-user password)
  -user USER       ACL user for -a (redis-benchmark's --user); needs -a
  -d SECONDS       run for this long (30)
  -c N             send exactly N requests, then stop (overrides -d)
  -p N             connections, one thread each (4)
  -r N             __RAND__ draws from [0, N) (100000000)
  -r2 N            __RAND2__ draws from [0, N) (100000000)
  -command LINE    command with placeholders, split like redis-cli
                   (\"TR.GETBIT foo-__RAND__\"); every occurrence of __RAND__ /
                   __RAND2__ is replaced by its own unpadded decimal draw
  -batching N      wrap N commands in MULTI/EXEC; MULTI and the N commands are
                   sent untimed, the EXEC round trip is timed; a request is one
                   transaction
  -P N             plain pipelining: N commands per write, N replies read; each
                   command is a request and gets the window's round trip
  -dist D          uniform | zipf (uniform)
  -zipf-s S        zipf exponent (0.99)
  -seed N          base random seed (default: from the clock)
  -json            print the final report as one JSON object on stdout
  -q               no progress lines
  -help, --help    this text

A request is one command, or one MULTI/EXEC transaction with -batching.
Progress lines go to stderr once a second; the final report goes to stdout.
Exit status: 0 if every request got a non-error reply, 1 if some replies were
errors or a connection failed, 2 for a bad command line.
";

/// Flags that take a value.
const VALUED: &[&str] = &[
    "h", "port", "a", "user", "d", "c", "p", "r", "r2", "command", "batching", "P", "dist",
    "zipf-s", "seed",
];

/// When to stop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// After this many requests in all.
    Requests(u64),
    /// After this long.
    Duration(Duration),
}

/// AUTH credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// The `-user` given, if any.
    pub user: Option<String>,
    /// The `-a` value.
    pub password: String,
}

impl Auth {
    /// The AUTH commands to try, in order, until one succeeds: with a user,
    /// `AUTH user password`; without, `AUTH password`, preceded by
    /// `AUTH u p` when the password reads `u:p`.
    pub fn attempts(&self) -> Vec<Vec<&str>> {
        match (&self.user, self.password.split_once(':')) {
            (Some(u), _) => vec![vec!["AUTH", u, &self.password]],
            (None, Some((u, p))) => vec![vec!["AUTH", u, p], vec!["AUTH", &self.password]],
            (None, None) => vec![vec!["AUTH", &self.password]],
        }
    }
}

/// Everything the command line sets.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Server host.
    pub host: String,
    /// Server port.
    pub port: u16,
    /// Credentials, if any.
    pub auth: Option<Auth>,
    /// When to stop.
    pub stop: Stop,
    /// Connections (= worker threads).
    pub connections: usize,
    /// Range of `__RAND__`.
    pub r: u64,
    /// Range of `__RAND2__`.
    pub r2: u64,
    /// The command line as given.
    pub command_line: String,
    /// The command, split.
    pub command: Vec<Vec<u8>>,
    /// Commands per MULTI/EXEC (0: no transactions).
    pub batching: usize,
    /// Commands per pipelined write (1: no pipelining).
    pub pipeline: usize,
    /// Placeholder distribution.
    pub dist: Distribution,
    /// Base seed; worker `i` uses `seed + i`.
    pub seed: u64,
    /// JSON report.
    pub json: bool,
    /// No progress lines.
    pub quiet: bool,
}

impl Default for Options {
    fn default() -> Self {
        let command_line = "TR.GETBIT foo-__RAND__".to_string();
        Options {
            host: "127.0.0.1".into(),
            port: 6379,
            auth: None,
            stop: Stop::Duration(Duration::from_secs(30)),
            connections: 4,
            r: 100_000_000,
            r2: 100_000_000,
            command: split_args(&command_line).unwrap_or_default(),
            command_line,
            batching: 0,
            pipeline: 1,
            dist: Distribution::Uniform,
            seed: 0,
            json: false,
            quiet: false,
        }
    }
}

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Parsed {
    /// Run with these options.
    Run(Box<Options>),
    /// Print [`USAGE`] and exit 0.
    Help,
}

fn number<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.parse()
        .map_err(|_| format!("{flag}: `{v}` is not a valid number"))
}

fn positive<T: std::str::FromStr + PartialOrd + Default>(flag: &str, v: &str) -> Result<T, String> {
    let n: T = number(flag, v)?;
    if n <= T::default() {
        return Err(format!("{flag}: must be at least 1"));
    }
    Ok(n)
}

impl Options {
    /// Parses the arguments after the program name. `default_seed` is used
    /// unless `-seed` is given.
    ///
    /// # Errors
    /// A message naming the bad flag or value.
    pub fn parse<I, S>(args: I, default_seed: u64) -> Result<Parsed, String>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut o = Options {
            seed: default_seed,
            ..Options::default()
        };
        let mut zipf_s = 0.99f64;
        let mut zipf = false;
        let mut duration = 30.0f64;
        let mut requests = None;
        let mut user = None;
        let mut args = args.into_iter().map(Into::into);
        while let Some(arg) = args.next() {
            let stripped = arg
                .strip_prefix("--")
                .or_else(|| arg.strip_prefix('-'))
                .ok_or_else(|| format!("unexpected argument `{arg}` (flags start with -)"))?;
            let (flag, inline) = match stripped.split_once('=') {
                Some((f, v)) => (f.to_string(), Some(v.to_string())),
                None => (stripped.to_string(), None),
            };
            match flag.as_str() {
                "help" => return Ok(Parsed::Help),
                "json" => o.json = true,
                "q" => o.quiet = true,
                name if !VALUED.contains(&name) => return Err(format!("unknown flag -{flag}")),
                _ => {
                    let v = match inline {
                        Some(v) => v,
                        None => args
                            .next()
                            .ok_or_else(|| format!("-{flag} needs a value"))?,
                    };
                    let f = format!("-{flag}");
                    match flag.as_str() {
                        "h" => o.host = v,
                        "port" => o.port = number(&f, &v)?,
                        "a" => {
                            o.auth = Some(Auth {
                                user: None,
                                password: v,
                            })
                        }
                        "user" => user = Some(v),
                        "d" => {
                            duration = number(&f, &v)?;
                            if !(duration.is_finite() && duration > 0.0) {
                                return Err("-d: must be a positive number of seconds".into());
                            }
                        }
                        "c" => requests = Some(positive::<u64>(&f, &v)?),
                        "p" => o.connections = positive(&f, &v)?,
                        "r" => o.r = positive(&f, &v)?,
                        "r2" => o.r2 = positive(&f, &v)?,
                        "command" => {
                            o.command = split_args(&v).map_err(|e| format!("-command: {e}"))?;
                            if o.command.is_empty() {
                                return Err("-command: empty command".into());
                            }
                            o.command_line = v;
                        }
                        "batching" => o.batching = positive(&f, &v)?,
                        "P" => o.pipeline = positive(&f, &v)?,
                        "dist" => {
                            zipf = match v.as_str() {
                                "uniform" => false,
                                "zipf" => true,
                                _ => return Err(format!("-dist: `{v}` is not uniform or zipf")),
                            }
                        }
                        "zipf-s" => {
                            zipf_s = number(&f, &v)?;
                            if !(zipf_s.is_finite() && zipf_s > 0.0) {
                                return Err("-zipf-s: must be a positive number".into());
                            }
                        }
                        "seed" => o.seed = number(&f, &v)?,
                        _ => return Err(format!("unknown flag -{flag}")),
                    }
                }
            }
        }
        if user.is_some() {
            let auth = o.auth.as_mut().ok_or("-user needs -a (the password)")?;
            auth.user = user;
        }
        if o.batching > 0 && o.pipeline > 1 {
            return Err("-batching and -P cannot be combined".into());
        }
        o.dist = if zipf {
            Distribution::Zipf(zipf_s)
        } else {
            Distribution::Uniform
        };
        o.stop = match requests {
            Some(n) => Stop::Requests(n),
            None => Stop::Duration(Duration::from_secs_f64(duration)),
        };
        Ok(Parsed::Run(Box::new(o)))
    }

    /// Commands per request: `batching`, or 1.
    pub fn commands_per_request(&self) -> usize {
        self.batching.max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, String> {
        match Options::parse(args.iter().copied(), 7)? {
            Parsed::Run(o) => Ok(*o),
            Parsed::Help => Err("help".into()),
        }
    }

    #[test]
    fn defaults_match_the_original_tool() {
        let o = parse(&[]).unwrap();
        assert_eq!(o.host, "127.0.0.1");
        assert_eq!(o.port, 6379);
        assert_eq!(o.stop, Stop::Duration(Duration::from_secs(30)));
        assert_eq!(o.connections, 4);
        assert_eq!((o.r, o.r2), (100_000_000, 100_000_000));
        assert_eq!(o.command, [b"TR.GETBIT".to_vec(), b"foo-__RAND__".to_vec()]);
        assert_eq!((o.batching, o.pipeline, o.seed), (0, 1, 7));
        assert_eq!(o.dist, Distribution::Uniform);
    }

    #[test]
    fn every_flag_is_parsed() {
        let o = parse(&[
            "-h",
            "10.0.0.1",
            "-port",
            "7000",
            "-a",
            "alice:s3:cret",
            "-c",
            "500",
            "-d",
            "5",
            "-p",
            "20",
            "-r",
            "10",
            "-r2=3",
            "-command",
            "SET 'k __RAND__' v",
            "-batching",
            "10",
            "-dist",
            "zipf",
            "-zipf-s",
            "1.1",
            "-seed",
            "99",
            "--json",
            "-q",
        ])
        .unwrap();
        assert_eq!(o.host, "10.0.0.1");
        assert_eq!(o.port, 7000);
        assert_eq!(
            o.auth.as_ref().map(Auth::attempts),
            Some(vec![
                vec!["AUTH", "alice", "s3:cret"],
                vec!["AUTH", "alice:s3:cret"]
            ])
        );
        assert_eq!(o.stop, Stop::Requests(500), "-c overrides -d");
        assert_eq!(o.connections, 20);
        assert_eq!((o.r, o.r2), (10, 3));
        assert_eq!(
            o.command,
            [b"SET".to_vec(), b"k __RAND__".to_vec(), b"v".to_vec()]
        );
        assert_eq!(o.batching, 10);
        assert_eq!(o.dist, Distribution::Zipf(1.1));
        assert_eq!(o.seed, 99);
        assert!(o.json && o.quiet);
    }

    #[test]
    fn user_flag_sends_acl_auth_with_the_whole_password() {
        for flag in ["-user", "--user"] {
            let o = parse(&[flag, "bob", "-a", "x:y"]).unwrap();
            assert_eq!(
                o.auth.as_ref().map(Auth::attempts),
                Some(vec![vec!["AUTH", "bob", "x:y"]])
            );
        }
        assert!(
            Options::parse(["-user", "bob"], 0).is_err(),
            "-user needs -a"
        );
    }

    #[test]
    fn bare_password_has_no_user() {
        let o = parse(&["-a", "secret"]).unwrap();
        assert_eq!(
            o.auth,
            Some(Auth {
                user: None,
                password: "secret".into()
            })
        );
    }

    #[test]
    fn help_flags_ask_for_usage() {
        for flag in ["-help", "--help"] {
            assert_eq!(Options::parse([flag], 0), Ok(Parsed::Help));
        }
    }

    #[test]
    fn bad_command_lines_are_errors() {
        for args in [
            &["-p", "0"][..],
            &["-c", "x"],
            &["-port", "70000"],
            &["-r", "0"],
            &["-d", "-1"],
            &["-dist", "normal"],
            &["-command", "SET \"k"],
            &["-command", "  "],
            &["-batching", "2", "-P", "2"],
            &["-bogus", "1"],
            &["-port"],
            &["stray"],
        ] {
            assert!(parse(args).is_err(), "{args:?} accepted");
        }
    }
}
