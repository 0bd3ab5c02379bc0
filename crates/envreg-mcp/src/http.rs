//! Streamable HTTP serving: many MCP sessions at once, each with its `Mcp-Session-Id`.
//!
//! Security decisions:
//! - Binds to loopback unless `--allow-remote` is given, and `--allow-remote` is refused
//!   without a bearer token read from a named environment variable (never from a flag,
//!   which would show in `ps`). When a token is configured it is checked on *every*
//!   request, loopback or not, in constant time.
//! - On loopback, rmcp's `Host` allow-list (localhost / 127.0.0.1 / ::1) stays on, so a
//!   browser tricked by DNS rebinding cannot reach the server. With `--allow-remote`
//!   the allow-list is dropped (the bearer token is the gate).
//! - [`guard`] applies the same two rules to any other router served from this binary
//!   (`envreg ui`): the bearer check, and on loopback a `Host` check against rmcp's own
//!   default allow-list, so both servers refuse exactly the same requests.
//!
//! Oversized bodies: a request whose `Content-Length` is over [`MAX_BODY_BYTES`] is
//! read to its end (discarded, up to [`DRAIN_LIMIT_BYTES`]) and then answered `413`.
//! rmcp enforces the same limit while streaming, but answers as soon as the limit is
//! crossed and the connection closes with the rest of the body unread; the kernel then
//! resets it, and a client still sending often sees the reset instead of the 413.

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context as _, bail};
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::serve::ListenerExt as _;
use futures::StreamExt as _;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::server::{EnvregServer, SessionSource, Shared};

/// The path the MCP endpoint is served on.
pub const MCP_PATH: &str = "/mcp";

/// The largest request body accepted: the same limit as a stdio line.
pub const MAX_BODY_BYTES: usize = crate::stdio::MAX_LINE_BYTES;

/// How much of a body declared too large is read (and discarded) before the 413, so
/// the client gets the answer rather than a reset. Beyond this, the connection is
/// simply closed: nobody is owed a polite answer to a 16 MiB upload.
pub const DRAIN_LIMIT_BYTES: u64 = 16 * 1024 * 1024;

/// How the HTTP endpoint is exposed.
#[derive(Debug, Clone)]
pub struct HttpOptions {
    pub addr: SocketAddr,
    pub allow_remote: bool,
    /// The bearer token, already read from its environment variable.
    pub token: Option<String>,
}

/// Refuse a non-loopback address without `--allow-remote` and a token.
pub fn check_exposure(options: &HttpOptions) -> anyhow::Result<()> {
    if options.addr.ip().is_loopback() {
        return Ok(());
    }
    if !options.allow_remote {
        bail!(
            "refusing to listen on {}: it is not a loopback address; pass --allow-remote together with a bearer token in the environment variable named by --token-env (default ENVREG_HTTP_TOKEN)",
            options.addr
        );
    }
    if options.token.as_deref().is_none_or(str::is_empty) {
        bail!(
            "--allow-remote needs a bearer token: set the environment variable named by --token-env (default ENVREG_HTTP_TOKEN) to a secret"
        );
    }
    Ok(())
}

/// Compare without an early exit, so timing does not reveal a prefix of the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The credentials of an `Authorization: Bearer …` header. The scheme is matched
/// case-insensitively, as RFC 9110 §11.1 says auth schemes are; the token is not.
fn bearer_credentials(value: &str) -> Option<&str> {
    let (scheme, credentials) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| credentials.trim_start_matches(' '))
}

async fn require_bearer(
    State(token): State<Arc<String>>,
    request: Request,
    next: Next,
) -> Response {
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_credentials);
    match presented {
        Some(given) if constant_time_eq(given.as_bytes(), token.as_bytes()) => {
            next.run(request).await
        }
        _ => (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "missing or wrong bearer token\n",
        )
            .into_response(),
    }
}

