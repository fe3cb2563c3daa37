//! A stacked-bar SVG of per-stage medians, one bar per measured series.
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
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{y}">{}</text>"#,
            y - 10.0,
            COLORS[i % COLORS.len()],
            x + 16.0,
            escape(name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn escape(t: &str) -> String {
    t.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
