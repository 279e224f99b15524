//! `iolab lab run`'s progress: configurations weighed by their expected
//! time, so the ETA counts time rather than configurations. A bar on a
//! terminal; one line per configuration otherwise (logs, CI), since a
//! hidden bar would leave a long run silent.

use iolab_lab as lab;
use std::io::IsTerminal;
use std::time::{Duration, Instant};

/// Progress over one experiment at a time.
#[derive(Default)]
pub struct Bar {
    pb: Option<indicatif::ProgressBar>,
    exp: String,
    total: usize,
    index: usize,
    started: Option<Instant>,
    expected_ms: u64,
    done_ms: u64,
    current_ms: u64,
}

/// Expected seconds as whole milliseconds (at least 1, so every
/// configuration moves the bar).
fn ms(secs: f64) -> u64 {
    ((secs * 1e3) as u64).max(1)
}

/// "1h02m", "3m05s", "12s".
fn human(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
    }
}

impl Bar {
    /// Clears the bar (the experiment's table follows on stdout).
    pub fn finish(&mut self) {
        if let Some(pb) = self.pb.take() {
            pb.finish_and_clear();
        }
    }

    /// Time left: what is left of the estimate, scaled by how the estimate
    /// has fared so far (elapsed ÷ expected of what is done), trusted in
    /// proportion to how much is done: one slow first configuration (it
    /// made the files) does not make the ETA leap and fall back.
    fn eta(&self) -> String {
        self.eta_after(self.started.map_or(Duration::ZERO, |t| t.elapsed()))
    }

    /// [`Bar::eta`] once `elapsed` has passed since the start.
    fn eta_after(&self, elapsed: Duration) -> String {
        let left = self.expected_ms.saturating_sub(self.done_ms) as f64 / 1e3;
        match self.started {
            Some(_) if self.done_ms > 0 => {
                let pace = elapsed.as_secs_f64() / (self.done_ms as f64 / 1e3);
                let done = self.done_ms as f64 / self.expected_ms.max(1) as f64;
                let pace = 1.0 + (pace - 1.0) * done.min(1.0).sqrt();
                format!("ETA {}", human(Duration::from_secs_f64(left * pace)))
            }
            _ => format!("ETA ~{} (estimated)", human(Duration::from_secs_f64(left))),
        }
    }
}

impl lab::Progress for Bar {
    fn start(&mut self, exp: &str, total: usize, skipped: usize, secs: f64) {
        if skipped > 0 {
            eprintln!(
                "{exp}: resuming: {skipped} configuration(s) already measured, {total} to go"
            );
        }
        *self = Bar {
            exp: exp.to_string(),
            total,
            started: Some(Instant::now()),
            expected_ms: ms(secs).max(total as u64),
            ..Bar::default()
        };
        if std::io::stderr().is_terminal() {
            let pb = indicatif::ProgressBar::new(self.expected_ms);
            pb.set_style(
                indicatif::ProgressStyle::with_template(
                    "{prefix} [{elapsed_precise}] {bar:30} {percent:>3}% ETA {eta} {msg}",
                )
                .expect("valid template"),
            );
            pb.set_prefix(exp.to_string());
            self.pb = Some(pb);
        }
    }
    fn begin(&mut self, key: &str, secs: f64) {
        self.index += 1;
        self.current_ms = ms(secs);
        let at = format!("{}/{}", self.index, self.total);
        match &self.pb {
            Some(pb) => pb.set_message(format!("{at} {key}")),
            None => eprintln!("{}: {at} {key} ({})", self.exp, self.eta()),
        }
    }
    fn skipped(&mut self, key: &str, error: &str) {
        let line = format!("note: skipped {key}: {error}");
        match &self.pb {
            Some(pb) => pb.println(line),
            None => eprintln!("{line}"),
        }
    }
    fn done(&mut self) {
        self.done_ms += self.current_ms;
        if let Some(pb) = &self.pb {
            pb.inc(self.current_ms);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iolab_lab::Progress;

    #[test]
    fn eta_scales_what_is_left_by_the_pace_so_far() {
        let mut b = Bar::default();
        b.start("x", 2, 0, 10.0);
        assert!(b.eta().contains("~10s (estimated)"), "{}", b.eta());
        b.begin("a", 1.0);
        b.done();
        // 1 s of 10 expected done, twice as slow as estimated: 9 s are
        // left, at a pace trusted as far as a tenth done allows.
        let eta = b.eta_after(Duration::from_secs(2));
        assert_eq!(eta, "ETA 11s", "1 + (2 - 1) x sqrt(0.1) = 1.32 x 9 s");
        // All but the last second done at twice the estimate: the pace is
        // trusted almost whole.
        b.begin("b", 8.0);
        b.done();
        assert_eq!(b.eta_after(Duration::from_secs(18)), "ETA 1s");
    }

    #[test]
    fn a_slow_start_does_not_make_the_eta_leap() {
        let mut b = Bar::default();
        b.start("x", 10, 0, 10.0);
        b.begin("first", 1.0);
        b.done();
        // The first configuration took 3 s instead of 1 (it made the files):
        // 9 s of estimate left, shown as well under 3 x 9 s.
        let eta = b.eta_after(Duration::from_secs(3));
        assert_eq!(eta, "ETA 14s", "{eta}");
    }

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(human(Duration::from_secs(12)), "12s");
        assert_eq!(human(Duration::from_secs(185)), "3m05s");
        assert_eq!(human(Duration::from_secs(3720)), "1h02m");
    }
}
