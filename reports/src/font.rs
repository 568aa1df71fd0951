//! The embedded font. Charts use the family "sans-serif", which this module
//! registers once with plotters from the `dejavu` crate's DejaVu Sans, so
//! rendering never depends on the fonts installed on the machine.

use crate::error::ReportError;
use plotters::style::{register_font, FontStyle};
use std::sync::OnceLock;

/// The family name every chart uses.
pub(crate) const FONT_FAMILY: &str = "sans-serif";

/// Registers DejaVu Sans (regular and bold) as [`FONT_FAMILY`]; later calls are free.
pub(crate) fn ensure_font_registered() -> Result<(), ReportError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        register_font(FONT_FAMILY, FontStyle::Normal, dejavu::sans::regular()).is_ok()
            && register_font(FONT_FAMILY, FontStyle::Bold, dejavu::sans::bold()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(ReportError::Font)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::style::{FontDesc, FontFamily};

    #[test]
    fn embedded_font_measures_text() {
        ensure_font_registered().unwrap();
        let font = FontDesc::new(FontFamily::Name(FONT_FAMILY), 14.0, FontStyle::Normal);
        let (width_px, _) = font.box_size("forward").unwrap();
        assert!(width_px > 20, "text width {width_px} px");
    }
}
