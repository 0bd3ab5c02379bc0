//! `{{ name }}` templates: parsing and recursive, cycle-safe resolution.
//!
//! A template is a string in which `{{name}}` (spaces inside the braces allowed) refers
//! to a variable. Variable values may themselves be templates; references resolve
//! recursively (data model §5).
//!
//! # Syntax
//! - `{{` opens a reference and the next `}}` closes it. A `{{` without a closing `}}`
//!   and a `}}` outside any reference are both *unbalanced braces*
//!   (`TEMPLATE_INVALID`); so is an empty or malformed name.
//! - A name is ASCII letters, digits, `_`, `-` and `.` (so built-ins such as `env.id`
//!   are ordinary names), starting with a letter, digit or `_`.
//! - A single `{` or `}` is plain text, so `${HOME}` or `a{b}` need no escaping.
//!   There is deliberately no escape for a literal `{{`/`}}`: no registry field needs
//!   one, and an escape syntax is one more thing for a hand-editor to get wrong.
//!
//! # Resolution invariants
//! - Resolution always terminates: a cycle is reported with the names forming it, a
//!   chain of references deeper than [`MAX_DEPTH`] is refused, and a value that would
//!   grow past [`MAX_VALUE_LEN`] bytes (the "billion laughs" of templates: each
//!   variable doubling the previous one) is refused. Recursion depth is therefore
//!   bounded by [`MAX_DEPTH`], never by the input.
//! - Each variable is resolved at most once per [`Resolver`] (memoised), so the cost is
//!   linear in the total size of the values actually referenced.
//! - The resolver knows nothing about records or layers: it sees a flat map from name
//!   to `(value, origin)`. The caller (`resolve.rs`) builds that map from the layers of
//!   §5 and turns [`ResolveError`] into `PARAMETER_RESOLUTION_FAILED` with the template,
//!   field path and layers searched. The origin type `O` is the caller's, so
//!   provenance can be an index or a full record reference.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::rc::Rc;

/// Longest chain of variable-to-variable references that is followed.
pub const MAX_DEPTH: usize = 32;

/// Largest resolved value, in bytes. Far above any real path or parameter; it exists
/// so that a registry of mutually doubling variables cannot exhaust memory.
pub const MAX_VALUE_LEN: usize = 64 * 1024;

/// Largest total of resolved values one [`Resolver`] hands out (1 MiB): what one
/// Service Context, one operation's parameters or one UI cell page may hold. Checked
/// while expanding, so a small record that repeats a large value (3,000 paths of
/// `{{v1}}`, `v1` 64 KiB) fails after about 1 MiB, not after building hundreds.
pub const MAX_OUTPUT_LEN: usize = 1024 * 1024;

/// One piece of a parsed template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece<'t> {
    /// Text copied verbatim.
    Text(&'t str),
    /// A `{{ name }}` reference; the name is trimmed.
    Ref(&'t str),
}

/// Why a template does not parse. Reported as `TEMPLATE_INVALID` by validation and
/// as the cause of `PARAMETER_RESOLUTION_FAILED` by resolution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// Byte offset in the template where the problem starts.
    pub offset: usize,
    pub kind: SyntaxErrorKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SyntaxErrorKind {
    /// `{{` with no `}}` after it.
    Unclosed,
    /// `}}` with no `{{` before it.
    UnexpectedClose,
    /// `{{ }}`.
    EmptyName,
    /// `{{ a b }}`, `{{ {x }}` and the like; holds the offending text.
    InvalidName(String),
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            SyntaxErrorKind::Unclosed => write!(
                f,
                "unbalanced braces: `{{{{` at byte {} has no closing `}}}}`",
                self.offset
            ),
            SyntaxErrorKind::UnexpectedClose => write!(
                f,
                "unbalanced braces: `}}}}` at byte {} has no opening `{{{{`",
                self.offset
            ),
            SyntaxErrorKind::EmptyName => {
                write!(f, "empty reference `{{{{}}}}` at byte {}", self.offset)
            }
            SyntaxErrorKind::InvalidName(name) => write!(
                f,
                "invalid variable name {name:?} at byte {} (use letters, digits, `_`, `-`, `.`)",
                self.offset
            ),
        }
    }
}

