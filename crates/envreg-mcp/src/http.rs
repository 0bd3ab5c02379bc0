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
//! - [`guard`] applies the same two rules to every router served from this binary (the
//!   MCP endpoint and `envreg ui`): the bearer check, and on loopback the `Host` rule of
//!   [`refusal`] (one `Host`, a name from rmcp's own default allow-list, no userinfo, no
//!   absolute-form target), so both servers refuse exactly the same requests.
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

/// Why a request to a loopback-only server is refused, or `None` when it may pass.
///
/// A page on another site that rebinds its DNS name to 127.0.0.1 reaches the port, but
/// with its own name as `Host`; so the request must name a loopback host, and name it
/// once, unambiguously (issue 19: `Host: evil.com:80@localhost`, two `Host` headers with
/// localhost first, and `POST http://evil.com/mcp` all reached the MCP endpoint):
/// - exactly one `Host` header, a loopback name (any port), no userinfo;
/// - HTTP/1 requests in origin form (`POST /mcp`): an absolute-form target carries its
///   own authority, which proxies prefer over `Host`, so it is refused outright;
/// - HTTP/2 names the host in `:authority` (the URI's authority): that must be loopback,
///   and a `Host` header, if any, too.
pub fn refusal<B>(request: &axum::http::Request<B>) -> Option<&'static str> {
    let mut hosts = request.headers().get_all(header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Some("more than one Host header");
    }
    let host = match host.map(|value| value.to_str()) {
        Some(Ok(value)) => Some(value),
        Some(Err(_)) => return Some("the Host header is not text"),
        None => None,
    };
    let authority = request.uri().authority().map(|a| a.as_str());
    if request.version() < axum::http::Version::HTTP_2 {
        if authority.is_some() || request.uri().scheme().is_some() {
            return Some("an absolute-form request target (send `POST /mcp` with a Host header)");
        }
        return match host {
            Some(host) if is_loopback_host(host) => None,
            Some(_) => Some("the Host header is not a loopback name"),
            None => Some("no Host header"),
        };
    }
    match (authority, host) {
        (None, None) => Some("no :authority or Host"),
        (Some(a), _) if !is_loopback_host(a) => Some("the :authority is not a loopback name"),
        (_, Some(h)) if !is_loopback_host(h) => Some("the Host header is not a loopback name"),
        _ => None,
    }
}

/// [`refusal`] as middleware: 403 with the reason.
async fn require_loopback_host(request: Request, next: Next) -> Response {
    let Some(why) = refusal(&request) else {
        return next.run(request).await;
    };
    tracing::warn!(why, "refused a request to a loopback-only server");
    (
        StatusCode::FORBIDDEN,
        format!(
            "Forbidden: {why}; this server is loopback only and answers only to localhost, 127.0.0.1 or [::1] (see --allow-remote)\n"
        ),
    )
        .into_response()
}

/// Wrap `router` (served under `options`) in the exposure rules of this module: the
/// bearer check when a token is configured, and the loopback `Host` check ([`refusal`])
/// unless `--allow-remote` was given (then the token is the gate). The MCP endpoint
/// ([`router`]) and `envreg ui` both go through it; rmcp's own `Host` allow-list stays on
/// behind it for the MCP endpoint.
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
    guard(router, options)
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

    fn request(version: axum::http::Version, target: &str, hosts: &[&str]) -> Option<&'static str> {
        let mut builder = axum::http::Request::builder()
            .method("POST")
            .uri(target)
            .version(version);
        for host in hosts {
            builder = builder.header(header::HOST, *host);
        }
        refusal(&builder.body(()).expect("request"))
    }

    #[test]
    fn only_one_loopback_host_in_origin_form_passes() {
        use axum::http::Version;
        let h1 = Version::HTTP_11;
        assert_eq!(request(h1, "/mcp", &["localhost:8765"]), None);
        assert_eq!(request(h1, "/mcp", &["127.0.0.1"]), None);
        assert!(request(h1, "/mcp", &["evil.com:80@localhost"]).is_some());
        assert!(request(h1, "/mcp", &["localhost", "evil.com"]).is_some());
        assert!(request(h1, "/mcp", &["localhost", "localhost"]).is_some());
        assert!(request(h1, "http://evil.com/mcp", &["localhost"]).is_some());
        assert!(request(h1, "http://localhost/mcp", &["localhost"]).is_some());
        assert!(request(h1, "/mcp", &[]).is_some());
        let h2 = Version::HTTP_2;
        assert_eq!(request(h2, "http://localhost:1/mcp", &[]), None);
        assert!(request(h2, "http://evil.com/mcp", &[]).is_some());
        assert!(request(h2, "http://localhost/mcp", &["evil.com"]).is_some());
    }

    #[test]
    fn token_comparison() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
