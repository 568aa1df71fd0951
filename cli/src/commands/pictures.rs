//! Picture and trace options shared by `simulate` and `timeline`: a Gantt
//! chart (SVG/PNG) and a Perfetto trace of a Timeline, limited to chosen ranks.

use crate::exit::user_error;
use clap::Args;
use std::path::PathBuf;
use timeline::Timeline;

#[derive(Debug, Clone, Args)]
pub struct PictureArgs {
    /// Draw the schedule timeline to FILE (.svg or .png): one lane per stage of
    /// pipeline 0 (tensor rank 0) unless --ranks selects others.
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::image_path)]
    pub plot: Option<PathBuf>,
    /// Write a Perfetto / chrome://tracing JSON trace to FILE (all ranks unless --ranks).
    #[arg(long, value_name = "FILE", value_parser = crate::output_file::output_path)]
    pub trace: Option<PathBuf>,
    /// Ranks to draw or trace, e.g. 0,8,16 or 0-7 (comma-separated, ranges allowed).
    #[arg(long, value_name = "LIST", value_parser = parse_ranks)]
    pub ranks: Option<RankList>,
    /// One lane per stream (compute, pipeline sends, data-parallel) instead of one per rank.
    #[arg(long)]
    pub lanes_per_stream: bool,
}

/// The ranks `--ranks` names (one clap value, so clap does not split it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RankList(pub Vec<u32>);

/// The most ranks one `--ranks` list may name (over a million: every GPU of
/// the largest cluster the simulator accepts), so a range cannot ask for gigabytes.
pub const MAX_LISTED_RANKS: u64 = 1 << 20;

pub(crate) fn parse_ranks(text: &str) -> Result<RankList, String> {
    let mut ranks: Vec<u32> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let number = |s: &str| {
            s.trim()
                .parse::<u32>()
                .map_err(|_| format!("'{s}' is not a rank number"))
        };
        match part.split_once('-') {
            Some((lo, hi)) => {
                let (lo, hi) = (number(lo)?, number(hi)?);
                if lo > hi {
                    return Err(format!("range {part} is empty"));
                }
                if ranks.len() as u64 + (hi - lo) as u64 + 1 > MAX_LISTED_RANKS {
                    return Err(format!(
                        "range {part} names more than {MAX_LISTED_RANKS} ranks"
                    ));
                }
                ranks.extend(lo..=hi);
            }
            None => ranks.push(number(part)?),
        }
    }
    if ranks.is_empty() {
        return Err("no ranks given".into());
    }
    Ok(RankList(ranks))
}

impl PictureArgs {
    /// Writes whatever was asked for; returns lines to print.
    pub fn write(&self, timeline: &Timeline) -> anyhow::Result<Vec<String>> {
        let mut notes = Vec::new();
        if let Some(path) = &self.plot {
            let options = reports::TimelineChartOptions {
                ranks: self.ranks.clone().map(|list| list.0),
                lanes_per_stream: self.lanes_per_stream,
                ..reports::TimelineChartOptions::default()
            };
            let summary = reports::render_timeline(timeline, &options, path).map_err(user_error)?;
            notes.push(format!(
                "timeline chart: {} ({} lanes, {} blocks)",
                path.display(),
                summary.lanes,
                summary.blocks
            ));
        }
        if let Some(path) = &self.trace {
            let options = reports::TraceOptions {
                ranks: self.ranks.clone().map(|list| list.0),
            };
            let mut summary = None;
            crate::output_file::write_output(path, |writer| {
                summary = Some(
                    reports::write_perfetto_trace(timeline, &options, writer)
                        .map_err(std::io::Error::other)?,
                );
                Ok(())
            })?;
            let summary = summary.expect("written");
            notes.push(format!(
                "perfetto trace: {} ({} events, {} threads)",
                path.display(),
                summary.events,
                summary.threads
            ));
        }
        Ok(notes)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_ranks;

    #[test]
    fn rank_lists_accept_ranges_and_reject_garbage() {
        assert_eq!(parse_ranks("0,8-10, 3").unwrap().0, vec![0, 8, 9, 10, 3]);
        assert!(parse_ranks("0-4294967295").is_err());
        assert!(parse_ranks("a").is_err());
        assert!(parse_ranks("5-2").is_err());
        assert!(parse_ranks("").is_err());
    }
}
