//! Snapshot of every sentence a user or model reads, so a change in wording is reviewed
//! as a diff. (`seed_oracle.rs` separately proves them byte-identical to the seed.)

use facet_core::Mode;
use facet_core::seed::{
    ContextInput, NO_CHANNEL_REACH, facet_context_text, facet_rule_text, implicit_search_reason,
    outside_reason, widen_reason,
};

const CWD: &str = "/w/proj/src/controllers/room";
const ROOT: &str = "/w/proj/src/controllers/room/occupancy";

fn context(extras: &[String], mode: Mode, can_ask: bool) -> String {
    facet_context_text(&ContextInput {
        cwd: CWD,
        root: Some(ROOT),
        extras,
        mode,
        can_ask,
    })
}

#[test]
fn rule_text() {
    insta::assert_snapshot!(facet_rule_text());
}

#[test]
fn context_text_ask() {
    insta::assert_snapshot!(context(&[], Mode::Ask, true));
}

#[test]
fn context_text_deny() {
    insta::assert_snapshot!(context(&[], Mode::Deny, true));
}

#[test]
fn context_text_no_channel() {
    insta::assert_snapshot!(context(&[], Mode::Ask, false));
    assert!(context(&[], Mode::Deny, false).ends_with(NO_CHANNEL_REACH));
}

#[test]
fn context_text_with_grants() {
    let extras = vec![
        format!("{CWD}/shared/types"),
        "/w/proj/lib/services".to_string(),
        CWD.to_string(),
    ];
    insta::assert_snapshot!(context(&extras, Mode::Ask, true));
}

#[test]
fn context_text_is_empty_when_off_or_unscoped() {
    assert_eq!(context(&[], Mode::Off, true), "");
    let unscoped = facet_context_text(&ContextInput {
        cwd: CWD,
        root: None,
        extras: &[],
        mode: Mode::Ask,
        can_ask: true,
    });
    assert_eq!(unscoped, "");
}

#[test]
fn outside_reason_ask_relative() {
    insta::assert_snapshot!(outside_reason(
        CWD,
        &format!("{CWD}/billing/invoice.rs"),
        ROOT,
        Mode::Ask
    ));
}

#[test]
fn outside_reason_deny_absolute() {
    insta::assert_snapshot!(outside_reason(CWD, "/etc/passwd", ROOT, Mode::Deny));
}

#[test]
fn implicit_search_reason_text() {
    insta::assert_snapshot!(implicit_search_reason(CWD, ROOT));
}

#[test]
fn widen_reason_texts() {
    insta::assert_snapshot!("widen_nothing", widen_reason(&[]));
    insta::assert_snapshot!("widen_one", widen_reason(&["../shared".to_string()]));
    insta::assert_snapshot!(
        "widen_two",
        widen_reason(&["../shared".to_string(), "/w/proj/lib".to_string()])
    );
}

#[test]
fn ways_forward_without_a_channel() {
    use facet_core::seed::{
        implicit_search_reason_no_channel, outside_reason_no_channel, panel_grant_command,
        panel_line, widen_refused_no_channel,
    };
    let grant = panel_grant_command(&["/w/proj/shared/types.rs".to_string()], "s-1", false);
    insta::assert_snapshot!(
        "outside_no_channel",
        outside_reason_no_channel(CWD, "../../shared/types.rs", ROOT, Some(&grant))
    );
    insta::assert_snapshot!(
        "outside_no_session",
        outside_reason_no_channel(CWD, "/etc/passwd", ROOT, None)
    );
    insta::assert_snapshot!(
        "implicit_no_channel",
        implicit_search_reason_no_channel(CWD, ROOT, "s-1")
    );
    let missing = panel_grant_command(&["/w/a b/it's".to_string()], "odd id", true);
    assert_eq!(
        missing,
        r"facet grant '/w/a b/it'\''s' --allow-missing --session 'odd id'"
    );
    // No recorded session: nothing can grant, so no command is named.
    assert!(
        implicit_search_reason_no_channel(CWD, ROOT, "")
            .ends_with("Name a folder inside the facet.")
    );
    insta::assert_snapshot!("widen_no_channel", widen_refused_no_channel(Some(&grant)));
    insta::assert_snapshot!("panel_line", panel_line("s-1"));
}
