//! Image output: the format chosen by the path's extension (`.svg` or `.png`),
//! the backend for it, and the conversion of plotting errors. Charts implement
//! [`Picture`] once and are drawn on either backend.

use crate::error::ReportError;
use crate::font::ensure_font_registered;
use plotters::coord::Shift;
use plotters::prelude::{
    BitMapBackend, DrawingArea, DrawingAreaErrorKind, DrawingBackend, IntoDrawingArea, SVGBackend,
};
use std::path::Path;

/// Most pixels a PNG may have (3 bytes each in memory while drawing).
pub(crate) const MAX_PNG_PIXELS: u64 = 64 * 1024 * 1024;

/// The image formats this crate writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ImageFormat {
    Svg,
    Png,
}

/// The format named by `path`'s extension (case-insensitive).
pub(crate) fn image_format(path: &Path) -> Result<ImageFormat, ReportError> {
    let extension = path
        .extension()
        .map(|extension| extension.to_string_lossy().into_owned())
        .unwrap_or_default();
    match extension.to_ascii_lowercase().as_str() {
        "svg" => Ok(ImageFormat::Svg),
        "png" => Ok(ImageFormat::Png),
        _ => Err(ReportError::UnsupportedExtension {
            extension,
            path: path.to_path_buf(),
        }),
    }
}

/// Checks that `path` names an image this crate can write (`.svg` or `.png`),
/// so a command can refuse a bad `--plot FILE` before doing its work.
pub fn check_image_path(path: &Path) -> Result<(), ReportError> {
    image_format(path).map(|_| ())
}

/// A plotting failure before the output path is attached.
#[derive(Debug)]
pub(crate) struct PlotError(pub String);

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(error: DrawingAreaErrorKind<E>) -> Self {
        PlotError(error.to_string())
    }
}

/// A chart that can draw itself on any plotters backend.
pub(crate) trait Picture {
    /// What drawing reports back (e.g. how many blocks were drawn).
    type Summary;
    /// Draws on `root`, which covers the whole image.
    fn draw<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
    ) -> Result<Self::Summary, PlotError>;
}

/// Draws `picture` into `path` as SVG or PNG, by extension.
pub(crate) fn render_to_file<P: Picture>(
    picture: &P,
    (width_px, height_px): (u32, u32),
    path: &Path,
) -> Result<P::Summary, ReportError> {
    let format = image_format(path)?;
    ensure_font_registered()?;
    let plotting = |PlotError(message)| ReportError::Plotting {
        path: path.to_path_buf(),
        message,
    };
    let io = |source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    };
    // Written whole or not at all (a temporary file keeping the extension,
    // so the PNG encoder still picks the format, renamed on success).
    output_file::write_via_path(
        path,
        |target| match format {
            ImageFormat::Svg => {
                let (summary, svg) =
                    render_svg_string(picture, (width_px, height_px)).map_err(plotting)?;
                std::fs::write(target, svg).map_err(io)?;
                Ok(summary)
            }
            ImageFormat::Png => {
                if u64::from(width_px) * u64::from(height_px) > MAX_PNG_PIXELS {
                    return Err(ReportError::ImageSize {
                        width_px,
                        height_px,
                        reason: "more than 64 Mi pixels; select fewer ranks or write SVG",
                    });
                }
                // Creating the file first reports a bad path as an I/O error naming it.
                std::fs::File::create(target).map_err(io)?;
                let root = BitMapBackend::new(target, (width_px, height_px)).into_drawing_area();
                let summary = picture.draw(&root).map_err(plotting)?;
                root.present().map_err(|error| plotting(error.into()))?;
                Ok(summary)
            }
        },
        io,
    )
}

/// Draws `picture` as an SVG document in memory.
pub(crate) fn render_svg_string<P: Picture>(
    picture: &P,
    size_px: (u32, u32),
) -> Result<(P::Summary, String), PlotError> {
    ensure_font_registered().map_err(|error| PlotError(error.to_string()))?;
    let mut svg = String::new();
    let summary = {
        let root = SVGBackend::with_string(&mut svg, size_px).into_drawing_area();
        let summary = picture.draw(&root)?;
        root.present()?;
        summary
    };
    Ok((summary, svg))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extension_picks_the_format_and_unknown_ones_are_named() {
        assert_eq!(
            image_format(Path::new("a/b.svg")).unwrap(),
            ImageFormat::Svg
        );
        assert_eq!(image_format(Path::new("b.PNG")).unwrap(), ImageFormat::Png);
        let error = image_format(Path::new("chart.jpeg")).unwrap_err();
        assert!(error.to_string().contains("\"jpeg\""), "{error}");
        assert!(matches!(
            image_format(Path::new("chart")),
            Err(ReportError::UnsupportedExtension { .. })
        ));
    }
}
