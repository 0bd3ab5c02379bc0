//! `envreg ui` in a real browser: Debian's Chromium, driven over WebDriver (its own
//! `chromedriver`, through `fantoccini`), against the real `envreg ui` binary, on the
//! example registry and on the synthetic 10,000-record one.
//!
//! What is checked: the matrix shows the right cells (against the deployment files
//! themselves), a cell's provenance equals `envreg resolve --json`, an edit made on disk
//! appears without a reload, the keyboard reaches every cell, a record's markup never
//! runs, the browser logs no console error, and a DNS-rebound `Host` is refused.
//! Screenshots of the matrix and of an opened cell go to
//! `target/tmp/envreg-ui-screenshots/`.
//!
//! The browser and driver come from `scripts/setup.d/50-chromium.sh`, which exports
//! `ENVREG_UI_CHROMIUM` and `ENVREG_UI_CHROMEDRIVER`; without them these tests fail,
//! loudly, rather than skip. Nothing is downloaded at run time.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::actions::{InputSource as _, KeyAction, KeyActions};
use fantoccini::key::Key;
use fantoccini::wd::WebDriverCompatibleCommand;
use fantoccini::{Client, ClientBuilder};
use serde_json::{Value, json};

const ENVREG: &str = env!("CARGO_BIN_EXE_envreg");

/// A child process that is killed and reaped when the test lets go of it.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Debian chromium or chromedriver, from the variable `50-chromium.sh` exports.
fn peer(var: &str) -> PathBuf {
    test_support::peers::env_program(
        var,
        "Debian chromium + chromium-driver",
        test_support::peers::Setup::Chromium,
    )
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// chromedriver on a loopback port, answering `/status`.
fn chromedriver() -> (Killed, String) {
    let port = free_port();
    let child = Command::new(peer("ENVREG_UI_CHROMEDRIVER"))
        .arg(format!("--port={port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start chromedriver");
    let child = Killed(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "chromedriver did not listen");
        std::thread::sleep(Duration::from_millis(50));
    }
    (child, format!("http://127.0.0.1:{port}"))
}

/// A fresh headless Chromium session with the flags this machine needs (its closed
/// network refuses Chromium's background connections), a new profile, console logging,
/// and `evil.test` resolving to loopback (a DNS-rebinding page's name).
async fn browser(driver: &str, profile: &Path) -> Client {
    let caps = json!({
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": peer("ENVREG_UI_CHROMIUM"),
            "args": [
                "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--disable-dev-shm-usage", "--window-size=1400,900",
                "--host-resolver-rules=MAP evil.test 127.0.0.1",
                format!("--user-data-dir={}", profile.display()),
            ],
        },
        "goog:loggingPrefs": { "browser": "ALL" },
    });
    let Value::Object(caps) = caps else {
        unreachable!("a JSON object")
    };
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("a WebDriver session")
}

/// chromedriver's log endpoint (`POST /session/{id}/se/log`): the browser console.
#[derive(Debug)]
struct BrowserLog;

impl WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base: &url::Url,
        session: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base.join(&format!("session/{}/se/log", session.unwrap_or_default()))
    }

    fn method_and_body(&self, _: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.to_owned()))
    }
}

