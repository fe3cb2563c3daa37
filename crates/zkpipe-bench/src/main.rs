//! `zkpipe-bench`: the lab's binary, beside the product `zkpipe`. `bench` proves repeatedly
//! with a key resident and compares reduce schedules A/B; `loadtest` loads a running
//! daemon; `sweep` starts daemons of several configurations (the `zkpipe` binary beside
//! this one) and measures them interleaved over client counts. Their measuring
//! instruments (statistics, charts, waterfall analysis, kernel counters) are in
//! `instruments`. What it shares with `zkpipe` (backend choice, output planning, the
//! client, logging, the allocator) comes from the `zkpipe-cli` library.

mod cli;
mod commands;
mod instruments;

use std::process::ExitCode;

#[global_allocator]
static ALLOCATOR: zkpipe_cli::allocator::Dispatch = zkpipe_cli::allocator::Dispatch;

fn main() -> ExitCode {
    zkpipe_cli::program::main::<cli::Cli>()
}
