//! COMMAND and its subcommands (COUNT INFO DOCS GETKEYS GETKEYSANDFLAGS LIST
//! HELP), generated from the command table in Redis 7.0's reply shapes.

use roaringd_resp::Args;

use crate::command_table::{
    AclCat, CommandSpec, CommandTable, Entry, Flag, KeyFind, KeySpec, KeySpecDoc,
};
use crate::commands::connection::help;
use crate::ctx::Ctx;
use crate::error::CommandError;
use crate::reply::Reply;
use roaringd_compat::glob::glob_match_nocase;

const FLAGS: &[Flag] = &[Flag::Loading, Flag::Stale];
const ACL: &[AclCat] = &[AclCat::Connection];

/// Rows of this family.
pub const COMMANDS: &[CommandSpec] = &[CommandSpec::new("command", -1, command_all)
    .flags(FLAGS)
    .acl(ACL)
    .subcommands(SUBS)
    .doc(
        "Returns detailed information about all commands.",
        "2.8.13",
        "server",
    )];

const SUBS: &[CommandSpec] = &[
    CommandSpec::new("count", 2, count)
        .flags(FLAGS)
        .acl(ACL)
        .doc("Returns a count of commands.", "2.8.13", "server"),
    CommandSpec::new("info", -2, info)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Returns information about one, multiple or all commands.",
            "2.8.13",
            "server",
        ),
    CommandSpec::new("docs", -2, docs)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Returns documentary information about one, multiple or all commands.",
            "7.0.0",
            "server",
        ),
    CommandSpec::new("getkeys", -4, getkeys)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Extracts the key names from an arbitrary command.",
            "2.8.13",
            "server",
        ),
    CommandSpec::new("getkeysandflags", -4, getkeysandflags)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Extracts the key names and access flags for an arbitrary command.",
            "7.0.0",
            "server",
        ),
    CommandSpec::new("list", -2, list)
        .flags(FLAGS)
        .acl(ACL)
        .doc("Returns a list of command names.", "7.0.0", "server"),
    CommandSpec::new("help", 2, command_help)
        .flags(FLAGS)
        .acl(ACL)
        .doc(
            "Returns helpful text about the different subcommands.",
            "5.0.0",
            "server",
        ),
];

fn s(text: &'static str) -> Reply {
    Reply::status(text)
}

fn b(text: &'static str) -> Reply {
    Reply::Static(text.as_bytes())
}

/// The 10-element `COMMAND INFO` array of one entry.
fn info_of(e: &'static Entry) -> Reply {
    let spec = e.spec;
    // Redis's order: every flag up to no_multi, movablekeys, allow_busy.
    let mut flags = Vec::new();
    for f in Flag::ALL {
        if f == Flag::AllowBusy && spec.keys.is_movable() {
            flags.push(s("movablekeys"));
        }
        if spec.has(f) {
            if let Some(n) = f.wire_name() {
                flags.push(s(n));
            }
        }
    }
    let (first, last, step) = spec.keys.legacy_triple();
    let cats = spec.all_acl();
    let acl: Vec<Reply> = AclCat::ALL
        .iter()
        .filter(|c| cats.has(**c))
        .map(|c| s(c.name()))
        .collect();
    Reply::Array(vec![
        Reply::Static(e.full_name.as_bytes()),
        Reply::Integer(i64::from(spec.arity)),
        Reply::Set(flags),
        Reply::Integer(first),
        Reply::Integer(last),
        Reply::Integer(step),
        Reply::Set(acl),
        Reply::Array(Vec::new()),
        key_specs(spec),
        Reply::Array(e.subs.iter().map(info_of).collect()),
    ])
}

fn key_flags(spec: &CommandSpec) -> Reply {
    if let Some(flags) = spec.key_flags {
        return Reply::Set(flags.iter().map(|f| s(f)).collect());
    }
    Reply::Set(if spec.has(Flag::Write) {
        vec![s("OW"), s("update")]
    } else {
        vec![s("RO"), s("access")]
    })
}

