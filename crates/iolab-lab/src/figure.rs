//! Figures as SVG, drawn with plotters: grouped bars (mean bar, median dot,
//! min–max whisker), lines over x, and the throughput–latency map. Log
//! axes are drawn by plotting log10 of the values with labels in the
//! original units. Legends sit in a strip right of the plot so they never
//! cover data; colours differ in lightness as well as hue (readable in grey)
//! and alternate filled and hollow markers.
//!
//! Every data point is drawn as one circle of radius [`POINT_R`]
//! (legend markers are squares), so a reader of the SVG can count points.

use iolab_bench::stats::Stats;
use plotters::coord::Shift;
use plotters::prelude::*;

/// Radius of the circle drawn for each data point.
pub const POINT_R: i32 = 3;

const W: u32 = 860;
const H: u32 = 480;
const LEGEND_W: u32 = 200;

/// Palette: dark to light, each hue a different grey level.
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x1b, 0x2a, 0x6b),
    RGBColor(0xe6, 0x9f, 0x00),
    RGBColor(0x00, 0x9e, 0x73),
    RGBColor(0xd5, 0x5e, 0x00),
    RGBColor(0x56, 0xb4, 0xe9),
    RGBColor(0x7a, 0x1f, 0x5c),
    RGBColor(0xb0, 0xb0, 0xb0),
    RGBColor(0x33, 0x33, 0x33),
];

/// The colour of series `i`.
pub fn colour(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

/// A drawn figure.
#[derive(Clone, Debug, Default)]
pub struct Figure {
    /// File stem (`blocksize-cold-warm` → `blocksize-cold-warm.svg`).
    pub name: String,
    /// Caption.
    pub title: String,
    /// The SVG document.
    pub svg: String,
    /// Series names, in legend order.
    pub series: Vec<String>,
    /// Data points drawn.
    pub points: usize,
}

/// An axis: its label (with unit), log or linear, and how to print a value.
#[derive(Clone, Copy)]
pub struct Axis<'a> {
    /// Label with unit, e.g. "block size (bytes)".
    pub label: &'a str,
    /// Logarithmic.
    pub log: bool,
    /// Formats a value (in original units) for a tick label.
    pub fmt: fn(f64) -> String,
    /// Base of the logarithm (2 for sizes, so ticks land on powers of two).
    base: f64,
}

impl<'a> Axis<'a> {
    /// An axis with log base 10 (when `log`).
    pub fn new(label: &'a str, log: bool, fmt: fn(f64) -> String) -> Self {
        Axis {
            label,
            log,
            fmt,
            base: 10.0,
        }
    }

    /// A logarithmic axis of sizes in bytes (base 2).
    pub fn bytes(label: &'a str) -> Self {
        Axis {
            label,
            log: true,
            fmt: bytes,
            base: 2.0,
        }
    }
}

/// One bar series: a value (statistics over repeats) per category.
pub struct BarSeries {
    /// Legend name.
    pub name: String,
    /// Per category, or `None` when not measured.
    pub vals: Vec<Option<Stats>>,
}

/// A point of a line: x, the median y and its range over repeats.
#[derive(Clone, Copy, Debug)]
pub struct Pt {
    /// x.
    pub x: f64,
    /// Median y.
    pub y: f64,
    /// Smallest y.
    pub lo: f64,
    /// Largest y.
    pub hi: f64,
}

impl Pt {
    /// A point from statistics.
    pub fn of(x: f64, s: &Stats) -> Pt {
        Pt {
            x,
            y: s.median,
            lo: s.min,
            hi: s.max,
        }
    }
}

/// One line series.
pub struct LineSeries {
    /// Legend name.
    pub name: String,
    /// Points in increasing x.
    pub pts: Vec<Pt>,
}

/// A point of the throughput–latency map.
pub struct MapPoint {
    /// Throughput, MiB/s.
    pub x: f64,
    /// p99.9 latency, ns.
    pub y: f64,
    /// Compact label.
    pub label: String,
    /// Marker group (block size), index into the shape list.
    pub group: usize,
    /// CPU use, % (colour).
    pub cpu: f64,
}

/// Human bytes: 512 B, 4 KiB, 1 MiB.
pub fn bytes(v: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut x = v;
    let mut i = 0;
    while x >= 1024.0 && i + 1 < units.len() {
        x /= 1024.0;
        i += 1;
    }
    if (x - x.round()).abs() < 0.05 {
        format!("{:.0} {}", x, units[i])
    } else {
        format!("{:.1} {}", x, units[i])
    }
}

