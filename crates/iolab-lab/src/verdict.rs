//! Findings: each study's claim as a numeric test with a tolerance. The
//! verdict comes from the range the repeats allow: reproduced when the
//! whole range passes, not reproduced when the whole range fails,
//! inconclusive when it straddles the threshold (or data is missing).

use serde::{Deserialize, Serialize};
use std::fmt;

/// The outcome of a finding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The claim holds on this machine.
    Reproduced,
    /// The claim does not hold.
    NotReproduced,
    /// The repeats disagree (or the data is missing).
    Inconclusive,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Reproduced => "reproduced",
            Verdict::NotReproduced => "not reproduced",
            Verdict::Inconclusive => "inconclusive",
        })
    }
}

/// One claim tested on the records.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// Experiment name.
    pub experiment: String,
    /// The test, with its tolerance.
    pub claim: String,
    /// Outcome.
    pub verdict: Verdict,
    /// The numbers that decided it.
    pub numbers: String,
}

impl Finding {
    /// A finding.
    pub fn new(
        experiment: &str,
        claim: impl Into<String>,
        verdict: Verdict,
        numbers: impl Into<String>,
    ) -> Self {
        Finding {
            experiment: experiment.into(),
            claim: claim.into(),
            verdict,
            numbers: numbers.into(),
        }
    }

    /// The line the report prints.
    pub fn line(&self) -> String {
        format!(
            "{}: {} — {} ({})",
            self.experiment, self.claim, self.verdict, self.numbers
        )
    }
}

/// The verdict of a test `pass` over the range `[lo, hi]` of the decisive
/// quantity: both ends pass → reproduced, neither → not reproduced, one →
/// inconclusive. Missing (NaN) ends are inconclusive.
pub fn over_range(lo: f64, hi: f64, pass: impl Fn(f64) -> bool) -> Verdict {
    if lo.is_nan() || hi.is_nan() {
        return Verdict::Inconclusive;
    }
    match (pass(lo), pass(hi)) {
        (true, true) => Verdict::Reproduced,
        (false, false) => Verdict::NotReproduced,
        _ => Verdict::Inconclusive,
    }
}

/// Combines verdicts of the cases of one claim: all reproduced →
/// reproduced, any not reproduced → not reproduced, else inconclusive.
pub fn all_of(v: &[Verdict]) -> Verdict {
    if v.is_empty() {
        Verdict::Inconclusive
    } else if v.iter().all(|x| *x == Verdict::Reproduced) {
        Verdict::Reproduced
    } else if v.contains(&Verdict::NotReproduced) {
        Verdict::NotReproduced
    } else {
        Verdict::Inconclusive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn range_decides() {
        let ge2 = |x: f64| x >= 2.0;
        assert_eq!(over_range(2.5, 3.0, ge2), Verdict::Reproduced);
        assert_eq!(over_range(1.0, 1.5, ge2), Verdict::NotReproduced);
        assert_eq!(over_range(1.5, 2.5, ge2), Verdict::Inconclusive);
        assert_eq!(over_range(f64::NAN, 2.5, ge2), Verdict::Inconclusive);
        assert_eq!(
            all_of(&[Verdict::Reproduced, Verdict::Inconclusive]),
            Verdict::Inconclusive
        );
        assert_eq!(
            all_of(&[Verdict::Reproduced, Verdict::NotReproduced]),
            Verdict::NotReproduced
        );
        assert_eq!(all_of(&[]), Verdict::Inconclusive);
    }
}
