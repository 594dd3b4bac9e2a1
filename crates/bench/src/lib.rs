//! roaringd-bench: a load generator for RESP servers, modelled on the
//! TairRoaring benchmark tool (docs: `bench/README.md`).
//!
//! [`options`] parses the command line, [`split`] splits `-command` like
//! redis-cli, [`template`] and [`dist`] render requests with `__RAND__` /
//! `__RAND2__` placeholders, [`runner`] drives one blocking connection per
//! thread, [`histogram`] records latencies, [`report`] prints the results.

pub mod dist;
pub mod histogram;
pub mod options;
pub mod report;
pub mod runner;
pub mod split;
pub mod template;
