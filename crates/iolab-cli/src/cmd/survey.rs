//! The default command: a survey of the storage under a directory.

use anyhow::Result;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// Arguments of the survey.
#[derive(clap::Args, Debug, Clone)]
pub struct SurveyArgs {
    /// Directory whose storage to measure.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
}

/// Runs the survey.
pub fn run(_a: &SurveyArgs, _stop: &AtomicBool) -> Result<i32> {
    Ok(0)
}