/// Console messages of level SEVERE since the last call.
async fn console_errors(client: &Client) -> Vec<String> {
    let log = client.issue_cmd(BrowserLog).await.expect("browser log");
    log.as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["level"] == "SEVERE")
        .map(|e| e["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn js(client: &Client, script: &str) -> Value {
    client
        .execute(script, vec![])
        .await
        .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
}

/// Poll `script` (returning a boolean) until it is true or `within` passes.
async fn wait_until(client: &Client, script: &str, within: Duration) -> bool {
    let deadline = Instant::now() + within;
    loop {
        if js(client, script).await == Value::Bool(true) {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn open(client: &Client, url: &str) {
    client.goto(url).await.expect("navigate");
    assert!(
        wait_until(
            client,
            "return document.readyState === 'complete'",
            Duration::from_secs(30)
        )
        .await,
        "{url} did not load"
    );
}

/// `envreg ui` on a free port; the URL it prints.
struct Ui {
    _child: Killed,
    url: String,
}

fn start_ui(registry: &Path) -> Ui {
    let mut child = Command::new(ENVREG)
        .arg("--registry")
        .arg(registry)
        .args(["ui", "--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start envreg ui");
    let stdout = child.stdout.take().expect("stdout");
    let child = Killed(child);
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the URL line");
    let url = line
        .trim()
        .strip_prefix("envreg ui: ")
        .unwrap_or_else(|| panic!("envreg ui printed {line:?}"))
        .trim_end_matches('/')
        .to_owned();
    Ui { _child: child, url }
}

fn envreg_json(registry: &Path, args: &[&str]) -> Value {
    let out = Command::new(ENVREG)
        .arg("--registry")
        .arg(registry)
        .arg("--json")
        .args(args)
        .output()
        .expect("run envreg");
    assert!(
        out.status.success(),
        "envreg {args:?}: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn screenshot_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("envreg-ui-screenshots");
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    dir
}

async fn screenshot(client: &Client, name: &str) {
    let png = client.screenshot().await.expect("screenshot");
    assert!(png.starts_with(b"\x89PNG"), "a PNG");
    std::fs::write(screenshot_dir().join(name), png).expect("write screenshot");
}

/// `environment/service` → deployment ids, read from the deployment files themselves
/// (their `environmentRef:` and `serviceRef:` lines), not through envreg.
fn cells_on_disk(registry: &Path) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for entry in std::fs::read_dir(registry.join("deployments")).expect("deployments") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("read");
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_owned())
                .unwrap_or_else(|| panic!("{} has no {name}", path.display()))
        };
        let key = format!("{}/{}", field("environmentRef:"), field("serviceRef:"));
        out.entry(key).or_default().push(field("id:"));
    }
    for ids in out.values_mut() {
        ids.sort();
    }
    out
}

/// The matrix cells the page shows: `data-cell` → deployment ids.
async fn cells_on_page(client: &Client) -> BTreeMap<String, Vec<String>> {
    let shown = js(
        client,
        "return [...document.querySelectorAll('#matrix td[data-cell]')].map(td => [td.dataset.cell, [...td.querySelectorAll('.dep b')].map(b => b.textContent)]);",
    )
    .await;
    serde_json::from_value::<Vec<(String, Vec<String>)>>(shown)
        .expect("cells")
        .into_iter()
        .map(|(k, mut v)| {
            v.sort();
            (k, v)
        })
        .collect()
}

fn assert_cells_right(page: &BTreeMap<String, Vec<String>>, disk: &BTreeMap<String, Vec<String>>) {
    assert!(!page.is_empty(), "the matrix shows cells");
    for (cell, shown) in page {
        let expected = disk.get(cell).cloned().unwrap_or_default();
        assert_eq!(shown, &expected, "cell {cell}");
    }
}

/// The value at a Service Context output path (`paths.logs`, `logSources[0].path`,
/// `classLocations[1]`, `variables.appName`).
fn value_at<'v>(context: &'v Value, key: &str) -> &'v Value {
    for map in ["paths", "variables"] {
        if let Some(name) = key.strip_prefix(&format!("{map}.")) {
            return &context[map][name];
        }
    }
    let (list, rest) = key.split_once('[').expect("an indexed path");
    let (index, field) = rest.split_once(']').expect("index");
    let item = &context[list][index.parse::<usize>().expect("number")];
    match field.strip_prefix('.') {
        Some(field) => &item[field],
        None => item,
    }
}

/// Every provenance entry of one deployment's section, as the page shows it.
async fn provenance_on_page(client: &Client, deployment: &str) -> Vec<Value> {
    let script = format!(
        "const origin = a => ({{kind: a.dataset.kind, id: a.dataset.id, file: a.dataset.file, path: a.dataset.path}});
         return [...document.querySelectorAll('section[data-deployment=\"{deployment}\"] details.prov')].map(d => ({{
           key: d.dataset.key,
           value: d.parentElement.querySelector('code.value').textContent,
           template: d.querySelector('.prov-template').textContent,
           definedBy: origin(d.querySelector('.prov-defined-by a.origin')),
           from: [...d.querySelectorAll('.prov-from a.origin')].map(origin),
         }}));"
    );
    serde_json::from_value(js(client, &script).await).expect("provenance")
}

