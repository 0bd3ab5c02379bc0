//! Fuzzes envreg template parsing and resolution: the input's first line is a template,
//! every further `name=value` line defines a variable (values are templates too, so
//! cycles, deep chains and doubling values all occur). Must never panic, hang or
//! overflow the stack; `check` and `parse` must agree.
#![no_main]

use std::borrow::Cow;

use envreg_core::template::{self, Resolver, Variable, Variables};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.lines();
    let top = lines.next().unwrap_or("");
    assert_eq!(template::check(top).is_ok(), template::parse(top).is_ok());
    let mut vars: Variables<'_, usize> = Variables::default();
    for (i, line) in lines.enumerate() {
        if let Some((name, value)) = line.split_once('=') {
            vars.insert(name, Variable { value: Cow::Borrowed(value), origin: i });
        }
    }
    let mut resolver = Resolver::new(&vars);
    if let Ok(resolved) = resolver.resolve(top) {
        assert!(resolved.value.len() <= template::MAX_VALUE_LEN);
    }
    let names: Vec<&str> = vars.keys().copied().collect();
    for name in names {
        let _ = resolver.resolve_variable(name);
    }
});