fn doc_spec(d: &KeySpecDoc) -> Reply {
    let find = match d.find {
        KeyFind::Range {
            lastkey,
            step,
            limit,
        } => Reply::Map(vec![
            (b("type"), b("range")),
            (
                b("spec"),
                Reply::Map(vec![
                    (b("lastkey"), Reply::Integer(i64::from(lastkey))),
                    (b("keystep"), Reply::Integer(step as i64)),
                    (b("limit"), Reply::Integer(limit as i64)),
                ]),
            ),
        ]),
        KeyFind::KeyNum {
            keynumidx,
            firstkey,
            step,
        } => Reply::Map(vec![
            (b("type"), b("keynum")),
            (
                b("spec"),
                Reply::Map(vec![
                    (b("keynumidx"), Reply::Integer(keynumidx as i64)),
                    (b("firstkey"), Reply::Integer(firstkey as i64)),
                    (b("keystep"), Reply::Integer(step as i64)),
                ]),
            ),
        ]),
    };
    Reply::Map(vec![
        (
            b("flags"),
            Reply::Set(d.flags.iter().map(|f| s(f)).collect()),
        ),
        (
            b("begin_search"),
            Reply::Map(vec![
                (b("type"), b("index")),
                (
                    b("spec"),
                    Reply::Map(vec![(b("index"), Reply::Integer(d.begin_index as i64))]),
                ),
            ]),
        ),
        (b("find_keys"), find),
    ])
}

fn key_specs(spec: &CommandSpec) -> Reply {
    if !spec.key_specs.is_empty() {
        return Reply::Array(spec.key_specs.iter().map(doc_spec).collect());
    }
    let one = |begin: Reply, find: Reply| {
        Reply::Array(vec![Reply::Map(vec![
            (b("flags"), key_flags(spec)),
            (b("begin_search"), begin),
            (b("find_keys"), find),
        ])])
    };
    match spec.keys {
        KeySpec::None => Reply::Array(Vec::new()),
        KeySpec::Range { first, last, step } => one(
            Reply::Map(vec![
                (b("type"), b("index")),
                (
                    b("spec"),
                    Reply::Map(vec![(b("index"), Reply::Integer(first as i64))]),
                ),
            ]),
            Reply::Map(vec![
                (b("type"), b("range")),
                (
                    b("spec"),
                    Reply::Map(vec![
                        (
                            b("lastkey"),
                            Reply::Integer(if last >= 0 {
                                i64::from(last) - first as i64
                            } else {
                                i64::from(last)
                            }),
                        ),
                        (b("keystep"), Reply::Integer(step as i64)),
                        (b("limit"), Reply::Integer(0)),
                    ]),
                ),
            ]),
        ),
        KeySpec::NumKeys { numkeys } => one(
            Reply::Map(vec![
                (b("type"), b("index")),
                (
                    b("spec"),
                    Reply::Map(vec![(b("index"), Reply::Integer(numkeys as i64))]),
                ),
            ]),
            Reply::Map(vec![
                (b("type"), b("keynum")),
                (
                    b("spec"),
                    Reply::Map(vec![
                        (b("keynumidx"), Reply::Integer(0)),
                        (b("firstkey"), Reply::Integer(1)),
                        (b("keystep"), Reply::Integer(1)),
                    ]),
                ),
            ]),
        ),
        KeySpec::Movable(_) => one(
            Reply::Map(vec![
                (b("type"), b("unknown")),
                (b("spec"), Reply::Map(Vec::new())),
            ]),
            Reply::Map(vec![
                (b("type"), b("unknown")),
                (b("spec"), Reply::Map(Vec::new())),
            ]),
        ),
    }
}

/// The entry for `name`: `get`, or a full subcommand name `client|kill`.
fn find(name: &[u8]) -> Option<&'static Entry> {
    CommandTable::get().lookup_full(name)
}

fn command_all(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Array(
        CommandTable::get().entries().iter().map(info_of).collect(),
    ))
}

fn count(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(Reply::Integer(CommandTable::get().len() as i64))
}

fn info(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    if args.remaining() == 0 {
        return command_all(_ctx, args);
    }
    Ok(Reply::Array(
        args.rest()
            .map(|n| find(n).map_or(Reply::Null, info_of))
            .collect(),
    ))
}

fn doc_of(e: &'static Entry) -> Reply {
    let spec = e.spec;
    let mut m = vec![
        (b("summary"), Reply::Static(spec.summary.as_bytes())),
        (b("since"), Reply::Static(spec.since.as_bytes())),
        (b("group"), Reply::Static(spec.group.as_bytes())),
    ];
    if !e.subs.is_empty() {
        m.push((
            b("subcommands"),
            Reply::Map(
                e.subs
                    .iter()
                    .map(|s| (Reply::Static(s.full_name.as_bytes()), doc_of(s)))
                    .collect(),
            ),
        ));
    }
    Reply::Map(m)
}