/// The page's provenance for `deployment` equals `envreg resolve --json`'s, entry for
/// entry, and each value shown is the resolved one.
async fn assert_provenance_matches_cli(
    client: &Client,
    registry: &Path,
    environment: &str,
    service: &str,
    deployment: &str,
) {
    let cli = envreg_json(
        registry,
        &[
            "resolve",
            service,
            "--env",
            environment,
            "--deployment",
            deployment,
        ],
    );
    let expected = cli["provenance"].as_object().expect("provenance");
    let shown = provenance_on_page(client, deployment).await;
    assert_eq!(shown.len(), expected.len(), "one entry per resolved value");
    for entry in &shown {
        let key = entry["key"].as_str().expect("key");
        let want = &expected[key];
        assert_eq!(entry["template"], want["template"], "{key}: template");
        assert_eq!(entry["definedBy"], want["definedBy"], "{key}: definedBy");
        assert_eq!(entry["from"], want["from"], "{key}: from");
        assert_eq!(&entry["value"], value_at(&cli, key), "{key}: value");
    }
}

/// Tab into the grid, then walk every cell with the arrow keys (one WebDriver call for
/// the whole walk), recording each focused cell; every data cell must be reached.
async fn assert_keyboard_reaches_every_cell(client: &Client) {
    js(
        client,
        "window.__trail = []; document.addEventListener('focusin', e => { const c = e.target.closest('#matrix td, #matrix th'); if (c) window.__trail.push(c.dataset.cell || ('header ' + c.parentElement.rowIndex + ':' + c.cellIndex)); }); return true;",
    )
    .await;
    let mut tabs = 0;
    while js(
        client,
        "return !!(document.activeElement && document.activeElement.closest('#matrix'))",
    )
    .await
        != Value::Bool(true)
    {
        tabs += 1;
        assert!(tabs < 40, "Tab never reaches the grid");
        client
            .active_element()
            .await
            .expect("active element")
            .send_keys(&Key::Tab.to_string())
            .await
            .expect("Tab");
    }
    let shape: Vec<usize> = serde_json::from_value(
        js(
            client,
            "return [...document.getElementById('matrix').rows].map(r => r.cells.length);",
        )
        .await,
    )
    .expect("shape");
    let press = |keys: KeyActions, key: Key| {
        keys.then(KeyAction::Down { value: key.into() })
            .then(KeyAction::Up { value: key.into() })
    };
    let mut keys = KeyActions::new("keyboard".to_owned()).then(KeyAction::Down {
        value: Key::Control.into(),
    });
    keys = press(keys, Key::Home);
    keys = keys.then(KeyAction::Up {
        value: Key::Control.into(),
    });
    for (row, width) in shape.iter().enumerate() {
        let across = if row % 2 == 0 { Key::Right } else { Key::Left };
        for _ in 1..*width {
            keys = press(keys, across);
        }
        if row + 1 < shape.len() {
            keys = press(keys, Key::Down);
        }
    }
    client.perform_actions(keys).await.expect("key presses");
    let trail: Vec<String> =
        serde_json::from_value(js(client, "return window.__trail;").await).expect("trail");
    let reached: BTreeSet<&str> = trail.iter().map(String::as_str).collect();
    let all: Vec<String> = serde_json::from_value(
        js(client, "return [...document.querySelectorAll('#matrix td[data-cell]')].map(td => td.dataset.cell);").await,
    )
    .expect("cells");
    let missed: Vec<&String> = all
        .iter()
        .filter(|c| !reached.contains(c.as_str()))
        .collect();
    assert!(missed.is_empty(), "the keyboard never reached {missed:?}");
    assert!(
        reached.iter().any(|c| c.starts_with("header ")),
        "headers are part of the grid"
    );
}