impl std::error::Error for SyntaxError {}

/// True when `src` holds no reference and no brace pair, i.e. it resolves to itself.
/// The fast path for the many literal paths in a registry.
pub fn is_literal(src: &str) -> bool {
    find_pair(src.as_bytes(), 0, b'{').is_none() && find_pair(src.as_bytes(), 0, b'}').is_none()
}

/// Byte offset of the first `cc` (`{{` or `}}`) at or after `from`. A byte scan
/// rather than `str::find`: templates are short, and building a substring searcher
/// for each one cost more than the scan.
fn find_pair(bytes: &[u8], from: usize, c: u8) -> Option<usize> {
    let mut i = from;
    while i + 1 < bytes.len() {
        if bytes[i] == c {
            if bytes[i + 1] == c {
                return Some(i);
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    None
}

/// Parses a template into pieces.
pub fn parse(src: &str) -> Result<Vec<Piece<'_>>, SyntaxError> {
    let mut pieces = Vec::new();
    for_each_piece(src, |piece| pieces.push(piece))?;
    Ok(pieces)
}

/// Checks a template's syntax without allocating (used by validation).
pub fn check(src: &str) -> Result<(), SyntaxError> {
    for_each_piece(src, |_| {})
}

/// The names a template references, in order of appearance (duplicates kept).
pub fn references(src: &str) -> Result<Vec<&str>, SyntaxError> {
    let mut names = Vec::new();
    for_each_piece(src, |piece| {
        if let Piece::Ref(name) = piece {
            names.push(name);
        }
    })?;
    Ok(names)
}

fn for_each_piece<'t>(src: &'t str, mut emit: impl FnMut(Piece<'t>)) -> Result<(), SyntaxError> {
    let bytes = src.as_bytes();
    let mut rest = 0;
    while rest < src.len() {
        let tail = &src[rest..];
        let open = find_pair(bytes, rest, b'{').map(|i| i - rest);
        let close = find_pair(bytes, rest, b'}').map(|i| i - rest);
        match (open, close) {
            (None, None) => {
                emit(Piece::Text(tail));
                return Ok(());
            }
            // A `}}` before any `{{` closes nothing.
            (None, Some(c)) => {
                return Err(SyntaxError {
                    offset: rest + c,
                    kind: SyntaxErrorKind::UnexpectedClose,
                });
            }
            (Some(o), Some(c)) if c < o => {
                return Err(SyntaxError {
                    offset: rest + c,
                    kind: SyntaxErrorKind::UnexpectedClose,
                });
            }
            (Some(o), _) => {
                if o > 0 {
                    emit(Piece::Text(&tail[..o]));
                }
                let inner_start = rest + o + 2;
                let Some(len) = find_pair(bytes, inner_start, b'}').map(|i| i - inner_start) else {
                    return Err(SyntaxError {
                        offset: rest + o,
                        kind: SyntaxErrorKind::Unclosed,
                    });
                };
                let raw = &src[inner_start..inner_start + len];
                let name = raw.trim_matches(|c| c == ' ' || c == '\t');
                if name.is_empty() {
                    return Err(SyntaxError {
                        offset: rest + o,
                        kind: SyntaxErrorKind::EmptyName,
                    });
                }
                if !is_valid_name(name) {
                    return Err(SyntaxError {
                        offset: rest + o,
                        kind: SyntaxErrorKind::InvalidName(name.to_owned()),
                    });
                }
                emit(Piece::Ref(name));
                rest = inner_start + len + 2;
            }
        }
    }
    Ok(())
}

/// `[A-Za-z0-9_][A-Za-z0-9_.-]*`
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    match bytes.next() {
        Some(b) if b.is_ascii_alphanumeric() || b == b'_' => {}
        _ => return false,
    }
    bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// One variable as the resolver sees it: its raw value (maybe a template) and where
/// it was defined.
#[derive(Debug, Clone)]
pub struct Variable<'a, O> {
    pub value: Cow<'a, str>,
    pub origin: O,
}

/// The merged variables: name → winning definition.
pub type Variables<'a, O> = HashMap<&'a str, Variable<'a, O>, NameHasher>;

/// A word-at-a-time multiplicative hash (the FxHash construction) for the small maps
/// of one resolve: variable names, field paths, origins. Keys come from the registry,
/// not from an adversary choosing collisions, and a call touches only a few dozen of
/// them. SipHash, and then byte-wise FNV, were the largest single items in profiles of
/// the warm resolve; this is not.
pub type NameHasher = std::hash::BuildHasherDefault<WordHasher>;

/// The hash state of [`NameHasher`].
#[derive(Debug, Clone, Copy, Default)]
pub struct WordHasher(u64);

impl WordHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl std::hash::Hasher for WordHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // The length keeps "a" and "a\0" apart.
            self.add(u64::from_le_bytes(word) ^ ((rest.len() as u64) << 59));
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

/// A resolved template: the text and the origins of the variables it referenced
/// directly, deduplicated, in order of first reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved<O> {
    pub value: String,
    pub from: Vec<O>,
}

