//! # envreg-ui: the registry as a web page
//!
//! `envreg ui` serves a local, read-only web app over the registry: the matrix
//! (environments across in tier order, services down, deployments in the cells), a cell
//! opened as the Service Context `env_resolve` answers with every value's provenance,
//! the operations `env_resolve_operation` would pick, each record's YAML with its
//! diagnostics at their line, a validation panel, and live updates when a file changes.
//!
//! ## Design
//! - **One concept, one place.** Every value on a page comes from `envreg-core`'s own
//!   functions ([`Registry::resolve`], [`Registry::resolve_operation`],
//!   [`envreg_core::read::rank_of`], [`Snapshot::diagnostics`],
//!   [`envreg_core::locate`]); this crate only arranges them. Exposure (loopback, the
//!   bearer token, the `Host` check) is `envreg-mcp`'s, the same code `serve --http`
//!   runs.
//! - **Models, then HTML.** [`matrix`], [`cell`], [`operations`], [`records`] build plain
//!   structs from the registry; [`html`] draws them with `maud`, which escapes every
//!   interpolated value; [`routes`] maps URLs to the two. Data flows one way.
//! - **Server-rendered, a little JavaScript.** The pages work without the script; it adds
//!   the grid's arrow-key navigation and swaps in the fresh page when `/events` says the
//!   registry changed ([`live`]). Assets are embedded ([`assets`]); no Node build step.
//!
//! ## Invariants
//! - Read-only: only GET routes exist; nothing here writes a file.
//! - No credential value is read: credentials are shown as `{ref, configured, source}`
//!   exactly as `env_resolve` returns them.
//! - A record's text is untrusted: it is only ever interpolated through `maud`, and the
//!   Content-Security-Policy forbids inline script.
//! - Loopback unless `--allow-remote` with a bearer token; on loopback a request whose
//!   `Host` is not a loopback name is refused (DNS rebinding).
//!
//! ## Deliberately not done
//! - No editing: the registry's writes need approval, which belongs to the CLI and MCP.
//! - No virtualized grid: rows are paginated ([`matrix::PAGE_ROWS`]) and all columns shown.
//! - No TLS (as `serve --http`): put a reverse proxy in front for remote use.

pub mod assets;
pub mod cell;
pub mod html;
pub mod links;
pub mod live;
pub mod matrix;
pub mod operations;
pub mod records;
pub mod routes;

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use envreg_core::Registry;
use envreg_mcp::http::{HttpOptions, check_exposure, guard};
use tokio_util::sync::CancellationToken;

/// The default address: loopback, a fixed port so a bookmark keeps working.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8780";

/// `envreg ui` flags, in one place.
#[derive(Debug, Clone, clap::Args)]
pub struct UiArgs {
    /// Address to serve on (port 0 picks a free one; the URL is printed).
    #[arg(long, value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: SocketAddr,
    /// Open the page in a browser (xdg-open / open), where one exists.
    #[arg(long)]
    pub open: bool,
    /// Allow a non-loopback --listen address (needs a bearer token, see --token-env).
    #[arg(long)]
    pub allow_remote: bool,
    /// Environment variable holding the bearer token; when set, every request must carry
    /// `Authorization: Bearer <token>` (as `envreg serve --http`).
    #[arg(long, value_name = "NAME", default_value = "ENVREG_HTTP_TOKEN")]
    pub token_env: String,
    /// Log level for stderr: error, warn, info, debug, trace (or a tracing filter).
    #[arg(long, value_name = "LEVEL", default_value = "warn")]
    pub log_level: String,
}

impl UiArgs {
    /// The exposure options, with the token read from its environment variable.
    pub fn http_options(&self) -> HttpOptions {
        HttpOptions {
            addr: self.listen,
            allow_remote: self.allow_remote,
            token: std::env::var(&self.token_env)
                .ok()
                .filter(|t| !t.is_empty()),
        }
    }
}

/// The whole app for `registry`, guarded as `options` say. Also what tests and the
/// bench serve.
pub fn app(
    registry: Arc<Registry>,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> axum::Router {
    let changes = live::start(Arc::clone(&registry), shutdown.clone());
    let state = routes::AppState {
        registry,
        changes,
        shutdown,
    };
    guard(routes::router(state), options)
}

/// Serve until `shutdown` is cancelled (or Ctrl-C). `on_listening` gets the bound
/// address (the port when 0 was asked for).
pub async fn serve(
    registry: Arc<Registry>,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_listening: impl FnOnce(SocketAddr),
) -> anyhow::Result<()> {
    check_exposure(&options)?;
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let local = listener.local_addr().context("no local address")?;
    on_listening(local);
    let app = app(registry, &options, shutdown.clone());
    let stop = shutdown.clone();
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = stop.cancelled() => {}
            }
            // Ends the event streams, which would otherwise hold the shutdown open.
            stop.cancel();
        })
        .await
        .context("HTTP server failed")?;
    shutdown.cancel();
    Ok(())
}

/// The URL a person opens for a bound address.
pub fn url_of(addr: SocketAddr) -> String {
    format!("http://{addr}/")
}

/// `envreg ui`: logging, a runtime, the registry, [`serve`]. Prints the URL on stdout
/// (the one line a launcher or a test waits for). Blocks until interrupted.
pub fn run(root: PathBuf, args: UiArgs) -> anyhow::Result<()> {
    envreg_mcp::init_logging(&args.log_level);
    let options = args.http_options();
    check_exposure(&options)?;
    let registry = Registry::open(&root)
        .map_err(|e| anyhow::anyhow!("cannot open registry {}: {e}", root.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let open = args.open;
    runtime.block_on(serve(
        Arc::new(registry),
        options,
        CancellationToken::new(),
        move |addr| {
            let url = url_of(addr);
            // A closed stdout (the launcher went away) is not a reason to stop serving.
            let mut out = std::io::stdout();
            let _ = writeln!(out, "envreg ui: {url}").and_then(|()| out.flush());
            if open {
                open_browser(&url);
            }
        },
    ))
}

/// Ask the desktop to open `url`; say so when there is no opener. The opener is waited
/// for on a thread (it returns once the browser has the URL), so it leaves no zombie.
fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    match std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        Ok(mut child) => {
            std::thread::spawn(move || child.wait());
        }
        Err(_) => eprintln!("envreg ui: no browser opener ({opener}) found; open {url} yourself"),
    }
}
