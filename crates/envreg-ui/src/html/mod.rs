//! Server-rendered HTML, one module per view, with [`maud`]: every interpolated value
//! is HTML-escaped by the template engine itself, so a record's text (untrusted: anyone
//! who can write a YAML file wrote it) can never become markup. Nothing here builds
//! HTML by string concatenation, and nothing uses `PreEscaped` on registry data.
//!
//! The pages carry no inline script or style (the Content-Security-Policy forbids
//! both); the one script and the one stylesheet are served from `/assets/`.

pub mod cell;
pub mod layout;
pub mod matrix;
pub mod operations;
pub mod records;
