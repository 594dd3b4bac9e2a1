//! Redis's own rules that several crates must follow to the byte, and
//! nothing else: glob matching ([`glob`]: `stringmatchlen`, for KEYS, SCAN
//! MATCH, CONFIG GET, COMMAND LIST FILTERBY PATTERN and ACL key patterns)
//! and numbers in arguments and stored strings ([`number`]: `string2ll`,
//! `string2d`, and INCRBYFLOAT's `string2ld` with exact x87 `long double`
//! arithmetic in [`longdouble`]). One implementation of each rule for the
//! whole workspace.
//!
//! Why a crate of its own, without dependencies: the wire format
//! (`roaringd-resp`) reads integers and floats in request arguments and
//! RESP headers; the store reads the same integers in stored values (INCR,
//! HINCRBY, set members that are integers), adds floats for INCRBYFLOAT
//! and matches globs (KEYS, SCAN, SSCAN, HSCAN); the server matches globs
//! in ACL and CONFIG. Kept in `resp`, the rules would make the store depend
//! on the wire format; kept in `store`, they would make the load generator
//! (`roaringd-bench`, which needs `resp` only) pull in the store and fjall.
//! A leaf crate keeps each rule single and the workspace's dependency rule
//! (a crate depends only on the crates below it) intact.

pub mod glob;
pub mod longdouble;
pub mod number;
