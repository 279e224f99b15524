//! The [`Experiment`] trait every study implements, and the [`Analysis`]
//! it makes from its records.

use super::config::{Config, Ctx, Measured};
use super::figure::Figure;
use super::record::LabRecord;
use super::verdict::Finding;
use iolab_bench::error::{BenchError, Result};

/// What an analysis produces from records.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Figures (SVG).
    pub figures: Vec<Figure>,
    /// The key table, plain text.
    pub table: String,
    /// Numeric tests of the study's claims.
    pub findings: Vec<Finding>,
}

/// A named experiment reproducing one study's measurement.
pub trait Experiment: Sync {
    /// Name as `iolab lab run` spells it.
    fn name(&self) -> &'static str;
    /// The studies it reproduces (seed numbers).
    fn study(&self) -> &'static str;
    /// The question it answers, in a few words.
    fn answers(&self) -> &'static str;
    /// Expected time at smoke, quick and full scale on a small machine.
    fn times(&self) -> [&'static str; 3];
    /// The configurations at the context's scale.
    fn configs(&self, ctx: &Ctx) -> Vec<Config>;
    /// Measures a [`Work::Custom`](super::Work::Custom) configuration.
    fn custom(&self, cfg: &Config, _ctx: &Ctx) -> Result<Measured> {
        Err(BenchError::Usage(format!(
            "{}: configuration {} has no custom measurement",
            self.name(),
            cfg.key
        )))
    }
    /// Figures, table and findings from the records (never from anything
    /// else: the findings are computed from the data).
    fn analyse(&self, recs: &[LabRecord]) -> Analysis;
}