/// The `Host` names a loopback server answers to: rmcp's default allow-list
/// (`localhost`, `127.0.0.1`, `::1`), taken from rmcp so the MCP endpoint and [`guard`]
/// cannot disagree.
pub fn loopback_host_names() -> Vec<String> {
    StreamableHttpServerConfig::default().allowed_hosts
}

/// Whether a `Host` header value names a loopback host (any port).
pub fn is_loopback_host(value: &str) -> bool {
    // A `Host` never carries userinfo (RFC 9110 §7.2); `user@localhost` is not a name.
    if value.contains('@') {
        return false;
    }
    let Ok(authority) = value.parse::<axum::http::uri::Authority>() else {
        return false;
    };
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_ascii_lowercase();
    loopback_host_names().contains(&host)
}

/// Refuse a request whose `Host` is not a loopback name: a page on another site that
/// rebinds its DNS name to 127.0.0.1 reaches the port, but with its own name as `Host`.
async fn require_loopback_host(request: Request, next: Next) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    if host.is_some_and(is_loopback_host) {
        return next.run(request).await;
    }
    tracing::warn!("refused a request whose Host header is not a loopback name");
    (
        StatusCode::FORBIDDEN,
        "Forbidden: the Host header is not a loopback name (this server is loopback only; see --allow-remote)\n",
    )
        .into_response()
}

/// Wrap `router` (served under `options`) in the exposure rules of this module: the
/// bearer check when a token is configured, and the loopback `Host` check unless
/// `--allow-remote` was given (then the token is the gate). For routers other than the
/// MCP endpoint, whose `Host` check rmcp makes itself.
pub fn guard(router: axum::Router, options: &HttpOptions) -> axum::Router {
    let router = if options.allow_remote {
        router
    } else {
        router.layer(middleware::from_fn(require_loopback_host))
    };
    with_bearer(router, options.token.as_deref())
}

/// `router` behind the bearer check, when a non-empty token is configured.
fn with_bearer(router: axum::Router, token: Option<&str>) -> axum::Router {
    match token.filter(|t| !t.is_empty()) {
        Some(token) => router.layer(middleware::from_fn_with_state(
            Arc::new(token.to_owned()),
            require_bearer,
        )),
        None => router,
    }
}

/// Answer `413` to a body declared over [`MAX_BODY_BYTES`], after reading it (see the
/// module doc); everything else goes on to rmcp, which also checks bodies without a
/// `Content-Length` while streaming them.
async fn refuse_oversized(request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|text| text.parse::<u64>().ok());
    let Some(length) = declared.filter(|length| *length > MAX_BODY_BYTES as u64) else {
        return next.run(request).await;
    };
    if length <= DRAIN_LIMIT_BYTES {
        let mut body = request.into_body().into_data_stream();
        while let Some(Ok(_discarded)) = body.next().await {}
    }
    tracing::info!(length, "refused an oversized request body");
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("Payload Too Large: request body exceeds {MAX_BODY_BYTES} bytes\n"),
    )
        .into_response()
}