/// Why resolution failed. `via` is the chain of variables being resolved when the
/// failure happened, outermost first (empty when the failing reference is in the
/// top-level template itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResolveError {
    /// The top-level template (`variable: None`) or a variable's value does not parse.
    Syntax {
        variable: Option<String>,
        error: SyntaxError,
        via: Vec<String>,
    },
    /// A referenced name is defined in no layer.
    Unknown { name: String, via: Vec<String> },
    /// The names forming a cycle; the first name is repeated at the end.
    Cycle { cycle: Vec<String> },
    /// The chain of references is deeper than [`MAX_DEPTH`].
    TooDeep { via: Vec<String> },
    /// The value would exceed [`MAX_VALUE_LEN`] bytes.
    TooLong { via: Vec<String> },
    /// The values resolved so far plus this one would exceed [`MAX_OUTPUT_LEN`] bytes;
    /// `largest` is the biggest variable the template referenced, with its length.
    OutputTooLarge {
        used: usize,
        largest: Option<(String, usize)>,
    },
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let via = |f: &mut fmt::Formatter<'_>, via: &[String]| {
            if via.is_empty() {
                Ok(())
            } else {
                write!(f, " (via {})", via.join(" → "))
            }
        };
        match self {
            ResolveError::Syntax {
                variable: Some(name),
                error,
                via: chain,
            } => {
                write!(f, "variable {name} is not a valid template: {error}")?;
                via(f, chain)
            }
            ResolveError::Syntax {
                variable: None,
                error,
                ..
            } => write!(f, "not a valid template: {error}"),
            ResolveError::Unknown { name, via: chain } => {
                write!(f, "unknown variable {name}")?;
                via(f, chain)
            }
            ResolveError::Cycle { cycle } => {
                write!(f, "variable cycle {}", cycle.join(" → "))
            }
            ResolveError::TooDeep { via: chain } => {
                write!(f, "references nest deeper than {MAX_DEPTH} variables")?;
                via(f, chain)
            }
            ResolveError::TooLong { via: chain } => {
                write!(f, "resolved value exceeds {MAX_VALUE_LEN} bytes")?;
                via(f, chain)
            }
            ResolveError::OutputTooLarge { used, largest } => {
                write!(
                    f,
                    "the resolved output would exceed its cap of {MAX_OUTPUT_LEN} bytes (1 MiB; {used} bytes before this field)"
                )?;
                if let Some((name, len)) = largest {
                    write!(
                        f,
                        "; this field repeats variable {name} ({len} bytes): shorten that variable or stop repeating it"
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ResolveError {}

/// Resolves templates against one set of merged variables, memoising each variable.
/// Build one per resolve call; it is cheap (no allocation until used).
pub struct Resolver<'v, 'a, O> {
    vars: &'v Variables<'a, O>,
    memo: HashMap<&'a str, Rc<str>, NameHasher>,
    /// Bytes of resolved values handed out since [`Resolver::new`] or
    /// [`Resolver::start_output`], against [`MAX_OUTPUT_LEN`].
    output: usize,
}

impl<'v, 'a, O: Clone + PartialEq> Resolver<'v, 'a, O> {
    pub fn new(vars: &'v Variables<'a, O>) -> Self {
        Resolver {
            vars,
            memo: HashMap::default(),
            output: 0,
        }
    }

    /// Starts a new output (another operation's parameters) with the same memo: the
    /// output cap counts per output, the memo is shared.
    pub fn start_output(&mut self) {
        self.output = 0;
    }

    /// Resolves a template given directly (a path, a parameter).
    pub fn resolve(&mut self, template: &str) -> Result<Resolved<O>, ResolveError> {
        if is_literal(template) {
            self.charge(template.len(), &[])?;
            return Ok(Resolved {
                value: template.to_owned(),
                from: Vec::new(),
            });
        }
        let pieces = parse(template).map_err(|error| ResolveError::Syntax {
            variable: None,
            error,
            via: Vec::new(),
        })?;
        let mut stack = Vec::new();
        let resolved = self.expand(&pieces, &mut stack, true)?;
        self.output += resolved.value.len();
        Ok(resolved)
    }

    /// Counts `len` more output bytes, or refuses them past [`MAX_OUTPUT_LEN`].
    fn charge(&mut self, len: usize, pieces: &[Piece<'_>]) -> Result<(), ResolveError> {
        if self.output.saturating_add(len) <= MAX_OUTPUT_LEN {
            self.output += len;
            return Ok(());
        }
        Err(self.too_large(pieces))
    }

    fn too_large(&self, pieces: &[Piece<'_>]) -> ResolveError {
        let largest = pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Ref(name) => {
                    let len = self
                        .memo
                        .get(*name)
                        .map(|v| v.len())
                        .or_else(|| self.vars.get(*name).map(|v| v.value.len()))?;
                    Some(((*name).to_owned(), len))
                }
                Piece::Text(_) => None,
            })
            .max_by_key(|(_, len)| *len);
        ResolveError::OutputTooLarge {
            used: self.output,
            largest,
        }
    }

    /// Resolves a variable's own value; `from` lists the variables its value references.
    pub fn resolve_variable(&mut self, name: &str) -> Result<Resolved<O>, ResolveError> {
        let Some((key, var)) = self.vars.get_key_value(name) else {
            return Err(ResolveError::Unknown {
                name: name.to_owned(),
                via: Vec::new(),
            });
        };
        let mut stack = vec![*key];
        let pieces = parse(&var.value).map_err(|error| ResolveError::Syntax {
            variable: Some(name.to_owned()),
            error,
            via: Vec::new(),
        })?;
        let resolved = self.expand(&pieces, &mut stack, true)?;
        self.output += resolved.value.len();
        if !is_literal(&var.value) {
            self.memo.insert(key, Rc::from(resolved.value.as_str()));
        }
        Ok(resolved)
    }

    fn expand(
        &mut self,
        pieces: &[Piece<'_>],
        stack: &mut Vec<&'a str>,
        collect_origins: bool,
    ) -> Result<Resolved<O>, ResolveError> {
        let mut value = String::new();
        let mut from: Vec<O> = Vec::new();
        for piece in pieces {
            match *piece {
                Piece::Text(text) => value.push_str(text),
                Piece::Ref(name) => {
                    let (resolved, origin) = self.value_of(name, stack)?;
                    value.push_str(&resolved);
                    if collect_origins && !from.contains(origin) {
                        from.push(origin.clone());
                    }
                }
            }
            if value.len() > MAX_VALUE_LEN {
                return Err(ResolveError::TooLong { via: owned(stack) });
            }
            // A top-level value (collect_origins) is output: checked against the cap
            // while it grows, so memory stays bounded by the cap plus one value.
            if collect_origins && self.output.saturating_add(value.len()) > MAX_OUTPUT_LEN {
                return Err(self.too_large(pieces));
            }
        }
        Ok(Resolved { value, from })
    }

    fn value_of(
        &mut self,
        name: &str,
        stack: &mut Vec<&'a str>,
    ) -> Result<(Text<'v>, &'v O), ResolveError> {
        let vars = self.vars;
        let Some((key, var)) = vars.get_key_value(name) else {
            return Err(ResolveError::Unknown {
                name: name.to_owned(),
                via: owned(stack),
            });
        };
        // Most variables are plain text: lend it out, no copy, no memo entry.
        if is_literal(&var.value) {
            return Ok((Text::Borrowed(&var.value), &var.origin));
        }
        if let Some(done) = self.memo.get(key) {
            return Ok((Text::Shared(done.clone()), &var.origin));
        }
        if let Some(start) = stack.iter().position(|n| n == key) {
            let mut cycle = owned(&stack[start..]);
            cycle.push((*key).to_owned());
            return Err(ResolveError::Cycle { cycle });
        }
        if stack.len() >= MAX_DEPTH {
            return Err(ResolveError::TooDeep { via: owned(stack) });
        }
        let pieces = parse(&var.value).map_err(|error| ResolveError::Syntax {
            variable: Some((*key).to_owned()),
            error,
            via: owned(stack),
        })?;
        stack.push(key);
        let expanded = self.expand(&pieces, stack, false)?;
        stack.pop();
        let value: Rc<str> = Rc::from(expanded.value);
        self.memo.insert(key, value.clone());
        Ok((Text::Shared(value), &var.origin))
    }
}

/// A resolved variable value: borrowed when the variable is plain text, shared from
/// the memo when it had to be expanded.
enum Text<'v> {
    Borrowed(&'v str),
    Shared(Rc<str>),
}

impl std::ops::Deref for Text<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            Text::Borrowed(s) => s,
            Text::Shared(s) => s,
        }
    }
}

fn owned(names: &[&str]) -> Vec<String> {
    names.iter().map(|n| (*n).to_owned()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn vars<'a>(pairs: &[(&'a str, &'a str)]) -> Variables<'a, usize> {
        pairs
            .iter()
            .enumerate()
            .map(|(i, (k, v))| {
                (
                    *k,
                    Variable {
                        value: Cow::Borrowed(*v),
                        origin: i,
                    },
                )
            })
            .collect()
    }

    /// Issue 19 finding 7: the cap was per value, so 3,000 references to one 64 KiB
    /// value built 193 MB. The resolver now refuses the reference that would take its
    /// output past [`MAX_OUTPUT_LEN`], naming the variable that repeats.
    #[test]
    fn total_output_is_capped_while_expanding() {
        let big = "x".repeat(MAX_VALUE_LEN);
        let vars = vars(&[("v1", big.as_str())]);
        let mut r = Resolver::new(&vars);
        let fits = MAX_OUTPUT_LEN / MAX_VALUE_LEN;
        for _ in 0..fits {
            r.resolve("{{v1}}").unwrap();
        }
        match r.resolve("{{v1}}") {
            Err(ResolveError::OutputTooLarge { used, largest }) => {
                assert_eq!(used, fits * MAX_VALUE_LEN);
                assert_eq!(largest, Some(("v1".to_owned(), MAX_VALUE_LEN)));
            }
            other => panic!("{other:?}"),
        }
        // A new output (another operation's parameters) starts from zero.
        r.start_output();
        assert!(r.resolve("{{v1}}").is_ok());
    }

    #[test]
    fn parses_text_and_references_with_spaces() {
        assert_eq!(
            parse("/opt/{{ appName }}/lib/{{env.id}}x").unwrap(),
            vec![
                Piece::Text("/opt/"),
                Piece::Ref("appName"),
                Piece::Text("/lib/"),
                Piece::Ref("env.id"),
                Piece::Text("x"),
            ]
        );
        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(
            parse("${HOME}/a{b}").unwrap(),
            vec![Piece::Text("${HOME}/a{b}")]
        );
    }

    #[test]
    fn unbalanced_braces_are_clear_errors() {
        let e = parse("/opt/{{appName").unwrap_err();
        assert_eq!(e.kind, SyntaxErrorKind::Unclosed);
        assert_eq!(e.offset, 5);
        assert!(e.to_string().contains("unbalanced braces"), "{e}");

        let e = parse("/opt/appName}}/x").unwrap_err();
        assert_eq!(e.kind, SyntaxErrorKind::UnexpectedClose);
        assert_eq!(e.offset, 12);

        let e = parse("a}}{{b}}").unwrap_err();
        assert_eq!(e.kind, SyntaxErrorKind::UnexpectedClose);

        assert_eq!(
            parse("{{  }}").unwrap_err().kind,
            SyntaxErrorKind::EmptyName
        );
        assert_eq!(
            parse("{{a b}}").unwrap_err().kind,
            SyntaxErrorKind::InvalidName("a b".into())
        );
        assert_eq!(
            parse("{{{a}}}").unwrap_err().kind,
            SyntaxErrorKind::InvalidName("{a".into())
        );
        assert!(check("{{a}}}").is_ok(), "a trailing single brace is text");
    }

    #[test]
    fn resolves_recursively_and_reports_direct_origins() {
        let v = vars(&[
            ("logRoot", "/data/logs"),
            ("appName", "aico"),
            ("logDir", "{{logRoot}}/{{ appName }}"),
        ]);
        let mut r = Resolver::new(&v);
        let out = r.resolve("{{logDir}}/app.log").unwrap();
        assert_eq!(out.value, "/data/logs/aico/app.log");
        assert_eq!(out.from, vec![2], "only the directly referenced variable");

        let out = r.resolve("{{appName}}-{{appName}}-{{logRoot}}").unwrap();
        assert_eq!(out.value, "aico-aico-/data/logs");
        assert_eq!(
            out.from,
            vec![1, 0],
            "deduplicated, in order of first reference"
        );

        let var = r.resolve_variable("logDir").unwrap();
        assert_eq!(var.value, "/data/logs/aico");
        assert_eq!(var.from, vec![0, 1]);
    }

    #[test]
    fn unknown_name_names_the_chain() {
        let v = vars(&[("logDir", "{{logRoot}}/x")]);
        let err = Resolver::new(&v).resolve("{{logDir}}").unwrap_err();
        assert_eq!(
            err,
            ResolveError::Unknown {
                name: "logRoot".into(),
                via: vec!["logDir".into()]
            }
        );
        assert_eq!(err.to_string(), "unknown variable logRoot (via logDir)");
    }

    #[test]
    fn template_cycle_is_detected() {
        let v = vars(&[("a", "x{{b}}"), ("b", "{{c}}"), ("c", "{{a}}")]);
        let err = Resolver::new(&v).resolve("{{a}}").unwrap_err();
        assert_eq!(
            err,
            ResolveError::Cycle {
                cycle: vec!["a".into(), "b".into(), "c".into(), "a".into()]
            }
        );
        let self_ref = vars(&[("a", "{{a}}")]);
        assert!(matches!(
            Resolver::new(&self_ref).resolve_variable("a"),
            Err(ResolveError::Cycle { .. })
        ));
    }

    #[test]
    fn deep_chains_are_refused_not_overflowed() {
        let names: Vec<String> = (0..200).map(|i| format!("v{i}")).collect();
        let values: Vec<String> = (0..200)
            .map(|i| {
                if i == 199 {
                    "end".to_owned()
                } else {
                    format!("{{{{v{}}}}}", i + 1)
                }
            })
            .collect();
        let v: Variables<'_, usize> = names
            .iter()
            .zip(&values)
            .enumerate()
            .map(|(i, (n, val))| {
                (
                    n.as_str(),
                    Variable {
                        value: Cow::Borrowed(val.as_str()),
                        origin: i,
                    },
                )
            })
            .collect();
        let err = Resolver::new(&v).resolve("{{v0}}").unwrap_err();
        assert!(matches!(err, ResolveError::TooDeep { ref via } if via.len() == MAX_DEPTH));
        // Resolving from the far end works: the bound is on depth, not on the registry.
        assert_eq!(Resolver::new(&v).resolve("{{v180}}").unwrap().value, "end");
    }

    #[test]
    fn doubling_variables_hit_the_length_cap() {
        let names: Vec<String> = (0..30).map(|i| format!("v{i}")).collect();
        let values: Vec<String> = (0..30)
            .map(|i| {
                if i == 29 {
                    "0123456789".to_owned()
                } else {
                    format!("{{{{v{n}}}}}{{{{v{n}}}}}", n = i + 1)
                }
            })
            .collect();
        let v: Variables<'_, usize> = names
            .iter()
            .zip(&values)
            .map(|(n, val)| {
                (
                    n.as_str(),
                    Variable {
                        value: Cow::Borrowed(val.as_str()),
                        origin: 0,
                    },
                )
            })
            .collect();
        let err = Resolver::new(&v).resolve("{{v0}}").unwrap_err();
        assert!(matches!(err, ResolveError::TooLong { .. }), "{err:?}");
    }

    #[test]
    fn invalid_variable_value_names_the_variable() {
        let v = vars(&[("a", "{{b"), ("top", "{{a}}")]);
        let err = Resolver::new(&v).resolve("{{top}}").unwrap_err();
        match err {
            ResolveError::Syntax {
                variable,
                error,
                via,
            } => {
                assert_eq!(variable.as_deref(), Some("a"));
                assert_eq!(error.kind, SyntaxErrorKind::Unclosed);
                assert_eq!(via, vec!["top".to_owned()]);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    /// A random variable graph: `n` variables, each value a list of pieces (text or a
    /// reference to another variable by index).
    fn graph(acyclic: bool) -> impl Strategy<Value = Vec<Vec<(String, Option<usize>)>>> {
        (1usize..10).prop_flat_map(move |n| {
            prop::collection::vec(
                prop::collection::vec(("[a-z/._ -]{0,4}", prop::option::of(0..n)), 0..4),
                n,
            )
            .prop_map(move |mut g| {
                if acyclic {
                    // Only references to a higher index: a DAG by construction.
                    for (i, pieces) in g.iter_mut().enumerate() {
                        for (_, r) in pieces.iter_mut() {
                            *r = r.filter(|&j| j > i);
                        }
                    }
                }
                g
            })
        })
    }

    fn render(g: &[Vec<(String, Option<usize>)>]) -> Vec<String> {
        g.iter()
            .map(|pieces| {
                pieces
                    .iter()
                    .map(|(text, r)| match r {
                        Some(j) => format!("{text}{{{{ v{j} }}}}"),
                        None => text.clone(),
                    })
                    .collect()
            })
            .collect()
    }

    /// Reference semantics: substitute from the last variable backwards, with plain
    /// string replacement (valid only for a DAG where references point upwards).
    fn reference_substitution(g: &[Vec<(String, Option<usize>)>]) -> Vec<String> {
        let mut done: Vec<String> = vec![String::new(); g.len()];
        for i in (0..g.len()).rev() {
            let mut out = String::new();
            for (text, r) in &g[i] {
                out.push_str(text);
                if let Some(j) = r {
                    out.push_str(&done[*j]);
                }
            }
            done[i] = out;
        }
        done
    }

    fn reachable_cycle(g: &[Vec<(String, Option<usize>)>], start: usize) -> bool {
        // DFS with colours; iterative so the oracle itself cannot overflow.
        let mut colour = vec![0u8; g.len()];
        let mut stack = vec![(start, 0usize)];
        colour[start] = 1;
        while let Some((node, edge)) = stack.pop() {
            let refs: Vec<usize> = g[node].iter().filter_map(|(_, r)| *r).collect();
            if edge < refs.len() {
                stack.push((node, edge + 1));
                let next = refs[edge];
                match colour[next] {
                    1 => return true,
                    0 => {
                        colour[next] = 1;
                        stack.push((next, 0));
                    }
                    _ => {}
                }
            } else {
                colour[node] = 2;
            }
        }
        false
    }

    fn to_vars<'a>(names: &'a [String], values: &'a [String]) -> Variables<'a, usize> {
        names
            .iter()
            .zip(values)
            .enumerate()
            .map(|(i, (n, v))| {
                (
                    n.as_str(),
                    Variable {
                        value: Cow::Borrowed(v.as_str()),
                        origin: i,
                    },
                )
            })
            .collect()
    }

    proptest! {
        #[test]
        fn acyclic_graphs_resolve_to_the_reference_substitution(g in graph(true)) {
            let names: Vec<String> = (0..g.len()).map(|i| format!("v{i}")).collect();
            let values = render(&g);
            let expected = reference_substitution(&g);
            let v = to_vars(&names, &values);
            let mut r = Resolver::new(&v);
            for (i, want) in expected.iter().enumerate() {
                let got = r.resolve(&format!("{{{{v{i}}}}}"));
                if want.len() > MAX_VALUE_LEN {
                    prop_assert!(matches!(got, Err(ResolveError::TooLong { .. })), "{:?}", got);
                } else {
                    let got = got.unwrap();
                    prop_assert_eq!(&got.value, want);
                    prop_assert_eq!(got.from, vec![i]);
                }
            }
        }

        #[test]
        fn any_reachable_cycle_is_reported_never_a_hang(g in graph(false), start in 0usize..10) {
            let start = start % g.len();
            let names: Vec<String> = (0..g.len()).map(|i| format!("v{i}")).collect();
            let values = render(&g);
            let v = to_vars(&names, &values);
            let result = Resolver::new(&v).resolve(&format!("{{{{v{start}}}}}"));
            if reachable_cycle(&g, start) {
                // The length cap may trip while expanding text before the cycle is reached.
                prop_assert!(
                    matches!(result, Err(ResolveError::Cycle { .. } | ResolveError::TooLong { .. })),
                    "{:?}", result
                );
            } else {
                // Without a cycle the only possible failure is the length cap.
                prop_assert!(
                    matches!(result, Ok(_) | Err(ResolveError::TooLong { .. })),
                    "{:?}", result
                );
            }
        }

        #[test]
        fn parser_never_panics_and_round_trips(src in "[a-z{} ._-]{0,40}") {
            if let Ok(pieces) = parse(&src) {
                // Rebuilding the template from its pieces yields an equivalent template.
                let rebuilt: String = pieces.iter().map(|p| match p {
                    Piece::Text(t) => (*t).to_owned(),
                    Piece::Ref(n) => format!("{{{{{n}}}}}"),
                }).collect();
                prop_assert_eq!(parse(&rebuilt).unwrap(), pieces);
            }
        }
    }
}
