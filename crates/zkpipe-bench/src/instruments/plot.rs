//! SVG charts: a stacked bar of per-stage medians per measured series (`bench`), and
//! panels of lines over shared x ticks (`sweep`).
//! Written by hand: a few dozen lines of SVG text, where a plotting crate would add a
//! large dependency (and font handling) to the binary for one chart.

use std::fmt::Write as _;

const COLORS: [&str; 12] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac", "#17becf", "#8c564b",
];

/// One bar: a label and (stage name, milliseconds) segments.
pub struct Bar {
    /// Shown left of the bar.
    pub label: String,
    /// Segments in order.
    pub segments: Vec<(String, f64)>,
}

/// Renders the bars as an SVG document.
pub fn stacked_bars(title: &str, bars: &[Bar]) -> String {
    let (left, width, row, top) = (220.0, 640.0, 34.0, 50.0);
    let max_total = bars
        .iter()
        .map(|b| b.segments.iter().map(|s| s.1).sum::<f64>())
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let mut names: Vec<String> = Vec::new();
    for b in bars {
        for (n, _) in &b.segments {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let height = top + row * bars.len() as f64 + 40.0 + 18.0 * names.len().div_ceil(4) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{height}" font-family="sans-serif" font-size="12">"#,
        left + width + 120.0
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="24" font-size="15">{}</text>"#,
        escape(title)
    );
    for (i, b) in bars.iter().enumerate() {
        let y = top + row * i as f64;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            left - 8.0,
            y + 17.0,
            escape(&b.label)
        );
        let mut x = left;
        for (name, ms) in &b.segments {
            let w = ms / max_total * width;
            let c = COLORS[names.iter().position(|n| n == name).unwrap_or(0) % COLORS.len()];
            let _ = writeln!(
                s,
                r#"<rect x="{x:.1}" y="{y}" width="{w:.1}" height="24" fill="{c}"><title>{}: {ms:.2} ms</title></rect>"#,
                escape(name)
            );
            x += w;
        }
        let total: f64 = b.segments.iter().map(|s| s.1).sum();
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}">{total:.1} ms</text>"#,
            x + 6.0,
            y + 17.0
        );
    }
    let ly = top + row * bars.len() as f64 + 20.0;
    for (i, name) in names.iter().enumerate() {
        let (x, y) = (left + 160.0 * (i % 4) as f64, ly + 18.0 * (i / 4) as f64);
        legend_entry(&mut s, (x, y), i, name);
    }
    s.push_str("</svg>\n");
    s
}

/// A legend entry at (x, y): the `i`-th colour's square and `name`.
fn legend_entry(s: &mut String, (x, y): (f64, f64), i: usize, name: &str) {
    let _ = writeln!(
        s,
        r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{y}">{}</text>"#,
        y - 10.0,
        COLORS[i % COLORS.len()],
        x + 16.0,
        escape(name)
    );
}

/// A line of a [`line_panels`] chart: a name and one y value per x tick (none: no point).
pub struct Line {
    /// Its legend entry.
    pub name: String,
    /// The y value at each x tick.
    pub ys: Vec<Option<f64>>,
}

/// A panel of a [`line_panels`] chart: a y axis from 0 and its lines.
pub struct Panel {
    /// The y axis label.
    pub y_label: String,
    /// The largest y on the axis; none: the largest value.
    pub y_max: Option<f64>,
    /// The lines, each in its own colour (the same in every panel).
    pub lines: Vec<Line>,
}

