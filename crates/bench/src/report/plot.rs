//! SVG line plots (plotters' SVG backend, no fonts needed).

use std::path::Path;

use plotters::prelude::*;

use super::ReportError;

/// One line of a plot.
pub struct Line {
    /// The legend entry.
    pub name: String,
    /// The points.
    pub points: Vec<(f64, f64)>,
    /// Dashed (baselines, bounds) or solid.
    pub dashed: bool,
}

const COLORS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

fn plot_error(e: impl std::fmt::Display) -> ReportError {
    ReportError::Plot(e.to_string())
}

/// Axes of a plot.
pub struct Axes<'a> {
    /// The caption.
    pub title: &'a str,
    /// The x label.
    pub x_label: &'a str,
    /// The y label.
    pub y_label: &'a str,
    /// `(min, max)` of x.
    pub x: (f64, f64),
    /// `(min, max)` of y.
    pub y: (f64, f64),
    /// Logarithmic x and y axes.
    pub log: bool,
}

/// Draws `lines` into an SVG file.
///
/// # Errors
/// [`ReportError::Plot`] when plotters fails (an unwritable path included).
pub fn draw(path: &Path, axes: &Axes, lines: &[Line]) -> Result<(), ReportError> {
    let root = SVGBackend::new(path, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(plot_error)?;
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(axes.title, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70);
    let style = |i: usize| COLORS[i % COLORS.len()];
    macro_rules! series {
        ($chart:expr) => {{
            let chart = &mut $chart;
            chart
                .configure_mesh()
                .x_desc(axes.x_label)
                .y_desc(axes.y_label)
                .draw()
                .map_err(plot_error)?;
            for (i, line) in lines.iter().enumerate() {
                let color = style(i);
                let width = if line.dashed { 1 } else { 2 };
                chart
                    .draw_series(LineSeries::new(
                        line.points.iter().copied(),
                        color.stroke_width(width),
                    ))
                    .map_err(plot_error)?
                    .label(line.name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(
                        line.points.iter().map(|&p| {
                            Circle::new(p, if line.dashed { 2 } else { 3 }, color.filled())
                        }),
                    )
                    .map_err(plot_error)?;
            }
            chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .position(SeriesLabelPosition::UpperLeft)
                .draw()
                .map_err(plot_error)?;
        }};
    }
    if axes.log {
        let mut chart = builder
            .build_cartesian_2d(
                (axes.x.0..axes.x.1).log_scale(),
                (axes.y.0..axes.y.1).log_scale(),
            )
            .map_err(plot_error)?;
        series!(chart);
    } else {
        let mut chart = builder
            .build_cartesian_2d(axes.x.0..axes.x.1, axes.y.0..axes.y.1)
            .map_err(plot_error)?;
        series!(chart);
    }
    root.present().map_err(plot_error)?;
    Ok(())
}
