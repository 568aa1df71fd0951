//! `clustersim timeline FILE`: draw or trace a saved Timeline (simulated or measured).

use super::pictures::PictureArgs;
use crate::exit::user_error;
use crate::stdout::outln;
use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
#[command(
    after_help = "Example:\n  clustersim simulate --timeline run.json && clustersim timeline run.json --plot run.svg --trace run.trace.json"
)]
pub struct TimelineArgs {
    /// A Timeline written by `simulate --timeline` (.json or .jsonl, at most 4 GiB).
    pub timeline: PathBuf,
    #[command(flatten)]
    pub pictures: PictureArgs,
}

pub fn run(args: TimelineArgs) -> anyhow::Result<()> {
    let timeline = timeline::Timeline::read(&args.timeline).map_err(user_error)?;
    if args.pictures.plot.is_none() && args.pictures.trace.is_none() {
        return Err(user_error(
            "nothing to do: give --plot FILE and/or --trace FILE",
        ));
    }
    for note in args.pictures.write(&timeline)? {
        outln!("{note}")?;
    }
    Ok(())
}
