//! What a run prints and writes: [`report`] the text table and the JSON, [`verdict`] the
//! plain-language lines at the top, [`plot`] the SVG, [`html`] the one-page HTML report.

pub mod html;
pub mod plot;
pub mod report;
pub mod verdict;
