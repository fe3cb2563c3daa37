//! zkpipe-bench's integration tests: the `zkpipe-bench` binary on the committed fixtures,
//! and for `sweep` the daemons it starts from the `zkpipe` binary beside it. One test
//! binary, as zkpipe-cli's suite is (each file linked its own copy of the helpers).

mod bench;
mod cli;
mod common;
mod fleet;
mod retry;
mod stream;
mod sweep;