/// Move to `cell` with the arrow keys from the top-left corner and press Enter.
async fn open_cell_with_keyboard(client: &Client, cell: &str) {
    let at: (usize, usize) = serde_json::from_value(
        js(
            client,
            &format!("const td = document.querySelector('#matrix td[data-cell=\"{cell}\"]'); return [td.parentElement.rowIndex, td.cellIndex];"),
        )
        .await,
    )
    .expect("position");
    client
        .execute(
            "document.querySelector('#matrix [tabindex=\"0\"]').focus(); return true;",
            vec![],
        )
        .await
        .expect("focus the grid");
    let press = |keys: KeyActions, key: Key| {
        keys.then(KeyAction::Down { value: key.into() })
            .then(KeyAction::Up { value: key.into() })
    };
    let mut keys = KeyActions::new("keyboard".to_owned()).then(KeyAction::Down {
        value: Key::Control.into(),
    });
    keys = press(keys, Key::Home).then(KeyAction::Up {
        value: Key::Control.into(),
    });
    for _ in 0..at.0 {
        keys = press(keys, Key::Down);
    }
    for _ in 0..at.1 {
        keys = press(keys, Key::Right);
    }
    keys = press(keys, Key::Enter);
    client.perform_actions(keys).await.expect("key presses");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_registry_in_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    let registry = dir.path().join("registry");
    test_support::copy_example("registry", &registry);
    // An XSS canary: a record whose name and description are markup.
    std::fs::write(
        registry.join("services/xss-canary.yaml"),
        "id: xss-canary\nschemaVersion: 1\nname: \"<script>window.__xss=1</script>\"\ndescription: \"\\\"><img src=x onerror=window.__xss=2>\"\n",
    )
    .expect("canary");
    let ui = start_ui(&registry);
    let (_driver, driver_url) = chromedriver();
    let client = browser(&driver_url, &dir.path().join("profile")).await;

    // The whole example estate on one screen: every cell right, columns in tier order.
    open(&client, &format!("{}/", ui.url)).await;
    let columns: Vec<String> = serde_json::from_value(
        js(&client, "return [...document.querySelectorAll('#matrix th[data-env]')].map(th => th.dataset.env);").await,
    )
    .expect("columns");
    assert_eq!(columns, ["dev", "staging", "prod"], "tier order");
    let page = cells_on_page(&client).await;
    let disk = cells_on_disk(&registry);
    assert_cells_right(&page, &disk);
    for cell in disk.keys() {
        assert!(page.contains_key(cell), "cell {cell} is on the page");
    }
    assert_eq!(
        js(&client, "return typeof window.__xss;").await,
        "undefined",
        "a record's script ran"
    );
    screenshot(&client, "example-matrix.png").await;

    assert_keyboard_reaches_every_cell(&client).await;
    open_cell_with_keyboard(&client, "prod/checkout-api").await;
    assert!(
        wait_until(
            &client,
            "return location.pathname === '/cell/prod/checkout-api'",
            Duration::from_secs(10)
        )
        .await,
        "Enter opens the cell"
    );
    // The ambiguous cell says why, and shows both candidates with their provenance.
    assert_eq!(
        js(
            &client,
            "return document.querySelector('.cell-error .agent-error').dataset.code;"
        )
        .await,
        "DEPLOYMENT_AMBIGUOUS"
    );
    for deployment in ["checkout-api-prod-blue", "checkout-api-prod-green"] {
        assert_provenance_matches_cli(&client, &registry, "prod", "checkout-api", deployment).await;
    }

    // One click opens a value's provenance.
    open(&client, &format!("{}/cell/staging/checkout-api", ui.url)).await;
    assert_provenance_matches_cli(
        &client,
        &registry,
        "staging",
        "checkout-api",
        "checkout-api-staging",
    )
    .await;
    client
        .find(fantoccini::Locator::Css(
            "details.prov[data-key='paths.logs'] summary",
        ))
        .await
        .expect("the logs path's provenance")
        .click()
        .await
        .expect("click");
    assert_eq!(
        js(
            &client,
            "return document.querySelector(\"details.prov[data-key='paths.logs']\").open;"
        )
        .await,
        true
    );
    screenshot(&client, "example-cell.png").await;

    // Live: a hand edit shows up without a reload.
    js(&client, "window.__sameDocument = 'yes'; return true;").await;
    let service_file = registry.join("services/checkout-api.yaml");
    let original = std::fs::read_to_string(&service_file).expect("read");
    let edited = original.replace("httpPort: \"8080\"", "httpPort: \"9191\"");
    assert_ne!(edited, original, "the example has httpPort 8080");
    std::fs::write(&service_file, &edited).expect("edit");
    assert!(
        wait_until(
            &client,
            "return window.__sameDocument === 'yes' && [...document.querySelectorAll('code.value')].some(c => c.textContent === '9191');",
            Duration::from_secs(15),
        )
        .await,
        "the edit did not appear live"
    );
    // The page swapped in keeps the open provenance open.
    assert_eq!(
        js(
            &client,
            "return document.querySelector(\"details.prov[data-key='paths.logs']\").open;"
        )
        .await,
        true
    );

    // A file that breaks shows its diagnostic in place.
    open(&client, &format!("{}/record/services/checkout-api", ui.url)).await;
    js(&client, "window.__sameDocument = 'yes'; return true;").await;
    assert_eq!(
        js(
            &client,
            "return document.querySelectorAll('.diag-error').length;"
        )
        .await,
        0
    );
    std::fs::write(
        &service_file,
        edited.replace("name: Checkout API", "name: [Checkout API"),
    )
    .expect("break");
    assert!(
        wait_until(
            &client,
            "return window.__sameDocument === 'yes' && document.querySelectorAll('li .diag-error').length > 0;",
            Duration::from_secs(15),
        )
        .await,
        "the broken file's diagnostic did not appear"
    );
    std::fs::write(&service_file, &original).expect("repair");
    open(&client, &format!("{}/record/services/xss-canary", ui.url)).await;
    assert_eq!(
        js(&client, "return typeof window.__xss;").await,
        "undefined",
        "a record's script ran"
    );
    open(&client, &format!("{}/validation", ui.url)).await;
    open(
        &client,
        &format!(
            "{}/operations/prod/checkout-api/checkout-api-prod-blue",
            ui.url
        ),
    )
    .await;

    let errors = console_errors(&client).await;
    assert!(errors.is_empty(), "console errors: {errors:?}");

    // A page on another name that resolves to this machine (DNS rebinding) is refused.
    let port = ui.url.rsplit(':').next().expect("port");
    client
        .goto(&format!("http://evil.test:{port}/"))
        .await
        .expect("navigate");
    let text = js(&client, "return document.body.innerText;").await;
    assert!(
        text.as_str().is_some_and(|t| t.contains("Forbidden")),
        "{text}"
    );
    assert_eq!(
        js(&client, "return !!document.getElementById('matrix');").await,
        false
    );
    client.close().await.expect("close");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_synthetic_10000_record_registry_in_chromium() {
    let dir = tempfile::tempdir().expect("tmp");
    let registry = dir.path().join("synth");
    let out = Command::new(ENVREG)
        .arg("synth")
        .arg(&registry)
        .output()
        .expect("synth");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sample = envreg_core::synth::sample(&envreg_core::synth::SynthSpec::default());
    let ui = start_ui(&registry);
    let (_driver, driver_url) = chromedriver();
    let client = browser(&driver_url, &dir.path().join("profile")).await;

    open(&client, &format!("{}/", ui.url)).await;
    let tiers: Vec<String> = serde_json::from_value(
        js(&client, "return [...document.querySelectorAll('#matrix th[data-env]')].map(th => th.className.split(' ').find(c => c.startsWith('tier-')));").await,
    )
    .expect("tiers");
    assert_eq!(tiers.len(), 100, "every environment is a column");
    let order = ["tier-dev", "tier-test", "tier-staging", "tier-production"];
    let ranks: Vec<usize> = tiers
        .iter()
        .map(|t| order.iter().position(|o| o == t).expect("a tier"))
        .collect();
    assert!(
        ranks.windows(2).all(|w| w[0] <= w[1]),
        "tier order: {tiers:?}"
    );
    assert_eq!(
        js(
            &client,
            "return document.querySelectorAll('#matrix tbody tr').length;"
        )
        .await,
        50
    );
    let summary = js(
        &client,
        "return document.getElementById('summary').textContent;",
    )
    .await;
    assert!(
        summary
            .as_str()
            .is_some_and(|s| s.contains("2000 services × 100 environments")),
        "{summary}"
    );
    let disk = cells_on_disk(&registry);
    assert_cells_right(&cells_on_page(&client).await, &disk);
    screenshot(&client, "synthetic-matrix.png").await;
    // The last cell of the page is one keypress from the first.
    client
        .execute(
            "document.querySelector('#matrix [tabindex=\"0\"]').focus(); return true;",
            vec![],
        )
        .await
        .expect("focus");
    let keys = KeyActions::new("keyboard".to_owned())
        .then(KeyAction::Down {
            value: Key::Control.into(),
        })
        .then(KeyAction::Down {
            value: Key::End.into(),
        })
        .then(KeyAction::Up {
            value: Key::End.into(),
        })
        .then(KeyAction::Up {
            value: Key::Control.into(),
        });
    client.perform_actions(keys).await.expect("Ctrl+End");
    assert_eq!(
        js(&client, "const rows = document.getElementById('matrix').rows; const last = rows[rows.length - 1]; return document.activeElement === last.cells[last.cells.length - 1];").await,
        true
    );

    // A cell's provenance equals the CLI's.
    open(
        &client,
        &format!("{}/cell/{}/{}", ui.url, sample.environment, sample.service),
    )
    .await;
    assert_provenance_matches_cli(
        &client,
        &registry,
        &sample.environment,
        &sample.service,
        &sample.deployment,
    )
    .await;

    // A text filter (env_find's ranking: the exact id first), the keyboard over every
    // cell of that page, and a deployment's workload edited on disk appearing live.
    open(&client, &format!("{}/?q={}", ui.url, sample.service)).await;
    let rows: Vec<String> = serde_json::from_value(
        js(&client, "return [...document.querySelectorAll('#matrix tbody tr')].map(tr => tr.dataset.service);").await,
    )
    .expect("rows");
    assert_eq!(rows.first(), Some(&sample.service), "{rows:?}");
    assert_cells_right(&cells_on_page(&client).await, &disk);
    assert_keyboard_reaches_every_cell(&client).await;
    js(&client, "window.__sameDocument = 'yes'; return true;").await;
    let file = registry.join(format!("deployments/{}.yaml", sample.deployment));
    let text = std::fs::read_to_string(&file).expect("read");
    let edited: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("workload:") {
                "  workload: edited-live-workload"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    assert_ne!(edited, text);
    std::fs::write(&file, edited).expect("edit");
    let cell = format!("{}/{}", sample.environment, sample.service);
    assert!(
        wait_until(
            &client,
            &format!("const td = document.querySelector('#matrix td[data-cell=\"{cell}\"]'); return window.__sameDocument === 'yes' && !!td && td.textContent.includes('edited-live-workload');"),
            Duration::from_secs(15),
        )
        .await,
        "the edit did not appear live"
    );
    let errors = console_errors(&client).await;
    assert!(errors.is_empty(), "console errors: {errors:?}");
    client.close().await.expect("close");
}

/// Not a browser test: the exposure rule is a usage error before anything starts.
#[test]
fn ui_refuses_a_remote_address_without_allow_remote_and_a_token() {
    let run = |extra: &[&str]| {
        Command::new(ENVREG)
            .arg("--registry")
            .arg(test_support::repo_path("examples/registry"))
            .args([
                "ui",
                "--listen",
                "0.0.0.0:0",
                "--token-env",
                "ENVREG_UI_TEST_TOKEN_NEVER_SET",
            ])
            .args(extra)
            .output()
            .expect("run envreg ui")
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
    let out = run(&["--allow-remote"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bearer token"));
}
