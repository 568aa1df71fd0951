//! `simulate`'s progress bar for long runs: the engine's count of finished
//! tasks (`engine::progress`) against the run's estimated tasks, on
//! standard error when it is a terminal, then "measuring" once the count
//! stops near the end (the metrics). A thread looks five times a second and
//! draws nothing until the run has taken a second, so most runs (a
//! symmetric one ends in well under a second) show no bar.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use sim::engine::progress::finished_tasks;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a run goes before its bar appears.
const QUIET: Duration = Duration::from_secs(1);

/// How often the bar looks at the count.
const LOOK_EVERY: Duration = Duration::from_millis(200);

/// A bar running beside a simulation until [`TaskProgress::finish`] (or
/// its drop, on an error's way out).
pub struct TaskProgress {
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TaskProgress {
    /// Starts watching a run of about `estimated_tasks` tasks.
    pub fn start(estimated_tasks: u64) -> TaskProgress {
        let done = Arc::new(AtomicBool::new(false));
        let seen_done = Arc::clone(&done);
        let before = finished_tasks();
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut bar: Option<ProgressBar> = None;
            let mut last_seen = 0;
            while !seen_done.load(Ordering::Relaxed) {
                std::thread::park_timeout(LOOK_EVERY);
                if started.elapsed() < QUIET || seen_done.load(Ordering::Relaxed) {
                    continue;
                }
                let bar = bar.get_or_insert_with(|| task_bar(estimated_tasks, started.elapsed()));
                let finished = finished_tasks().saturating_sub(before);
                if finished == last_seen && finished >= estimated_tasks / 10 * 9 {
                    // The tasks are done (to within a step): the metrics run.
                    bar.set_prefix("measuring ");
                    bar.set_length(finished);
                    bar.set_position(finished);
                    continue;
                }
                last_seen = finished;
                bar.set_prefix("simulating");
                // The estimate may fall short of the run (about a tenth for
                // 1T under --contention): the bar then grows ahead of it.
                if finished >= estimated_tasks {
                    bar.set_length(finished + finished / 16);
                }
                bar.set_position(finished);
            }
            if let Some(bar) = bar {
                bar.finish_and_clear();
            }
        });
        TaskProgress {
            done,
            thread: Some(thread),
        }
    }

    /// Stops and clears the bar.
    pub fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            // A panic in the bar's thread is no reason to fail the run.
            let _ = thread.join();
        }
    }
}

impl Drop for TaskProgress {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A bar of about `estimated_tasks`, its clock started `elapsed` ago.
fn task_bar(estimated_tasks: u64, elapsed: Duration) -> ProgressBar {
    // Hidden when stderr is not a terminal.
    let bar = ProgressBar::with_draw_target(Some(estimated_tasks), ProgressDrawTarget::stderr())
        .with_elapsed(elapsed)
        .with_prefix("simulating");
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:24}] {human_pos}/~{human_len} tasks · {elapsed}",
        )
        .expect("valid template")
        .progress_chars("=> "),
    );
    bar
}
