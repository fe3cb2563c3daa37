//! One module per subcommand of `zkpipe-bench`.

pub mod bench;
pub mod loadtest;
pub mod sweep;
