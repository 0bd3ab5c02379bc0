//! The UI over real HTTP on loopback, without a browser: what each page says, what it
//! refuses, and what it must never contain (script from a record, a credential value).
//! The browser tests (`crates/envreg/tests/it/ui_browser.rs`) drive the same pages in
//! Chromium.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use envreg_core::Registry;
use envreg_mcp::http::HttpOptions;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

/// A small registry: one environment of each interesting kind, a service deployed once
/// in test and twice in prod (an ambiguous cell), a rule profile, a binding.
fn write_registry(root: &Path, credential_source: &str) {
    for dir in [
        "environments",
        "services",
        "deployments",
        "rule-profiles",
        "operation-bindings",
    ] {
        std::fs::create_dir_all(root.join(dir)).expect("mkdir");
    }
    let files = [
        ("environments/test-a.yaml", "id: test-a\nschemaVersion: 1\nname: Test A\ntier: test\nplatform: vm\nhosts:\n  - { id: vm-1, address: 10.0.0.1, roles: [app] }\nvariables:\n  logRoot: /var/log\n".to_owned()),
        ("environments/prod.yaml", format!("id: prod\nschemaVersion: 1\nname: Production\ntier: production\nplatform: kubernetes\nvariables:\n  namespace: shop\ncredentials:\n  - {{ ref: kube-prod, source: \"{credential_source}\" }}\n")),
        ("rule-profiles/base.yaml", "id: base\nschemaVersion: 1\nname: Base\npaths:\n  logs: \"{{logRoot}}/{{appName}}\"\n".to_owned()),
        ("services/api.yaml", "id: api\nschemaVersion: 1\nname: API\nruleProfileRefs: [base]\nvariables:\n  appName: api\n".to_owned()),
        ("deployments/api-test-a.yaml", "id: api-test-a\nschemaVersion: 1\nname: api on test-a\nenvironmentRef: test-a\nserviceRef: api\n".to_owned()),
        ("deployments/api-prod-blue.yaml", "id: api-prod-blue\nschemaVersion: 1\nname: api blue\nenvironmentRef: prod\nserviceRef: api\nvariables:\n  logRoot: /data\n  workload: api-blue\n".to_owned()),
        ("deployments/api-prod-green.yaml", "id: api-prod-green\nschemaVersion: 1\nname: api green\nenvironmentRef: prod\nserviceRef: api\nvariables:\n  logRoot: /data\n  workload: api-green\n".to_owned()),
        ("operation-bindings/restart-api.yaml", "id: restart-api\nschemaVersion: 1\nname: restart api\noperation: restart\nmatch: { serviceRef: api }\nskill: { name: k8s-restart }\n".to_owned()),
    ];
    for (file, text) in files {
        std::fs::write(root.join(file), text).expect("write");
    }
}

struct Server {
    addr: SocketAddr,
    stop: CancellationToken,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn start(root: &Path, token: Option<&str>) -> Server {
    let registry = Arc::new(Registry::open(root).expect("open"));
    let stop = CancellationToken::new();
    let (tx, rx) = tokio::sync::oneshot::channel();
    let options = HttpOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        allow_remote: false,
        token: token.map(str::to_owned),
    };
    tokio::spawn(envreg_ui::serve(
        registry,
        options,
        stop.clone(),
        move |addr| {
            let _ = tx.send(addr);
        },
    ));
    let addr = rx.await.expect("listening");
    Server { addr, stop }
}

/// `(status, body)` of a request over a plain TCP connection, with the given `Host`.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    host: &str,
    extra: &str,
) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head =
        format!("{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n{extra}\r\n");
    stream.write_all(head.as_bytes()).await.expect("send");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

