//! Every URL the UI links to, built in one place from the ids it names.
//!
//! Each view has its own address (`/cell/prod/checkout-api`, `/record/services/
//! checkout-api#L7`), so a link pasted into a chat or a ticket opens the same view.
//! Ids are validated by the registry before they are loaded, but a path segment is
//! still percent-encoded here: an id is data, and a URL built from data is encoded.

use envreg_core::RecordKind;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// Everything but RFC 3986's unreserved characters is encoded in a path segment.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One path segment, percent-encoded.
pub fn segment(text: &str) -> String {
    // `.` and `..` are unreserved but mean something to a URL resolver; no valid id is
    // either, and encoding them keeps a segment a segment.
    match text {
        "." => "%2E".to_owned(),
        ".." => "%2E%2E".to_owned(),
        _ => utf8_percent_encode(text, SEGMENT).to_string(),
    }
}

/// A query value, percent-encoded.
pub fn query_value(text: &str) -> String {
    utf8_percent_encode(text, SEGMENT).to_string()
}

pub fn matrix() -> String {
    "/".to_owned()
}

pub fn cell(environment: &str, service: &str) -> String {
    format!("/cell/{}/{}", segment(environment), segment(service))
}

pub fn cell_deployment(environment: &str, service: &str, deployment: &str) -> String {
    format!(
        "/cell/{}/{}/{}",
        segment(environment),
        segment(service),
        segment(deployment)
    )
}

pub fn operations(environment: &str, service: &str, deployment: Option<&str>) -> String {
    match deployment {
        Some(d) => format!(
            "/operations/{}/{}/{}",
            segment(environment),
            segment(service),
            segment(d)
        ),
        None => format!("/operations/{}/{}", segment(environment), segment(service)),
    }
}

pub fn record(kind: RecordKind, id: &str) -> String {
    format!("/record/{}/{}", kind.dir_name(), segment(id))
}

/// A record's page scrolled to one line of its YAML.
pub fn record_line(kind: RecordKind, id: &str, line: Option<usize>) -> String {
    match line {
        Some(line) => format!("{}#L{line}", record(kind, id)),
        None => record(kind, id),
    }
}

/// The record page of a registry-relative file (`services/x.yaml`), when the file is
/// one of a kind folder's records.
pub fn record_of_file(file: &str) -> Option<(RecordKind, String)> {
    let (dir, name) = file.split_once('/')?;
    let kind = RecordKind::from_dir_name(dir)?;
    let stem = name
        .strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))?;
    (!stem.contains('/')).then(|| (kind, stem.to_owned()))
}

pub fn validation() -> String {
    "/validation".to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_encoded() {
        assert_eq!(segment("checkout-api_1.2~x"), "checkout-api_1.2~x");
        assert_eq!(segment("a/b"), "a%2Fb");
        assert_eq!(segment(".."), "%2E%2E");
        assert_eq!(segment("<x>"), "%3Cx%3E");
        assert_eq!(cell("prod", "a b"), "/cell/prod/a%20b");
    }

    proptest::proptest! {
        /// A segment never carries a separator, and decodes back to its text.
        #[test]
        fn a_segment_stays_one_segment(text in ".{0,24}") {
            let s = segment(&text);
            proptest::prop_assert!(!s.contains('/') && !s.contains('?') && !s.contains('#'));
            proptest::prop_assert!(s != "." && s != "..");
            let back = percent_encoding::percent_decode_str(&s).decode_utf8_lossy();
            proptest::prop_assert_eq!(back.as_ref(), text.as_str());
            let _ = record_of_file(&text);
        }
    }

    #[test]
    fn files_map_to_record_pages() {
        assert_eq!(
            record_of_file("services/checkout-api.yaml"),
            Some((RecordKind::Service, "checkout-api".to_owned()))
        );
        assert_eq!(
            record_of_file("rule-profiles/x.yml"),
            Some((RecordKind::RuleProfile, "x".to_owned()))
        );
        assert_eq!(record_of_file("envreg.yaml"), None);
        assert_eq!(record_of_file("services/a/b.yaml"), None);
        assert_eq!(record_of_file("nope/x.yaml"), None);
    }
}
