//! What reading a framework's configuration gives: the scenario, every
//! argument as it was understood or why it was ignored, and the refusals.

use scenario::ScenarioFile;

/// One argument and what it became in the scenario.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// As written (`--tensor-model-parallel-size 8`).
    pub argument: String,
    /// What it set (`tp = 8`).
    pub meaning: String,
}

/// One argument the scenario does not use, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ignored {
    pub argument: String,
    pub reason: String,
}

/// A framework configuration read as a scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The scenario the configuration describes (a layer: flags still
    /// override it, and it overrides a scenario file).
    pub scenario: ScenarioFile,
    /// The GPUs the launch asks for (torchrun's `--nproc_per_node` ×
    /// `--nnodes`), from which the data parallelism follows; None where the
    /// arguments do not say.
    pub world_size: Option<u32>,
    /// Samples per data-parallel replica when the global batch is left to
    /// follow d (Megatron without `--global-batch-size`, torchtitan's
    /// `global_batch_size = -1`): B = this × d once d is known.
    pub samples_per_replica: Option<u32>,
    pub understood: Vec<Reading>,
    pub ignored: Vec<Ignored>,
}

impl Translation {
    /// The lines a command prints of what it read: each understood argument
    /// with its meaning, then each ignored one with its reason.
    pub fn report(&self, source: &str) -> String {
        let mut text = format!(
            "{source}: {} arguments understood, {} ignored\n",
            self.understood.len(),
            self.ignored.len()
        );
        for reading in &self.understood {
            text.push_str(&format!(
                "  read     {:<44} {}\n",
                reading.argument, reading.meaning
            ));
        }
        for ignored in &self.ignored {
            text.push_str(&format!(
                "  ignored  {:<44} {}\n",
                ignored.argument, ignored.reason
            ));
        }
        text
    }
}

/// Why a configuration cannot be read as a scenario: every problem at once,
/// each naming its argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TranslationError {
    pub source: String,
    pub problems: Vec<String>,
}

impl std::fmt::Display for TranslationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: cannot be simulated as given:", self.source)?;
        for problem in &self.problems {
            write!(f, "\n  - {problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for TranslationError {}