fn docs(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let entries: Vec<&'static Entry> = if args.remaining() == 0 {
        CommandTable::get().entries().iter().collect()
    } else {
        args.rest().filter_map(find).collect()
    };
    Ok(Reply::Map(
        entries
            .into_iter()
            .map(|e| (Reply::Static(e.full_name.as_bytes()), doc_of(e)))
            .collect(),
    ))
}

/// Resolves the command given as arguments and its key positions.
fn keys_of(args: &mut Args<'_>) -> Result<(&'static Entry, Vec<usize>, usize), CommandError> {
    let base = args.position();
    let name = args.peek().unwrap_or_default();
    let mut e = CommandTable::get()
        .lookup(name)
        .ok_or(CommandError::err("Invalid command specified"))?;
    let argc = args.remaining();
    if !e.subs.is_empty() {
        if let Some(sub) = args.get(base + 1).and_then(|s| e.sub(s)) {
            e = sub;
        }
    }
    if !e.spec.arity_ok(argc) {
        return Err(CommandError::err(
            "Invalid number of arguments specified for command",
        ));
    }
    // Key positions are relative to the command name, which is at `base`.
    let spans_view = *args;
    let mut idx = Vec::new();
    let sub_args = SubArgs {
        args: spans_view,
        base,
    };
    sub_args.extract(e, &mut idx);
    if idx.is_empty() {
        return Err(CommandError::err("The command has no key arguments"));
    }
    Ok((e, idx, base))
}

/// A view of the arguments after `COMMAND GETKEYS` as a request of its own.
struct SubArgs<'a> {
    args: Args<'a>,
    base: usize,
}

impl SubArgs<'_> {
    fn extract(&self, e: &'static Entry, out: &mut Vec<usize>) {
        // The inner request's own argument list, so key specs see index 0
        // as the command name.
        let inner = crate::transaction::OwnedArgs::new(self.args.all().skip(self.base));
        e.spec.keys.extract(&inner.args(), out);
        for i in out.iter_mut() {
            *i += self.base;
        }
    }
}

fn getkeys(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let (_, idx, _) = keys_of(args)?;
    Ok(Reply::Array(
        idx.iter()
            .filter_map(|&i| args.get(i).map(|k| Reply::Bulk(k.to_vec())))
            .collect(),
    ))
}

fn getkeysandflags(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    let (e, idx, _) = keys_of(args)?;
    Ok(Reply::Array(
        idx.iter()
            .filter_map(|&i| {
                args.get(i)
                    .map(|k| Reply::Array(vec![Reply::Bulk(k.to_vec()), key_flags(e.spec)]))
            })
            .collect(),
    ))
}

fn list(_ctx: &mut Ctx<'_>, args: &mut Args<'_>) -> Result<Reply, CommandError> {
    enum Filter {
        None,
        Pattern(Vec<u8>),
        AclCat(Vec<u8>),
        Module,
    }
    let filter = if args.remaining() == 0 {
        Filter::None
    } else {
        if !args.eat_keyword("FILTERBY") || args.remaining() != 2 {
            return Err(CommandError::Syntax);
        }
        if args.eat_keyword("PATTERN") {
            Filter::Pattern(args.next_bytes()?.to_vec())
        } else if args.eat_keyword("ACLCAT") {
            Filter::AclCat(args.next_bytes()?.to_ascii_lowercase())
        } else if args.eat_keyword("MODULE") {
            Filter::Module
        } else {
            return Err(CommandError::Syntax);
        }
    };
    let keep = |e: &Entry| match &filter {
        Filter::None => true,
        Filter::Module => false,
        Filter::Pattern(p) => glob_match_nocase(p, e.full_name.as_bytes()),
        Filter::AclCat(c) => {
            let cats = e.spec.all_acl();
            AclCat::ALL
                .iter()
                .any(|a| cats.has(*a) && &a.name().as_bytes()[1..] == c.as_slice())
        }
    };
    let mut out = Vec::new();
    for e in CommandTable::get().entries() {
        if keep(e) {
            out.push(Reply::Static(e.full_name.as_bytes()));
        }
        for s in &e.subs {
            if keep(s) {
                out.push(Reply::Static(s.full_name.as_bytes()));
            }
        }
    }
    Ok(Reply::Array(out))
}

fn command_help(_ctx: &mut Ctx<'_>, _args: &mut Args<'_>) -> Result<Reply, CommandError> {
    Ok(help(
        "COMMAND",
        &[
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
        ],
    ))
}
