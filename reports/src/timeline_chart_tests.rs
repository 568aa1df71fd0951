//! Tests of the timeline chart: block counts read back from the SVG,
//! determinism, PNG output with the embedded font, selections and errors.

use super::*;
use crate::fixtures::{one_f_one_b, one_f_one_b_recompute};
use crate::output::render_svg_string;

/// Blocks the chart must draw: one per task per selected rank of its group.
fn expected_blocks(timeline: &Timeline, ranks: &[u32]) -> usize {
    timeline
        .tasks
        .iter()
        .map(|task| {
            timeline.header.groups[task.group as usize]
                .iter()
                .filter(|rank| ranks.contains(rank))
                .count()
        })
        .sum()
}

fn svg(timeline: &Timeline, options: &TimelineChartOptions) -> (ChartSummary, String) {
    let chart = GanttChart::build(timeline, options).unwrap();
    render_svg_string(&chart, (chart.width_px, chart.height_px)).unwrap()
}

fn drawn_blocks(svg: &str) -> usize {
    svg.split("<rect")
        .skip(1)
        .filter(|rect| rect.contains(&format!("opacity=\"{TASK_BLOCK_ALPHA}\"")))
        .count()
}

#[test]
fn svg_is_deterministic_and_has_one_block_per_task_of_the_selected_lanes() {
    let timeline = one_f_one_b(4, 8, 2, 2);
    let options = TimelineChartOptions::default();
    let (summary, first) = svg(&timeline, &options);
    let (_, second) = svg(&timeline, &options);
    assert_eq!(first, second, "same timeline, same bytes");
    let expected = expected_blocks(&timeline, &[0, 4, 8, 12]);
    assert_eq!(
        summary,
        ChartSummary {
            lanes: 4,
            blocks: expected
        }
    );
    assert_eq!(drawn_blocks(&first), expected);
    assert!(first.contains("showing pipeline 0 of 2, tensor rank 0 of 2"));
}

#[test]
fn rank_selection_and_stream_lanes_count_blocks_per_rank() {
    let timeline = one_f_one_b_recompute(4, 8, 2, 2);
    let options = TimelineChartOptions {
        ranks: Some(vec![1, 6, 15]),
        lanes_per_stream: true,
        ..TimelineChartOptions::default()
    };
    let (summary, text) = svg(&timeline, &options);
    // Every stream is used on these ranks: compute, pp_send_next, pp_send_prev, dp.
    assert_eq!(summary.lanes, 3 * 4);
    let expected = expected_blocks(&timeline, &[1, 6, 15]);
    assert_eq!(summary.blocks, expected);
    assert_eq!(drawn_blocks(&text), expected);
    assert!(text.contains("rank 6 · pp_send_prev"));
    assert!(text.contains("showing ranks 1, 6, 15"));
}

#[test]
fn block_count_check_notices_a_missing_block() {
    let timeline = one_f_one_b(4, 8, 1, 1);
    let mut chart = GanttChart::build(&timeline, &TimelineChartOptions::default()).unwrap();
    chart.blocks.pop();
    let (_, text) = render_svg_string(&chart, (chart.width_px, chart.height_px)).unwrap();
    assert_eq!(drawn_blocks(&text), timeline.tasks.len() - 1);
}

#[test]
fn interleaved_blocks_name_their_chunk_and_communication_gets_its_own_band() {
    let mut timeline = one_f_one_b(4, 8, 1, 1);
    timeline.header.layout.chunks = 2;
    for task in &mut timeline.tasks {
        task.chunk = (task.id % 2) as u16;
    }
    let chart = GanttChart::build(&timeline, &TimelineChartOptions::default()).unwrap();
    let forward = chart
        .blocks
        .iter()
        .find(|block| block.kind == TaskKind::Forward)
        .unwrap();
    let task = timeline
        .tasks
        .iter()
        .find(|task| task.kind == TaskKind::Forward)
        .unwrap();
    assert_eq!(
        forward.label.as_deref(),
        Some(format!("{}c{}", task.microbatch.unwrap(), task.chunk).as_str())
    );
    let send = chart
        .blocks
        .iter()
        .find(|block| block.kind == TaskKind::PipelineActivation)
        .unwrap();
    assert_eq!(forward.band, (0.0, COMPUTE_BAND_FRACTION));
    assert!(send.band.0 > forward.band.1 && send.band.1 <= 1.0);
}