/// The axum router: the MCP endpoint at [`MCP_PATH`], behind the bearer check if any.
pub fn router(
    shared: Arc<Shared>,
    options: &HttpOptions,
    shutdown: CancellationToken,
) -> axum::Router {
    let mut config = StreamableHttpServerConfig::default()
        .with_cancellation_token(shutdown)
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    if options.allow_remote {
        config = config.disable_allowed_hosts();
    }
    let factory_shared = Arc::clone(&shared);
    // Each HTTP session gets its own handler; its session id is the Mcp-Session-Id
    // header, which every request after `initialize` carries.
    let service = StreamableHttpService::new(
        move || {
            Ok(EnvregServer::new(
                Arc::clone(&factory_shared),
                SessionSource::Unavailable,
            ))
        },
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new()
        .nest_service(MCP_PATH, service)
        .layer(middleware::from_fn(refuse_oversized));
    with_bearer(router, options.token.as_deref())
}

/// Serve until `shutdown` is cancelled (or Ctrl-C).
pub async fn serve_http(shared: Arc<Shared>, options: HttpOptions) -> anyhow::Result<()> {
    check_exposure(&options)?;
    let shutdown = CancellationToken::new();
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .with_context(|| format!("cannot listen on {}", options.addr))?;
    let local = listener.local_addr().context("no local address")?;
    // The one line a launcher waits for (stderr: stdout stays clean).
    eprintln!("envreg-mcp: listening on http://{local}{MCP_PATH}");
    tracing::info!(%local, "serving MCP over streamable HTTP");
    let app = router(shared, &options, shutdown.clone());
    let stop = shutdown.clone();
    // Small JSON-RPC messages: without TCP_NODELAY, Nagle + delayed ACK add ~40 ms to a
    // round trip whose response is written in more than one segment (SSE framing).
    let listener = listener.tap_io(|stream| {
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
    });
    axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                () = stop.cancelled() => {}
            }
        })
        .await
        .context("HTTP server failed")?;
    shutdown.cancel();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(addr: &str, allow_remote: bool, token: Option<&str>) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().expect("addr"),
            allow_remote,
            token: token.map(str::to_owned),
        }
    }

    #[test]
    fn loopback_needs_nothing_else() {
        assert!(check_exposure(&options("127.0.0.1:0", false, None)).is_ok());
        assert!(check_exposure(&options("[::1]:0", false, None)).is_ok());
    }

    #[test]
    fn remote_needs_flag_and_token() {
        let err = check_exposure(&options("0.0.0.0:8080", false, Some("t"))).expect_err("no flag");
        assert!(err.to_string().contains("--allow-remote"));
        let err = check_exposure(&options("0.0.0.0:8080", true, None)).expect_err("no token");
        assert!(err.to_string().contains("bearer token"));
        assert!(check_exposure(&options("0.0.0.0:8080", true, Some(""))).is_err());
        assert!(check_exposure(&options("0.0.0.0:8080", true, Some("s3cret"))).is_ok());
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_the_token_is_not() {
        assert_eq!(bearer_credentials("Bearer s3cret"), Some("s3cret"));
        assert_eq!(bearer_credentials("bearer s3cret"), Some("s3cret"));
        assert_eq!(bearer_credentials("BEARER  s3cret"), Some("s3cret"));
        assert_eq!(bearer_credentials("Basic s3cret"), None);
        assert_eq!(bearer_credentials("Bearers3cret"), None);
        assert_eq!(bearer_credentials("Bearer S3CRET"), Some("S3CRET"));
    }

    #[test]
    fn loopback_hosts_are_rmcps_list_with_any_port() {
        assert!(is_loopback_host("localhost"));
        assert!(is_loopback_host("127.0.0.1:8765"));
        assert!(is_loopback_host("[::1]:8765"));
        assert!(is_loopback_host("LocalHost:1"));
        assert!(!is_loopback_host("evil.example"));
        assert!(!is_loopback_host("evil.example:8765"));
        assert!(!is_loopback_host("localhost.evil.example"));
        assert!(!is_loopback_host("127.0.0.2"));
        assert!(!is_loopback_host(""));
        assert!(!is_loopback_host("user@localhost"));
    }

    proptest::proptest! {
        /// The fuzz target `envreg_ui_request`'s twin for the `Host` check: no panic, and
        /// only a loopback name (any port) passes.
        #[test]
        fn host_check_never_panics_and_passes_only_loopback(host in ".{0,40}") {
            if is_loopback_host(&host) {
                let name = host.rsplit_once(':').filter(|(h, p)| !h.is_empty() && !h.ends_with(':') && p.chars().all(|c| c.is_ascii_digit())).map_or(host.as_str(), |(h, _)| h);
                let name = name.trim_start_matches('[').trim_end_matches(']').to_ascii_lowercase();
                proptest::prop_assert!(["localhost", "127.0.0.1", "::1"].contains(&name.as_str()), "{host:?}");
            }
        }
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