/// Renders panels side by side, each with the same evenly spaced x ticks (`x_label`
/// under them) and lines from 0 on the y axis, with one legend below.
pub fn line_panels(title: &str, x_label: &str, x_ticks: &[String], panels: &[Panel]) -> String {
    let (pw, ph, left, top, gap) = (380.0, 260.0, 60.0, 50.0, 40.0);
    let names: Vec<&str> = panels
        .first()
        .map(|p| p.lines.iter().map(|l| l.name.as_str()).collect())
        .unwrap_or_default();
    let width = left + (pw + gap + left) * panels.len() as f64;
    let height = top + ph + 60.0 + 18.0 * names.len() as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="100%" height="100%" fill="white"/><text x="10" y="24" font-size="15">{}</text>"#,
        escape(title)
    );
    for (k, p) in panels.iter().enumerate() {
        let x0 = left + (pw + gap + left) * k as f64;
        panel(&mut s, p, (x0, top, pw, ph), x_label, x_ticks);
    }
    for (i, name) in names.iter().enumerate() {
        legend_entry(&mut s, (left, top + ph + 50.0 + 18.0 * i as f64), i, name);
    }
    s.push_str("</svg>\n");
    s
}

/// One panel in the box (x, y, width, height): axes, ticks, labels and lines.
fn panel(
    s: &mut String,
    p: &Panel,
    (x0, y0, w, h): (f64, f64, f64, f64),
    x_label: &str,
    x_ticks: &[String],
) {
    let data_max = p
        .lines
        .iter()
        .flat_map(|l| l.ys.iter().flatten())
        .fold(0.0f64, |a, b| a.max(*b));
    let y_max = p.y_max.unwrap_or(data_max * 1.1).max(1e-12);
    let n = x_ticks.len().max(1);
    let px = |i: usize| x0 + w * (i as f64 + 0.5) / n as f64;
    let py = |v: f64| y0 + h - h * (v / y_max).clamp(0.0, 1.0);
    let _ = writeln!(
        s,
        r##"<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#888"/>"##
    );
    for k in 0..=4 {
        let v = y_max * k as f64 / 4.0;
        let _ = writeln!(
            s,
            r##"<text x="{}" y="{:.1}" text-anchor="end">{}</text><line x1="{x0}" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#eee"/>"##,
            x0 - 4.0,
            py(v) + 4.0,
            tick(v),
            x0 + w,
            py(v),
            py(v)
        );
    }
    for (i, t) in x_ticks.iter().enumerate() {
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#,
            px(i),
            y0 + h + 16.0,
            escape(t)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text><text x="{x0}" y="{}">{}</text>"#,
        x0 + w / 2.0,
        y0 + h + 34.0,
        escape(x_label),
        y0 - 8.0,
        escape(&p.y_label)
    );
    for (li, l) in p.lines.iter().enumerate() {
        let c = COLORS[li % COLORS.len()];
        let pts: Vec<String> =
            l.ys.iter()
                .enumerate()
                .filter_map(|(i, y)| Some(format!("{:.1},{:.1}", px(i), py((*y)?))))
                .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{c}" stroke-width="2"/>"#,
            pts.join(" ")
        );
        for (i, y) in l.ys.iter().enumerate() {
            if let Some(y) = y {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"><title>{}: {}</title></circle>"#,
                    px(i),
                    py(*y),
                    escape(&l.name),
                    tick(*y)
                );
            }
        }
    }
}

/// A y value as an axis label: three significant digits.
fn tick(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
        format!("{v:.decimals$}")
    }
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_panels_draw_every_point_and_the_legend() {
        let panel = |y_max| Panel {
            y_label: "s/proof".into(),
            y_max,
            lines: vec![
                Line {
                    name: "a<b".into(),
                    ys: vec![Some(1.0), Some(0.5), None],
                },
                Line {
                    name: "b".into(),
                    ys: vec![Some(2.0), Some(1.0), Some(0.7)],
                },
            ],
        };
        let ticks = ["1", "4", "8"].map(String::from);
        let svg = line_panels("t", "clients", &ticks, &[panel(None), panel(Some(1.0))]);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert_eq!(svg.matches("<polyline").count(), 4);
        assert_eq!(svg.matches("<circle").count(), 10);
        assert!(svg.contains("a&lt;b"));
        assert_eq!(tick(0.01234), "0.0123");
        assert_eq!(tick(12.34), "12.3");
        assert_eq!(tick(250.0), "250");
    }
}