/// Three significant figures, with k/M/G suffixes.
pub fn num(v: f64) -> String {
    thousands(v, ["G", "M", "k", ""], "")
}

/// Nanoseconds as µs/ms/s.
pub fn ns(v: f64) -> String {
    thousands(v, ["s", "ms", "µs", "ns"], " ")
}

/// `v` in the largest of steps of a thousand that keeps it at least 1
/// (`units` from 10⁹ down to 1), with three significant figures.
fn thousands(v: f64, units: [&str; 4], sep: &str) -> String {
    let a = v.abs();
    let (x, u) = if a >= 1e9 {
        (v / 1e9, units[0])
    } else if a >= 1e6 {
        (v / 1e6, units[1])
    } else if a >= 1e3 {
        (v / 1e3, units[2])
    } else {
        (v, units[3])
    };
    let digits = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{x:.digits$}{sep}{u}")
}

/// How many tick labels an axis gets: one per decade on log axes (so ticks
/// land on powers of ten), ten otherwise.
fn ticks(a: &Axis, r: &std::ops::Range<f64>) -> usize {
    if a.log {
        let n = (r.end - r.start).ceil() as usize + 1;
        // Base 2 over many octaves: every other octave or so.
        let n = if n > 14 { n.div_ceil(2) } else { n };
        n.clamp(2, 14)
    } else {
        10
    }
}

fn tx(a: &Axis, v: f64) -> f64 {
    if a.log {
        v.max(1e-12).log(a.base)
    } else {
        v
    }
}

fn untx(a: &Axis, v: f64) -> f64 {
    if a.log {
        a.base.powf(v)
    } else {
        v
    }
}

/// The plotted range of values (in plot coordinates), padded.
fn range(a: &Axis, vals: impl Iterator<Item = f64>) -> std::ops::Range<f64> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in vals.filter(|v| v.is_finite() && (!a.log || *v > 0.0)) {
        let t = tx(a, v);
        lo = lo.min(t);
        hi = hi.max(t);
    }
    if !lo.is_finite() {
        return 0.0..1.0;
    }
    if !a.log {
        lo = lo.min(0.0);
    }
    let pad = ((hi - lo) * 0.05).max(if a.log { 0.1 } else { hi.abs() * 0.05 + 1e-9 });
    (if a.log { lo - pad } else { lo })..(hi + pad)
}

/// Where a figure draws: the plot, or the legend's side panel.
type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// Draws a figure `H`-ish pixels high: `body` gets the plot area, the
/// legend's side panel and the series' names, and returns how many points
/// it drew; a drawing error becomes the figure's text.
fn figure(
    name: &str,
    title: &str,
    names: Vec<String>,
    height: u32,
    body: impl FnOnce(&Area, &Area, &[String]) -> Result<usize, String>,
) -> Figure {
    let mut svg = String::new();
    let mut points = 0;
    let r = (|| -> Result<(), String> {
        let root = SVGBackend::with_string(&mut svg, (W, height)).into_drawing_area();
        root.fill(&WHITE).map_err(|e| e.to_string())?;
        let (plot, side) = root.split_horizontally(W - LEGEND_W);
        points = body(&plot, &side, &names)?;
        root.present().map_err(|e| e.to_string())
    })();
    finish(name, title, r, svg, names, points)
}

/// The figure, or, when drawing failed (`drawn` is the error), an SVG that
/// says why in place of the chart.
fn finish(
    name: &str,
    title: &str,
    drawn: Result<(), String>,
    svg: String,
    series: Vec<String>,
    points: usize,
) -> Figure {
    let svg = match drawn {
        Ok(()) => svg,
        Err(e) => error_svg(&e),
    };
    Figure {
        name: name.into(),
        title: title.into(),
        svg,
        series,
        points,
    }
}

