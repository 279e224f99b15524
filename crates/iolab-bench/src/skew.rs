//! Skewed random access, as fio's `random_distribution=` describes it:
//! `zipf:THETA`, `pareto:H`, `normal:DEV`. The same distributions (formula
//! and parameters), not fio's exact sequence:
//!
//! - zipf: rank k of n is drawn with probability k^-θ / Σ i^-θ, sampled
//!   exactly by rejection-inversion (Hörmann & Derflinger 1996); fio uses
//!   Gray's approximation of the same law.
//! - pareto: rank = ⌊(n−1)·u^p⌋ with p = ln h / ln(1−h), u uniform: fio's
//!   formula itself.
//! - normal: a Gaussian with standard deviation DEV % of the blocks,
//!   centred on the middle, truncated to the file (fio's HOWTO meaning; its
//!   sampler approximates it with a sum of uniforms).
//!
//! As in fio, ranks are scattered over the file (fio hashes them, iolab
//! uses a keyed permutation, which keeps the law exact), so the hot blocks
//! are not simply the file's first ones.

use crate::random::{Permutation, Rng};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::hash::{Hash, Hasher};

/// A skewed distribution and its parameter.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Skew {
    /// Zipf with exponent θ (> 0, ≠ 1 as in fio).
    Zipf(f64),
    /// Pareto with fio's h (0 < h < 1).
    Pareto(f64),
    /// Normal with standard deviation in % of the blocks (0 < DEV ≤ 100).
    Normal(f64),
}

impl PartialEq for Skew {
    fn eq(&self, o: &Self) -> bool {
        self.kind() == o.kind() && self.param().to_bits() == o.param().to_bits()
    }
}

// Parameters are finite numbers (parsing refuses NaN), so bit equality is
// an equivalence.
impl Eq for Skew {}

impl Hash for Skew {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.kind().hash(h);
        self.param().to_bits().hash(h);
    }
}

impl Skew {
    /// fio's name of the distribution.
    pub fn kind(self) -> &'static str {
        match self {
            Skew::Zipf(_) => "zipf",
            Skew::Pareto(_) => "pareto",
            Skew::Normal(_) => "normal",
        }
    }

    /// The parameter.
    pub fn param(self) -> f64 {
        match self {
            Skew::Zipf(p) | Skew::Pareto(p) | Skew::Normal(p) => p,
        }
    }

    /// Parses `zipf:THETA`, `pareto:H`, `normal:DEV`; `None` if the text
    /// names no skewed distribution, `Some(Err)` if its parameter is bad.
    pub fn parse(s: &str) -> Option<Result<Skew, String>> {
        let (kind, p) = match s.split_once(':') {
            Some((k, p)) => (k, Some(p)),
            None => (s, None),
        };
        let (rule, make): (&str, fn(f64) -> Option<Skew>) = match kind {
            // Past θ = 100 every access already goes to the first block.
            "zipf" => ("zipf:THETA with 0 < THETA <= 100, not 1 (e.g. zipf:1.2)", |t| {
                (t > 0.0 && t != 1.0 && t <= 100.0).then_some(Skew::Zipf(t))
            }),
            "pareto" => ("pareto:H with 0 < H < 1 (e.g. pareto:0.9)", |h| {
                (h > 0.0 && h < 1.0).then_some(Skew::Pareto(h))
            }),
            "normal" => (
                "normal:DEV with DEV the standard deviation in % of the file, 0 < DEV <= 100 (e.g. normal:10)",
                |d| (d > 0.0 && d <= 100.0).then_some(Skew::Normal(d)),
            ),
            _ => return None,
        };
        Some(
            p.and_then(|p| p.parse::<f64>().ok())
                .filter(|v| v.is_finite())
                .and_then(make)
                .ok_or_else(|| format!("bad pattern '{s}': use {rule}")),
        )
    }

    /// Fraction of the blocks that receives `share` of the accesses (the
    /// hottest ones), over `n` blocks: fio-genzipf's table.
    pub fn hot_fraction(self, n: u64, share: f64) -> f64 {
        let n = n.max(1);
        match self {
            Skew::Zipf(t) => zipf_hot_fraction(t, n, share),
            Skew::Pareto(h) => {
                let p = pareto_pow(h);
                // rank/(n-1) = u^p has CDF x^(1/p): density falls off from 0
                // when p > 1, rises towards 1 when p < 1.
                if p >= 1.0 {
                    share.powf(p)
                } else {
                    1.0 - (1.0 - share).powf(p)
                }
            }
            Skew::Normal(dev) => {
                let z = normal_quantile((1.0 + share) / 2.0);
                (2.0 * z * dev / 100.0).min(1.0)
            }
        }
        .clamp(1.0 / n as f64, 1.0)
    }

    /// The hot-set line for tables.
    pub fn hot_set_line(self, n: u64) -> String {
        let f = |c| {
            let frac = self.hot_fraction(n, c);
            let blocks = (frac * n as f64).round().max(1.0);
            format!("{blocks:.0} blocks ({:.3} %)", frac * 100.0)
        };
        format!(
            "hot set ({self} over {n} blocks): 50 % of accesses go to {}, 90 % to {}, 99 % to {}",
            f(0.5),
            f(0.9),
            f(0.99)
        )
    }
}

