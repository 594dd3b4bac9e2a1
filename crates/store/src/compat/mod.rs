//! Redis's own rules that the store must follow to the byte, apart from
//! its storage: glob matching ([`glob`], `stringmatchlen`), numbers in
//! strings ([`number`], `string2ll` / `string2ld`) and `long double`
//! arithmetic for INCRBYFLOAT ([`longdouble`]).

pub mod glob;
pub mod longdouble;
pub mod number;