/// The series' names beside the chart (with `hollow`, every second one an
/// outline, as its points are drawn), then `notes` on how to read it.
fn legend(
    area: &DrawingArea<SVGBackend, Shift>,
    names: &[String],
    hollow: bool,
    notes: &[&str],
) -> Result<(), String> {
    let font = ("sans-serif", 13).into_font();
    for (i, n) in names.iter().enumerate() {
        let y = 40 + i as i32 * 20;
        let c = colour(i);
        let filled = !hollow || i % 2 == 0;
        let style = if filled {
            c.filled()
        } else {
            c.stroke_width(2)
        };
        area.draw(&Rectangle::new([(8, y - 5), (18, y + 5)], style))
            .map_err(|e| e.to_string())?;
        area.draw(&Text::new(n.clone(), (24, y - 7), font.clone()))
            .map_err(|e| e.to_string())?;
    }
    // Notes on how to read the chart, under the names.
    let small = ("sans-serif", 12).into_font();
    let y0 = 50 + names.len() as i32 * 20;
    for (i, l) in notes.iter().enumerate() {
        area.draw(&Text::new(*l, (8, y0 + i as i32 * 15), small.clone()))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Grouped bars: one group per category, one bar per series; the bar is the
/// mean, the dot the median, the whisker min to max.
pub fn bars(
    name: &str,
    title: &str,
    x_label: &str,
    cats: &[String],
    y: Axis,
    series: &[BarSeries],
) -> Figure {
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    figure(name, title, names, H, |plot, side, names| {
        let mut points = 0;
        let all = series
            .iter()
            .flat_map(|s| s.vals.iter().flatten().flat_map(|v| [v.min, v.max]));
        let yr = range(&y, all);
        let base = yr.start;
        let yt = ticks(&y, &yr);
        let n = cats.len().max(1);
        let mut ch = ChartBuilder::on(plot)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), yr)
            .map_err(|e| e.to_string())?;
        let cats2 = cats.to_vec();
        ch.configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .y_labels(yt)
            .x_desc(x_label)
            .y_desc(y.label)
            .x_labels(n.min(24))
            .x_label_formatter(&move |v| {
                let i = v.round();
                if (v - i).abs() < 0.01 && i >= 0.0 && (i as usize) < cats2.len() {
                    cats2[i as usize].clone()
                } else {
                    String::new()
                }
            })
            .y_label_formatter(&|v| (y.fmt)(untx(&y, *v)))
            .draw()
            .map_err(|e| e.to_string())?;
        points += draw_bars(&mut ch, series, &y, base)?;
        legend(
            side,
            names,
            false,
            &["bar mean, dot median,", "line min–max"],
        )?;
        Ok(points)
    })
}

/// The chart [`bars`], [`lines`] and [`map`] draw on.
type Chart<'a, 'b> = ChartContext<
    'a,
    SVGBackend<'b>,
    Cartesian2d<plotters::coord::types::RangedCoordf64, plotters::coord::types::RangedCoordf64>,
>;

/// Each series' bars within their category's slot: the bar up to the mean
/// from `base`, a min–max whisker and a dot at the median. Returns the
/// number of bars drawn.
fn draw_bars(ch: &mut Chart, series: &[BarSeries], y: &Axis, base: f64) -> Result<usize, String> {
    let w = 0.8 / series.len().max(1) as f64;
    let mut points = 0;
    for (si, s) in series.iter().enumerate() {
        let c = colour(si);
        for (ci, v) in s.vals.iter().enumerate() {
            let Some(v) = v else { continue };
            let x0 = ci as f64 - 0.4 + si as f64 * w;
            let xm = x0 + w / 2.0;
            ch.draw_series(std::iter::once(Rectangle::new(
                [(x0 + w * 0.08, base), (x0 + w * 0.92, tx(y, v.mean))],
                c.mix(0.85).filled(),
            )))
            .map_err(|e| e.to_string())?;
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(xm, tx(y, v.min)), (xm, tx(y, v.max))],
                BLACK.stroke_width(1),
            )))
            .map_err(|e| e.to_string())?;
            ch.draw_series(std::iter::once(Circle::new(
                (xm, tx(y, v.median)),
                POINT_R,
                BLACK.filled(),
            )))
            .map_err(|e| e.to_string())?;
            points += 1;
        }
    }
    Ok(points)
}