async fn get(server: &Server, path: &str) -> (u16, String) {
    let host = server.addr.to_string();
    request(server.addr, "GET", path, &host, "").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matrix_lists_environments_in_tier_order_and_each_cell_its_deployments() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    let server = start(dir.path(), None).await;
    let (status, body) = get(&server, "/").await;
    assert_eq!(status, 200, "{body}");
    let test_col = body.find("data-env=\"test-a\"").expect("test-a column");
    let prod_col = body.find("data-env=\"prod\"").expect("prod column");
    assert!(test_col < prod_col, "tier order: test before production");
    assert!(body.contains("<strong class=\"prod\">production</strong>"));
    assert!(
        body.contains("data-cell=\"prod/api\" class=\"ambiguous\""),
        "two deployments in prod"
    );
    assert!(body.contains("<b>api-prod-blue</b>") && body.contains("<b>api-prod-green</b>"));
    // A VM environment's cell shows its hosts; Kubernetes shows namespace/workload.
    assert!(body.contains("vm-1"), "{body}");
    assert!(body.contains("shop/api-blue"), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cell_page_html_snapshot() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    let server = start(dir.path(), None).await;
    let (status, body) = get(&server, "/cell/test-a/api").await;
    assert_eq!(status, 200);
    // One tag per line, so the snapshot reads (and diffs) as the page's structure.
    insta::assert_snapshot!("cell_test_a_api", body.replace("><", ">\n<"));
    let (status, body) = get(&server, "/cell/prod/api").await;
    assert_eq!(status, 200);
    assert!(
        body.contains("data-code=\"DEPLOYMENT_AMBIGUOUS\""),
        "{body}"
    );
    assert!(
        body.contains("data-deployment=\"api-prod-blue\"")
            && body.contains("data-deployment=\"api-prod-green\"")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operations_show_the_pick_or_the_agents_error() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    let server = start(dir.path(), None).await;
    let (status, body) = get(&server, "/operations/test-a/api").await;
    assert_eq!(status, 200);
    // restart is bound at service level; the skill catalog does not exist, so its
    // availability is unknown; deploy has no binding at all.
    assert!(
        body.contains("data-operation=\"restart\" data-outcome=\"ok\""),
        "{body}"
    );
    assert!(
        body.contains("service</dd>") || body.contains(">service<"),
        "{body}"
    );
    assert!(
        body.contains("data-operation=\"deploy\" data-outcome=\"BINDING_NOT_FOUND\""),
        "{body}"
    );
    // In production the same binding is refused by policy, as the agent would be.
    let (_, body) = get(&server, "/operations/prod/api/api-prod-blue").await;
    assert!(
        body.contains("data-operation=\"restart\" data-outcome=\"POLICY_DENIED\""),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_records_markup_is_text_never_html() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    std::fs::write(
        dir.path().join("services/xss.yaml"),
        "id: xss\nschemaVersion: 1\nname: \"<script>window.__xss=1</script>\"\ndescription: \"\\\"><img src=x onerror=window.__xss=2>\"\naliases: [\"</td><script>window.__xss=3</script>\"]\n",
    )
    .expect("write");
    let server = start(dir.path(), None).await;
    for path in [
        "/",
        "/?q=script",
        "/record/services/xss",
        "/cell/test-a/xss",
        "/validation",
    ] {
        let (status, body) = get(&server, path).await;
        assert!(status == 200, "{path}: {status}");
        assert!(
            !body.contains("<script>window"),
            "{path} carries the record's script: {body}"
        );
        assert!(
            !body.contains("<img src=x"),
            "{path} carries the record's img tag"
        );
    }
    let (_, body) = get(&server, "/record/services/xss").await;
    assert!(
        body.contains("&lt;script&gt;window.__xss=1&lt;/script&gt;"),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_credential_value_never_appears() {
    let dir = tempfile::tempdir().expect("tmp");
    let secret = dir.path().join("kube-prod.token");
    let canary = "CANARY-7d1f0c9e-never-shown";
    std::fs::write(&secret, canary).expect("secret");
    write_registry(dir.path(), &format!("file:{}", secret.display()));
    let server = start(dir.path(), None).await;
    for path in [
        "/",
        "/cell/prod/api",
        "/cell/prod/api/api-prod-blue",
        "/operations/prod/api",
        "/record/environments/prod",
        "/validation",
    ] {
        let (status, body) = get(&server, path).await;
        assert_eq!(status, 200, "{path}");
        assert!(!body.contains(canary), "{path} shows the credential value");
    }
    let (_, body) = get(&server, "/cell/prod/api/api-prod-blue").await;
    assert!(body.contains("data-ref=\"kube-prod\""), "{body}");
    assert!(
        body.contains("<td class=\"yes\">yes</td>"),
        "configured is a presence check"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refuses_a_foreign_host_a_write_and_a_missing_token() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    let server = start(dir.path(), None).await;
    let (status, _) = request(server.addr, "GET", "/", "evil.example", "").await;
    assert_eq!(status, 403, "a DNS-rebound name is refused");
    let port = server.addr.port();
    let (status, _) = request(server.addr, "GET", "/", &format!("localhost:{port}"), "").await;
    assert_eq!(status, 200);
    let (status, _) = request(
        server.addr,
        "POST",
        "/",
        &server.addr.to_string(),
        "Content-Length: 0\r\n",
    )
    .await;
    assert_eq!(status, 405, "nothing writes");

    let guarded = start(dir.path(), Some("s3cret")).await;
    let host = guarded.addr.to_string();
    let (status, _) = request(guarded.addr, "GET", "/", &host, "").await;
    assert_eq!(status, 401);
    let (status, _) = request(
        guarded.addr,
        "GET",
        "/",
        &host,
        "Authorization: Bearer s3cret\r\n",
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_file_shows_its_diagnostic_at_its_line() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    std::fs::write(
        dir.path().join("services/broken.yaml"),
        "id: broken\nschemaVersion: 1\nname: Broken\nvariables: [unclosed\n",
    )
    .expect("write");
    let server = start(dir.path(), None).await;
    let (status, body) = get(&server, "/record/services/broken").await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("does not load"), "{body}");
    let line = body.find("<li id=\"L4\">").expect("line 4");
    // Where the loader gave a line and column, that is where the diagnostic sits.
    let diag = body
        .find("class=\"diag diag-error\"")
        .unwrap_or_else(|| panic!("{body}"));
    assert!(diag > line, "the diagnostic sits under its line");
    assert!(body.contains("services/broken.yaml:4:12"), "{body}");
    // A broken reference is placed by the field locator.
    let (_, body) = get(&server, "/record/services/api").await;
    assert!(!body.contains("diag-error"), "{body}");
    std::fs::write(
        dir.path().join("services/api.yaml"),
        "id: api\nschemaVersion: 1\nname: API\nruleProfileRefs: [base, nope]\n",
    )
    .expect("write");
    let (_, body) = get(&server, "/record/services/api").await;
    let line = body.find("<li id=\"L4\">").expect("line 4");
    let diag = body
        .find("data-code=\"RULE_PROFILE_NOT_FOUND\"")
        .expect("diagnostic");
    assert!(
        diag > line && body.contains("services/api.yaml:4:"),
        "{body}"
    );
    let (_, body) = get(&server, "/validation").await;
    assert!(body.contains("RECORD_INVALID") && body.contains("RULE_PROFILE_NOT_FOUND"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_a_clear_error() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    let server = start(dir.path(), None).await;
    let (status, body) = get(&server, "/?tier=prod").await;
    assert_eq!(status, 400);
    assert!(
        body.contains("expected one of dev, test, staging, production"),
        "{body}"
    );
    let (status, body) = get(&server, "/cell/nope/api").await;
    assert_eq!(status, 404);
    assert!(body.contains("ENV_NOT_FOUND"), "{body}");
    let (status, body) = get(&server, "/record/services/..%2F..%2Fetc%2Fpasswd").await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("INVALID_ARGUMENT"));
    let (status, _) = get(&server, "/record/secrets/x").await;
    assert_eq!(status, 400);
    let (status, _) = get(&server, "/nowhere").await;
    assert_eq!(status, 404);
}

/// Issue 19 finding 4: a VM deployment inside a Kubernetes environment showed as
/// `kubernetes` with the cluster's nodes. Its badge and cell page now show its own
/// platform and hosts; the other deployments keep the environment's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deployment_with_its_own_platform_shows_it_in_the_matrix_and_its_cell() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    std::fs::write(
        dir.path().join("services/ledger.yaml"),
        "id: ledger\nschemaVersion: 1\nname: Ledger\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("deployments/ledger-prod.yaml"),
        "id: ledger-prod\nschemaVersion: 1\nname: ledger on VMs\nenvironmentRef: prod\nserviceRef: ledger\nplatform: vm\nhosts:\n  - { id: ledger-vm-1, address: 10.9.0.1 }\n",
    )
    .expect("write");
    let server = start(dir.path(), None).await;
    let (status, body) = get(&server, "/").await;
    assert_eq!(status, 200, "{body}");
    let cell = body
        .split("data-cell=\"prod/ledger\"")
        .nth(1)
        .expect("ledger's prod cell");
    let cell = &cell[..cell.find("</td>").expect("cell end")];
    assert!(
        cell.contains("<small>vm ") && cell.contains("ledger-vm-1"),
        "{cell}"
    );
    let api = body
        .split("data-cell=\"prod/api\"")
        .nth(1)
        .expect("api cell");
    assert!(api[..api.find("</td>").expect("end")].contains("kubernetes"));
    let (status, page) = get(&server, "/cell/prod/ledger").await;
    assert_eq!(status, 200, "{page}");
    assert!(
        page.contains("ledger-vm-1") && page.contains("(vm)"),
        "{page}"
    );
}

/// Issue 19 finding 7: the cell page of a 54 KB profile repeating a 64 KiB value 3,000
/// times peaked at 942 MB. It now shows the output cap's error, naming the record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_amplifying_profile_fails_its_cell_page_with_the_output_cap() {
    let dir = tempfile::tempdir().expect("tmp");
    write_registry(dir.path(), "env:ENVREG_UI_TEST_NEVER_SET");
    let mut profile = String::from(
        "id: big\nschemaVersion: 1\nname: Big\nvariables:\n  v1: \"{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}{{v0}}\"\n  v0: \"",
    );
    profile.push_str(&"x".repeat(8 * 1024));
    profile.push_str("\"\npaths:\n");
    for i in 0..3000 {
        profile.push_str(&format!("  p{i}: \"{{{{v1}}}}\"\n"));
    }
    std::fs::write(dir.path().join("rule-profiles/big.yaml"), profile).expect("write");
    std::fs::write(
        dir.path().join("services/amp.yaml"),
        "id: amp\nschemaVersion: 1\nname: Amp\nruleProfileRefs: [big]\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("deployments/amp-test-a.yaml"),
        "id: amp-test-a\nschemaVersion: 1\nname: amp\nenvironmentRef: test-a\nserviceRef: amp\n",
    )
    .expect("write");
    let server = start(dir.path(), None).await;
    let (_, page) = get(&server, "/cell/test-a/amp").await;
    assert!(page.len() < 256 * 1024, "{} bytes", page.len());
    assert!(page.contains("PARAMETER_RESOLUTION_FAILED"), "{page}");
    assert!(
        page.contains("1 MiB") && page.contains("rule profile big"),
        "{page}"
    );
}