#[test]
fn title_comes_from_the_scenario_or_is_generic() {
    let mut timeline = one_f_one_b(4, 8, 1, 1);
    assert!(scenario_title(&timeline).starts_with("test model on test cluster"));
    timeline.header.scenario = serde_json::json!({"model": "gpt"});
    assert_eq!(
        scenario_title(&timeline),
        "clustersim timeline · 4 GPUs · t=1 p=4 d=1"
    );
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let timeline = one_f_one_b(4, 8, 1, 1);
    let dir = std::env::temp_dir();
    let error = render_timeline(
        &timeline,
        &TimelineChartOptions::default(),
        &dir.join("reports-chart.jpeg"),
    )
    .unwrap_err();
    assert!(matches!(error, ReportError::UnsupportedExtension { .. }));
    let mut empty = timeline.clone();
    empty.tasks.clear();
    assert!(matches!(
        GanttChart::build(&empty, &TimelineChartOptions::default()),
        Err(ReportError::EmptySelection { ranks }) if ranks == vec![0, 1, 2, 3]
    ));
    let tiny = TimelineChartOptions {
        height_px: Some(50),
        ..TimelineChartOptions::default()
    };
    assert!(matches!(
        GanttChart::build(&timeline, &tiny),
        Err(ReportError::ImageSize { .. })
    ));
}

/// Width and height from a PNG's IHDR chunk, after checking the signature.
pub(crate) fn png_size_px(bytes: &[u8]) -> (u32, u32) {
    assert!(bytes.len() > 24, "PNG too short: {} bytes", bytes.len());
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "PNG signature");
    assert_eq!(&bytes[12..16], b"IHDR");
    let word =
        |at: usize| u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    (word(16), word(20))
}

#[test]
fn png_renders_with_the_embedded_font_alone() {
    // plotters is built without its system-font feature ("ttf"): text can
    // only come from the registered DejaVu font, so this passing on a
    // machine without fonts is what proves the point.
    let timeline = one_f_one_b(4, 8, 1, 1);
    let path = std::env::temp_dir().join(format!("reports-test-{}.png", std::process::id()));
    let summary = render_timeline(&timeline, &TimelineChartOptions::default(), &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).ok();
    let chart = GanttChart::build(&timeline, &TimelineChartOptions::default()).unwrap();
    assert_eq!(png_size_px(&bytes), (1600, chart.height_px));
    assert_eq!(summary.blocks, timeline.tasks.len());
    // Text was drawn: a chart without glyphs would compress far smaller.
    assert!(bytes.len() > 20_000, "{} bytes", bytes.len());
}

/// Writes sample charts for a person to look at:
/// `REPORTS_SAMPLE_DIR=/tmp/samples cargo test -p reports write_samples`.
#[test]
fn write_samples() {
    let Some(dir) = std::env::var_os("REPORTS_SAMPLE_DIR") else {
        return;
    };
    let dir = std::path::PathBuf::from(dir);
    std::fs::create_dir_all(&dir).unwrap();
    let timeline = one_f_one_b(4, 8, 1, 1);
    let default = TimelineChartOptions::default();
    render_timeline(&timeline, &default, &dir.join("1f1b_p4_m8.png")).unwrap();
    render_timeline(&timeline, &default, &dir.join("1f1b_p4_m8.svg")).unwrap();
    let wide = one_f_one_b_recompute(4, 8, 2, 2);
    render_timeline(&wide, &default, &dir.join("1f1b_recompute_t2_d2.png")).unwrap();
    let per_stream = TimelineChartOptions {
        ranks: Some(vec![0, 1, 4, 12]),
        lanes_per_stream: true,
        ..TimelineChartOptions::default()
    };
    render_timeline(&wide, &per_stream, &dir.join("1f1b_streams.png")).unwrap();
}