/// Lines over x with a dot per point and a min–max whisker.
pub fn lines(name: &str, title: &str, x: Axis, y: Axis, series: &[LineSeries]) -> Figure {
    let names: Vec<String> = series.iter().map(|s| s.name.clone()).collect();
    figure(name, title, names, H, |plot, side, names| {
        let mut points = 0;
        let xr = range(&x, series.iter().flat_map(|s| s.pts.iter().map(|p| p.x)));
        let yr = range(
            &y,
            series
                .iter()
                .flat_map(|s| s.pts.iter().flat_map(|p| [p.lo, p.hi, p.y])),
        );
        let (xt, yt) = (ticks(&x, &xr), ticks(&y, &yr));
        let mut ch = ChartBuilder::on(plot)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .build_cartesian_2d(xr, yr)
            .map_err(|e| e.to_string())?;
        ch.configure_mesh()
            .light_line_style(WHITE)
            .x_labels(xt)
            .y_labels(yt)
            .x_desc(x.label)
            .y_desc(y.label)
            .x_label_formatter(&|v| (x.fmt)(untx(&x, *v)))
            .y_label_formatter(&|v| (y.fmt)(untx(&y, *v)))
            .draw()
            .map_err(|e| e.to_string())?;
        for (si, s) in series.iter().enumerate() {
            points += draw_line(&mut ch, si, s, &x, &y)?;
        }
        legend(side, names, true, &[])?;
        Ok(points)
    })
}

/// Series `si` of [`lines`]: the line through its medians, a min–max
/// whisker per point, then a dot per point (hollow for every second
/// series). Returns the number of dots drawn.
fn draw_line(
    ch: &mut Chart,
    si: usize,
    s: &LineSeries,
    x: &Axis,
    y: &Axis,
) -> Result<usize, String> {
    let c = colour(si);
    let pts: Vec<(f64, f64)> = s
        .pts
        .iter()
        .filter(|p| p.y.is_finite() && (!y.log || p.y > 0.0))
        .map(|p| (tx(x, p.x), tx(y, p.y)))
        .collect();
    ch.draw_series(plotters::series::LineSeries::new(
        pts.clone(),
        c.stroke_width(2),
    ))
    .map_err(|e| e.to_string())?;
    for p in &s.pts {
        if p.lo.is_finite() && p.hi.is_finite() && (!y.log || p.lo > 0.0) {
            let xx = tx(x, p.x);
            ch.draw_series(std::iter::once(PathElement::new(
                vec![(xx, tx(y, p.lo)), (xx, tx(y, p.hi))],
                c.stroke_width(1),
            )))
            .map_err(|e| e.to_string())?;
        }
    }
    let style = if si.is_multiple_of(2) {
        c.filled()
    } else {
        c.stroke_width(2)
    };
    for &p in &pts {
        ch.draw_series(std::iter::once(Circle::new(p, POINT_R, style)))
            .map_err(|e| e.to_string())?;
    }
    Ok(pts.len())
}

/// The map of every configuration: throughput against p99.9 latency, a
/// marker per configuration (shape by block size group: the shape is drawn
/// around the dot), colour by CPU use, each labelled, the Pareto front
/// (highest throughput for the lowest latency) drawn as a line.
pub fn map(name: &str, title: &str, groups: &[String], pts: &[MapPoint]) -> Figure {
    let x = Axis::new("throughput (MiB/s)", true, num);
    let y = Axis::new("p99.9 latency (ns)", true, ns);
    let names: Vec<String> = groups.to_vec();
    figure(name, title, names, H + 120, |plot, side, names| {
        let mut points = 0;
        let xr = range(&x, pts.iter().map(|p| p.x));
        let yr = range(&y, pts.iter().map(|p| p.y));
        let mut ch = ChartBuilder::on(plot)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(45)
            .y_label_area_size(85)
            .build_cartesian_2d(xr.clone(), yr.clone())
            .map_err(|e| e.to_string())?;
        ch.configure_mesh()
            .light_line_style(WHITE)
            .x_labels(ticks(&x, &xr))
            .y_labels(ticks(&y, &yr))
            .x_desc(x.label)
            .y_desc(y.label)
            .x_label_formatter(&|v| num(10f64.powf(*v)))
            .y_label_formatter(&|v| ns(10f64.powf(*v)))
            .draw()
            .map_err(|e| e.to_string())?;
        let front = pareto(pts);
        ch.draw_series(plotters::series::LineSeries::new(
            front.iter().map(|&i| (tx(&x, pts[i].x), tx(&y, pts[i].y))),
            BLACK.stroke_width(1),
        ))
        .map_err(|e| e.to_string())?
        .label("Pareto front");
        let cmax = pts.iter().map(|p| p.cpu).fold(1.0, f64::max);
        for p in pts.iter().filter(|p| p.x > 0.0 && p.y > 0.0) {
            draw_map_point(&mut ch, p, (tx(&x, p.x), tx(&y, p.y)), cmax)?;
            points += 1;
        }
        legend(
            side,
            names,
            false,
            &[
                "shape: block size group",
                "(square, triangle, cross)",
                "dot colour: CPU use",
                "light = little, dark = much",
                "black line: Pareto front",
            ],
        )?;
        Ok(points)
    })
}

