//! RESP2/RESP3 wire format, shared by the server and the load generator.
//!
//! Server side: [`request`] parses requests (multibulk and inline) with
//! Redis's limits, [`reply`] encodes replies for protocol 2 or 3, [`args`]
//! is a cursor over a request's arguments. Client side: [`frame`] decodes
//! any reply, [`command`] encodes requests.
pub mod client;
pub mod command;
pub mod frame;

pub mod args;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod reply;
pub mod request;

pub use args::{ArgError, Args, Span};
pub use reply::{Protocol, ReplyEncoder};
pub use request::{Limits, ProtocolError, RequestParser};
