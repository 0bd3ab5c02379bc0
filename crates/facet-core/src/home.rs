//! The user's home in a path a tool names: below both the judge and the session,
//! which both place `~/…` paths (`facet_core::judge::expand_home` re-exports it).

use std::borrow::Cow;

/// `~` and `~/…` as the user's home, because file tools expand them. `None` when the
/// path starts with `~` but the home is unknown, or names another user's home
/// (`~name/…`): such a path cannot be placed, so it is refused rather than guessed.
pub fn expand_home(raw: &str) -> Option<Cow<'_, str>> {
    let Some(rest) = raw.strip_prefix('~') else {
        return Some(Cow::Borrowed(raw));
    };
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let home = dirs::home_dir()?;
    Some(Cow::Owned(format!("{}{rest}", home.to_string_lossy())))
}