/// One configuration on the map at `at`: its group's shape, a dot coloured
/// by its CPU use (light: little, dark: `cmax`), and its label.
fn draw_map_point(ch: &mut Chart, p: &MapPoint, at: (f64, f64), cmax: f64) -> Result<(), String> {
    let t = (p.cpu / cmax).clamp(0.0, 1.0);
    let g = (220.0 - 200.0 * t) as u8;
    let c = RGBColor(g, g / 2, (255.0 - 150.0 * t) as u8);
    let sc = colour(p.group);
    match p.group % 3 {
        0 => ch
            .draw_series(std::iter::once(
                EmptyElement::at(at) + Rectangle::new([(-6, -6), (6, 6)], sc.stroke_width(1)),
            ))
            .map(|_| ()),
        1 => ch
            .draw_series(std::iter::once(TriangleMarker::new(
                at,
                7,
                sc.stroke_width(1),
            )))
            .map(|_| ()),
        _ => ch
            .draw_series(std::iter::once(Cross::new(at, 6, sc.stroke_width(1))))
            .map(|_| ()),
    }
    .map_err(|e| e.to_string())?;
    ch.draw_series(std::iter::once(Circle::new(at, POINT_R, c.filled())))
        .map_err(|e| e.to_string())?;
    ch.draw_series(std::iter::once(Text::new(
        p.label.clone(),
        at,
        ("sans-serif", 9).into_font(),
    )))
    .map_err(|e| e.to_string())?;
    Ok(())
}

/// Indices of the Pareto front (no other point has both more throughput and
/// less latency), in increasing throughput.
pub fn pareto(pts: &[MapPoint]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..pts.len())
        .filter(|&i| pts[i].x > 0.0 && pts[i].y > 0.0)
        .collect();
    idx.sort_by(|&a, &b| pts[b].x.total_cmp(&pts[a].x));
    let mut front = Vec::new();
    let mut best_y = f64::INFINITY;
    for i in idx {
        if pts[i].y < best_y {
            best_y = pts[i].y;
            front.push(i);
        }
    }
    front.reverse();
    front
}

fn error_svg(e: &str) -> String {
    let e = e.replace(['<', '>', '&'], " ");
    format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"400\" height=\"40\"><text x=\"5\" y=\"20\">figure failed: {e}</text></svg>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(bytes(4096.0), "4 KiB");
        assert_eq!(bytes(1.0), "1 B");
        assert_eq!(bytes(1536.0), "1.5 KiB");
        assert_eq!(num(1234.0), "1.23k");
        assert_eq!(ns(1500.0), "1.50 µs");
        assert_eq!(ns(630_957.0), "631 µs");
    }

    #[test]
    fn pareto_keeps_the_undominated() {
        let p = |x, y| MapPoint {
            x,
            y,
            label: String::new(),
            group: 0,
            cpu: 0.0,
        };
        let pts = vec![p(100.0, 10.0), p(200.0, 20.0), p(150.0, 30.0), p(50.0, 5.0)];
        assert_eq!(pareto(&pts), vec![3, 0, 1]);
    }

    #[test]
    fn svg_parses_and_counts_points() {
        let s = Stats::of(&[1.0, 2.0, 3.0]);
        let f = bars(
            "t",
            "t",
            "block size (bytes)",
            &["1 B".into(), "2 B".into()],
            Axis::new("throughput (MiB/s)", true, num),
            &[
                BarSeries {
                    name: "cold".into(),
                    vals: vec![Some(s), None],
                },
                BarSeries {
                    name: "warm".into(),
                    vals: vec![Some(s), Some(s)],
                },
            ],
        );
        let doc = roxmltree::Document::parse(&f.svg).expect("svg parses");
        let circles = doc
            .descendants()
            .filter(|n| n.has_tag_name("circle") && n.attribute("r") == Some("3"))
            .count();
        assert_eq!(circles, 3);
        assert_eq!(f.points, 3);
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(texts.iter().any(|t| t.contains("(MiB/s)")), "{texts:?}");
        assert!(texts.iter().any(|t| t.trim() == "warm"), "{texts:?}");
    }
}
