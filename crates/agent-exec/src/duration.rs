//! `--deadline` values: `90s`, `5m`, `1h30m`, `500ms`, `2h`, `7d`, or plain seconds (`90`).

use std::time::Duration;

/// Parses a duration; the message says what is accepted.
pub fn parse(text: &str) -> Result<Duration, String> {
    let bad = || format!("invalid duration {text:?}: use e.g. 90s, 5m, 1h30m or 500ms");
    let text = text.trim();
    if text.is_empty() {
        return Err(bad());
    }
    let mut total = Duration::ZERO;
    let mut rest = text;
    if let Ok(seconds) = text.parse::<u64>() {
        // Plain seconds take the same zero check as `0s` below.
        total = Duration::from_secs(seconds);
        rest = "";
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(bad());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| bad())?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len());
        let unit = match &rest[..unit_len] {
            "ms" => Duration::from_millis(n),
            "s" => Duration::from_secs(n),
            "m" => Duration::from_secs(n.checked_mul(60).ok_or_else(bad)?),
            "h" => Duration::from_secs(n.checked_mul(3600).ok_or_else(bad)?),
            "d" => Duration::from_secs(n.checked_mul(86_400).ok_or_else(bad)?),
            _ => return Err(bad()),
        };
        total = total.checked_add(unit).ok_or_else(bad)?;
        rest = &rest[unit_len..];
    }
    if total.is_zero() {
        return Err(format!("invalid duration {text:?}: must be more than zero"));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("30d"), Ok(Duration::from_secs(30 * 86_400)));
        for bad in [
            "",
            "s",
            "5x",
            "1.5s",
            "-1s",
            "0s",
            "0",
            "0ms",
            "99999999999999999999h",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