impl fmt::Display for Skew {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind(), self.param())
    }
}

fn pareto_pow(h: f64) -> f64 {
    h.ln() / (1.0 - h).ln()
}

/// Σ_{i=1..k} i^-θ: exact up to a million terms, then the integral.
fn zipf_partial(t: f64, k: u64, exact: &[f64]) -> f64 {
    let m = exact.len() as u64;
    if k <= m {
        return if k == 0 { 0.0 } else { exact[k as usize - 1] };
    }
    let a = m as f64 + 0.5;
    let b = k as f64 + 0.5;
    exact[m as usize - 1] + (b.powf(1.0 - t) - a.powf(1.0 - t)) / (1.0 - t)
}

fn zipf_hot_fraction(t: f64, n: u64, share: f64) -> f64 {
    let m = n.min(1_000_000) as usize;
    let mut exact = Vec::with_capacity(m);
    let mut s = 0.0;
    for i in 1..=m {
        s += (i as f64).powf(-t);
        exact.push(s);
    }
    let total = zipf_partial(t, n, &exact);
    let (mut lo, mut hi) = (1u64, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if zipf_partial(t, mid, &exact) / total >= share {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo as f64 / n as f64
}

/// Φ⁻¹(p) (Acklam's rational approximation, relative error < 1.2e-9).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    let p = p.clamp(1e-300, 1.0 - 1e-16);
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < 0.02425 {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - 0.02425 {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// Draws ranks (0 = hottest for zipf; positions for normal) from a skewed
/// law over `n` blocks. Hand-written: on the per-op path.
#[derive(Clone, Debug)]
pub struct Sampler {
    skew: Skew,
    n: u64,
    // zipf rejection-inversion constants
    h_x1: f64,
    h_n: f64,
    s: f64,
    // pareto exponent
    pow: f64,
    // normal: sigma in blocks
    sigma: f64,
}

fn helper1(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.ln_1p() / x
    } else {
        1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }
}

fn helper2(x: f64) -> f64 {
    if x.abs() > 1e-8 {
        x.exp_m1() / x
    } else {
        1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x))
    }
}

impl Sampler {
    /// A sampler of `skew` over `n` blocks.
    pub fn new(skew: Skew, n: u64) -> Self {
        let n = n.max(1);
        let mut s = Sampler {
            skew,
            n,
            h_x1: 0.0,
            h_n: 0.0,
            s: 0.0,
            pow: 1.0,
            sigma: 1.0,
        };
        match skew {
            Skew::Zipf(_) => {
                s.h_x1 = s.h_integral(1.5) - 1.0;
                s.h_n = s.h_integral(n as f64 + 0.5);
                s.s = 2.0 - s.h_integral_inv(s.h_integral(2.5) - s.h(2.0));
            }
            Skew::Pareto(h) => s.pow = pareto_pow(h),
            Skew::Normal(d) => s.sigma = (d / 100.0 * n as f64).max(0.5),
        }
        s
    }

    fn theta(&self) -> f64 {
        self.skew.param()
    }

    /// ∫₁ˣ t^-θ dt.
    fn h_integral(&self, x: f64) -> f64 {
        let lx = x.ln();
        helper2((1.0 - self.theta()) * lx) * lx
    }

    fn h(&self, x: f64) -> f64 {
        (-self.theta() * x.ln()).exp()
    }

    fn h_integral_inv(&self, x: f64) -> f64 {
        let t = (x * (1.0 - self.theta())).max(-1.0);
        (helper1(t) * x).exp()
    }

    /// Uniform in [0, 1).
    #[inline]
    fn unit(rng: &mut Rng) -> f64 {
        (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// The next rank in `0..n`.
    #[inline]
    pub fn next_rank(&self, rng: &mut Rng) -> u64 {
        match self.skew {
            Skew::Zipf(_) => loop {
                let u = self.h_n + Self::unit(rng) * (self.h_x1 - self.h_n);
                let x = self.h_integral_inv(u);
                let k = ((x + 0.5) as u64).clamp(1, self.n);
                let kf = k as f64;
                if kf - x <= self.s || u >= self.h_integral(kf + 0.5) - self.h(kf) {
                    return k - 1;
                }
            },
            Skew::Pareto(_) => {
                let r = ((self.n - 1) as f64 * Self::unit(rng).powf(self.pow)) as u64;
                r.min(self.n - 1)
            }
            Skew::Normal(_) => loop {
                // Box–Muller; one of the pair is enough here.
                let u1 = 1.0 - Self::unit(rng);
                let u2 = Self::unit(rng);
                let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
                let x = (self.n as f64 / 2.0 + z * self.sigma).floor();
                if x >= 0.0 && x < self.n as f64 {
                    return x as u64;
                }
            },
        }
    }
}

/// Skewed block numbers: a [`Sampler`]'s ranks scattered over the blocks by
/// a keyed permutation (fio scatters them with a hash).
#[derive(Clone, Debug)]
pub struct SkewGen {
    sampler: Sampler,
    perm: Permutation,
}

impl SkewGen {
    /// Over `n` blocks, scattered with key `seed`.
    pub fn new(skew: Skew, n: u64, seed: u64) -> Self {
        SkewGen {
            sampler: Sampler::new(skew, n),
            perm: Permutation::new(n.max(1), seed ^ 0x5EED_5CA7_7E12_0001),
        }
    }

    /// The next block in `0..n`.
    #[inline]
    pub fn next_block(&self, rng: &mut Rng) -> u64 {
        self.perm.apply(self.sampler.next_rank(rng))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chi-square critical value at significance 0.001 (Wilson–Hilferty).
    fn chi2_crit(df: f64) -> f64 {
        let z = 3.090;
        df * (1.0 - 2.0 / (9.0 * df) + z * (2.0 / (9.0 * df)).sqrt()).powi(3)
    }

    /// Chi-square statistic of rank counts against pmf `p`, pooling the
    /// tail into bins of at least 50 expected draws. Returns (stat, df).
    fn chi2(counts: &[u64], p: &[f64]) -> (f64, f64) {
        let total: u64 = counts.iter().sum();
        let (mut stat, mut bins) = (0.0, 0.0);
        let (mut o, mut e) = (0.0, 0.0);
        for (c, q) in counts.iter().zip(p) {
            o += *c as f64;
            e += q * total as f64;
            if e >= 50.0 {
                stat += (o - e) * (o - e) / e;
                bins += 1.0;
                (o, e) = (0.0, 0.0);
            }
        }
        if e > 0.0 {
            stat += (o - e) * (o - e) / e;
            bins += 1.0;
        }
        (stat, bins - 1.0)
    }

    fn zipf_pmf(t: f64, n: usize) -> Vec<f64> {
        let w: Vec<f64> = (1..=n).map(|k| (k as f64).powf(-t)).collect();
        let s: f64 = w.iter().sum();
        w.into_iter().map(|x| x / s).collect()
    }

    fn ranks(skew: Skew, n: u64, draws: usize, seed: u64) -> Vec<u64> {
        let s = Sampler::new(skew, n);
        let mut rng = Rng::new(seed);
        let mut c = vec![0u64; n as usize];
        for _ in 0..draws {
            c[s.next_rank(&mut rng) as usize] += 1;
        }
        c
    }

    #[test]
    fn zipf_matches_its_formula_by_chi_square() {
        for t in [0.8, 1.2, 2.0] {
            let c = ranks(Skew::Zipf(t), 1000, 200_000, 7);
            let (stat, df) = chi2(&c, &zipf_pmf(t, 1000));
            assert!(stat < chi2_crit(df), "zipf {t}: chi2 {stat:.1} df {df}");
            // The test can fail: the same draws against a different θ.
            let (wrong, df2) = chi2(&c, &zipf_pmf(t + 0.1, 1000));
            assert!(
                wrong > chi2_crit(df2),
                "zipf {t} vs {}: {wrong:.1}",
                t + 0.1
            );
        }
    }

    /// Kolmogorov–Smirnov distance of rank counts from a CDF `f(k)` =
    /// P(rank < k).
    fn ks(counts: &[u64], f: impl Fn(f64) -> f64) -> f64 {
        let total: u64 = counts.iter().sum();
        let mut cum = 0u64;
        let mut d: f64 = 0.0;
        for (k, c) in counts.iter().enumerate() {
            cum += c;
            let emp = cum as f64 / total as f64;
            d = d.max((emp - f(k as f64 + 1.0)).abs());
        }
        d
    }

    #[test]
    fn pareto_matches_fios_formula_by_ks() {
        let n = 100_000u64;
        let draws = 200_000;
        let crit = 1.95 / (draws as f64).sqrt(); // α = 0.001
        for h in [0.2, 0.9] {
            let c = ranks(Skew::Pareto(h), n, draws, 11);
            let p = pareto_pow(h);
            let cdf = |p: f64| move |k: f64| (k / (n - 1) as f64).min(1.0).powf(1.0 / p);
            let d = ks(&c, cdf(p));
            assert!(d < crit, "pareto {h}: D {d:.5} >= {crit:.5}");
            assert!(
                ks(&c, cdf(p * 1.1)) > crit,
                "pareto {h}: a wrong power passes"
            );
        }
    }

    #[test]
    fn normal_matches_a_gaussian_by_ks() {
        let n = 100_000u64;
        let draws = 200_000;
        let crit = 1.95 / (draws as f64).sqrt();
        let phi = |x: f64| 0.5 * (1.0 + erf(x / std::f64::consts::SQRT_2));
        for dev in [5.0, 10.0] {
            let c = ranks(Skew::Normal(dev), n, draws, 3);
            let cdf = |dev: f64| {
                move |k: f64| {
                    let s = dev / 100.0 * n as f64;
                    let (lo, hi) = (phi(-(n as f64) / 2.0 / s), phi(n as f64 / 2.0 / s));
                    (phi((k - n as f64 / 2.0) / s) - lo) / (hi - lo)
                }
            };
            let d = ks(&c, cdf(dev));
            assert!(d < crit, "normal {dev}: D {d:.5}");
            assert!(
                ks(&c, cdf(dev * 1.1)) > crit,
                "normal {dev}: a wrong sigma passes"
            );
        }
    }

    /// erf (Abramowitz–Stegun 7.1.26 is too coarse for KS at 2e5 draws;
    /// this series/continued form is accurate to ~1e-12).
    fn erf(x: f64) -> f64 {
        if x.abs() < 2.5 {
            // Maclaurin series.
            let (mut sum, mut term, mut k) = (x, x, 0.0);
            while term.abs() > 1e-17 {
                k += 1.0;
                term *= -x * x / k;
                sum += term / (2.0 * k + 1.0);
            }
            sum * 2.0 / std::f64::consts::PI.sqrt()
        } else {
            // Continued fraction for erfc.
            let ax = x.abs();
            let mut f = 0.0;
            for k in (1..60).rev() {
                f = k as f64 / 2.0 / (ax + f);
            }
            let erfc = (-ax * ax).exp() / std::f64::consts::PI.sqrt() / (ax + f);
            (1.0 - erfc).copysign(x)
        }
    }

    #[test]
    fn hot_sets_agree_with_the_draws() {
        let n = 10_000u64;
        for skew in [Skew::Zipf(1.2), Skew::Pareto(0.9), Skew::Normal(10.0)] {
            let mut c = ranks(skew, n, 400_000, 5);
            c.sort_unstable_by(|a, b| b.cmp(a));
            let total: u64 = c.iter().sum();
            for share in [0.5, 0.9] {
                let mut cum = 0;
                let k = c
                    .iter()
                    .position(|&x| {
                        cum += x;
                        cum as f64 >= share * total as f64
                    })
                    .unwrap() as f64
                    + 1.0;
                let want = skew.hot_fraction(n, share);
                let got = k / n as f64;
                assert!(
                    (got - want).abs() <= 0.1 * want + 2.0 / n as f64,
                    "{skew} {share}: draws {got:.4}, formula {want:.4}"
                );
            }
        }
        assert!(Skew::Zipf(1.2)
            .hot_set_line(n)
            .contains("50 % of accesses go to"));
    }

    #[test]
    fn scattered_blocks_stay_in_range_and_are_not_the_first_ones() {
        let g = SkewGen::new(Skew::Zipf(1.5), 1000, 9);
        let mut rng = Rng::new(1);
        let mut c = vec![0u32; 1000];
        for _ in 0..10_000 {
            c[g.next_block(&mut rng) as usize] += 1;
        }
        let hottest = (0..1000).max_by_key(|&i| c[i]).unwrap();
        assert_eq!(hottest as u64, g.perm.apply(0));
    }

    #[test]
    fn parameters_are_checked_with_a_clear_rule() {
        assert_eq!(Skew::parse("zipf:1.2"), Some(Ok(Skew::Zipf(1.2))));
        assert_eq!(Skew::parse("normal:10"), Some(Ok(Skew::Normal(10.0))));
        assert_eq!(Skew::parse("rand"), None);
        for bad in [
            "zipf:1",
            "zipf",
            "zipf:x",
            "pareto:1.5",
            "normal:0",
            "zipf:NaN",
        ] {
            let e = Skew::parse(bad).unwrap().unwrap_err();
            assert!(e.contains("e.g."), "{bad}: {e}");
        }
    }
}
