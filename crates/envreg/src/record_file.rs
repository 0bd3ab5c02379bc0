//! Reading the record a user hands to `envreg save KIND FILE`.
//!
//! REQUEST (cli → core-store): please make `envreg_core::load::parse_document` public
//! (or add `pub fn parse_record_text(text) -> Result<serde_json::Value, Diagnostic>`),
//! so a file given to `save` is parsed with exactly the options the loader uses. Until
//! then this module repeats those options (strict booleans, leading-zero numbers as
//! strings, alias-expansion limits) — keep the two in step.

use envreg_core::Diagnostic;

/// Parse YAML (JSON is YAML too) into a JSON value, keeping unknown fields and key order.
pub fn parse(text: &str) -> Result<serde_json::Value, Diagnostic> {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.with_snippet = false;
    options.alias_limits.max_total_replayed_events = 20_000;
    options.alias_limits.max_alias_expansions_per_anchor = 1_000;
    options.alias_limits.max_replay_stack_depth = 16;
    serde_saphyr::from_str_with_options::<serde_json::Value>(text, options).map_err(|err| {
        let bare = err.without_snippet();
        let message: String = bare.to_string().chars().take(240).collect();
        let mut d = Diagnostic::error("YAML_INVALID", message);
        if let Some(loc) = err.location() {
            let line = u32::try_from(loc.line()).unwrap_or(u32::MAX);
            let column = u32::try_from(loc.column()).unwrap_or(u32::MAX);
            if line > 0 {
                d = d.at_position(line, column);
            }
        }
        d
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_strings_that_other_parsers_rewrite() {
        let v = parse("id: x\nmode: '0755'\nflag: no\nperm: 0755\n").unwrap();
        assert_eq!(v["flag"], "no");
        assert_eq!(v["perm"], "0755");
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let d = parse("id: x\nname: [unclosed\n").unwrap_err();
        assert_eq!(d.code, "YAML_INVALID");
        assert!(d.line.is_some());
    }

    #[test]
    fn an_alias_bomb_is_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='j' {
            bomb.push_str(&format!("{c}: &{c} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"));
            prev = c;
        }
        assert!(parse(&bomb).is_err());
    }
}
