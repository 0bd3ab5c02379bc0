//! Reading the record a user hands to `envreg save KIND FILE`: parsed by the core's own
//! document parser (`envreg_core::load::parse_document`), so a file given to `save` is
//! read with exactly the options the registry loader uses (strict booleans,
//! leading-zero numbers kept as strings, alias-expansion limits). Size and UTF-8 are
//! checked by the caller before this sees the text.

use envreg_core::Diagnostic;

/// Parse YAML (JSON is YAML too) into a JSON value, keeping unknown fields and key order.
pub fn parse(text: &str) -> Result<serde_json::Value, Diagnostic> {
    envreg_core::load::parse_document(text)
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
        assert!(d.line.is_some(), "{d:?}");
    }

    #[test]
    fn an_alias_bomb_is_refused() {
        let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        let mut prev = 'a';
        for c in 'b'..='j' {
            let refs = vec![format!("*{prev}"); 10].join(", ");
            bomb.push_str(&format!("{c}: &{c} [{refs}]\n"));
            prev = c;
        }
        assert!(parse(&bomb).is_err());
    }
}
