//! The HTTP surface: one GET route per view, the event stream and the two assets.
//! Nothing else is routed, so nothing on the page can write (any other method is 405).
//!
//! Page builds run on the blocking pool: a matrix page of the 10,000-record registry
//! resolves ~150 deployments and renders 5,000 cells, which should not hold an async
//! worker that the event streams share.

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use envreg_core::{EnvError, ErrorCode, RecordKind, Registry};
use maud::Markup;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::html::layout::{Frame, error_page};
use crate::{assets, cell, html, live, matrix, operations, records};

/// What every handler shares.
#[derive(Debug, Clone)]
pub struct AppState {
    pub registry: Arc<Registry>,
    pub changes: watch::Receiver<u64>,
    pub shutdown: CancellationToken,
}

/// The UI's router (unguarded: [`crate::serve`] wraps it in envreg-mcp's `guard`).
pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/", get(matrix_page))
        .route("/cell/{env}/{service}", get(cell_page))
        .route(
            "/cell/{env}/{service}/{deployment}",
            get(cell_deployment_page),
        )
        .route("/operations/{env}/{service}", get(operations_page))
        .route(
            "/operations/{env}/{service}/{deployment}",
            get(operations_deployment_page),
        )
        .route("/record/{kind}/{id}", get(record_page))
        .route("/validation", get(validation_page))
        .route("/events", get(events))
        .route("/assets/app.css", get(|| async { assets::css() }))
        .route("/assets/app.js", get(|| async { assets::js() }))
        // Browsers ask for it unprompted; "nothing here" without a 404 in the console.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .fallback(not_found)
        .layer(middleware::from_fn(security_headers))
        .with_state(state)
}

/// The Content-Security-Policy of every response: our own script and stylesheet only,
/// no inline code, no frames, no foreign connections. Defence in depth behind the
/// template engine's escaping.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

async fn security_headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

fn status_of(error: &EnvError) -> StatusCode {
    match error.code {
        ErrorCode::InvalidArgument => StatusCode::BAD_REQUEST,
        ErrorCode::EnvNotFound
        | ErrorCode::ServiceNotFound
        | ErrorCode::DeploymentNotFound
        | ErrorCode::RuleProfileNotFound
        | ErrorCode::BindingNotFound => StatusCode::NOT_FOUND,
        _ => StatusCode::UNPROCESSABLE_ENTITY,
    }
}

fn html_response(status: StatusCode, markup: Markup) -> Response {
    (status, Html(markup.into_string())).into_response()
}

/// A request the registry refused: the page heading and its error.
struct Refusal {
    heading: &'static str,
    error: Box<EnvError>,
}

/// `map_err` for a registry error, with the heading of the page that shows it.
fn refused(heading: &'static str) -> impl FnOnce(EnvError) -> Refusal {
    move |error| Refusal {
        heading,
        error: Box::new(error),
    }
}

/// Build a page on the blocking pool from the current snapshot.
async fn render<F>(state: &AppState, build: F) -> Response
where
    F: FnOnce(&Registry, Frame) -> Result<Markup, Refusal> + Send + 'static,
{
    let registry = Arc::clone(&state.registry);
    let built = tokio::task::spawn_blocking(move || {
        let started = std::time::Instant::now();
        let frame = Frame::of(&registry.snapshot());
        let mut response = match build(&registry, frame) {
            Ok(markup) => html_response(StatusCode::OK, markup),
            Err(Refusal { heading, error }) => {
                html_response(status_of(&error), error_page(frame, heading, &error))
            }
        };
        // The build's own time (registry read, resolve, HTML), for a browser's network
        // panel and for scripts/bench-envreg-ui.sh.
        let timing = format!("page;dur={:.3}", started.elapsed().as_secs_f64() * 1000.0);
        if let Ok(value) = HeaderValue::from_str(&timing) {
            response.headers_mut().insert("server-timing", value);
        }
        response
    })
    .await;
    built.unwrap_or_else(|_| {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "the page could not be built\n",
        )
            .into_response()
    })
}

async fn matrix_page(
    State(state): State<AppState>,
    Query(raw): Query<matrix::RawFilter>,
) -> Response {
    render(&state, move |registry, frame| {
        let filter = raw
            .parse()
            .map_err(refused("The matrix filter is not valid"))?;
        let snapshot = registry.snapshot();
        Ok(html::matrix::render(
            &matrix::build(&snapshot, &filter),
            frame,
        ))
    })
    .await
}

fn cell_response(
    state: &AppState,
    env: String,
    service: String,
    deployment: Option<String>,
) -> impl Future<Output = Response> + '_ {
    render(state, move |registry, frame| {
        let cell = cell::build(registry, &env, &service, deployment.as_deref())
            .map_err(refused("No such cell"))?;
        Ok(html::cell::render(&registry.snapshot(), &cell, frame))
    })
}

async fn cell_page(
    State(state): State<AppState>,
    Path((env, service)): Path<(String, String)>,
) -> Response {
    cell_response(&state, env, service, None).await
}

async fn cell_deployment_page(
    State(state): State<AppState>,
    Path((env, service, deployment)): Path<(String, String, String)>,
) -> Response {
    cell_response(&state, env, service, Some(deployment)).await
}

fn operations_response(
    state: &AppState,
    env: String,
    service: String,
    deployment: Option<String>,
) -> impl Future<Output = Response> + '_ {
    render(state, move |registry, frame| {
        let ops = operations::build(registry, &env, &service, deployment.as_deref())
            .map_err(refused("No such cell"))?;
        Ok(html::operations::render(
            &registry.snapshot(),
            &env,
            &service,
            deployment.as_deref(),
            &ops,
            frame,
        ))
    })
}

async fn operations_page(
    State(state): State<AppState>,
    Path((env, service)): Path<(String, String)>,
) -> Response {
    operations_response(&state, env, service, None).await
}

async fn operations_deployment_page(
    State(state): State<AppState>,
    Path((env, service, deployment)): Path<(String, String, String)>,
) -> Response {
    operations_response(&state, env, service, Some(deployment)).await
}

async fn record_page(
    State(state): State<AppState>,
    Path((kind, id)): Path<(String, String)>,
) -> Response {
    render(&state, move |registry, frame| {
        let kind = RecordKind::from_dir_name(&kind).ok_or_else(|| {
            refused("No such record kind")(EnvError::invalid_argument(format!(
                "unknown record folder {kind:?}; expected one of environments, services, deployments, rule-profiles, operation-bindings"
            )))
        })?;
        let page = records::record(registry, kind, &id).map_err(refused("No such record"))?;
        Ok(html::records::render_record(&page, frame))
    })
    .await
}

async fn validation_page(State(state): State<AppState>) -> Response {
    render(&state, |registry, frame| {
        Ok(html::records::render_validation(
            &records::validation(registry),
            frame,
        ))
    })
    .await
}

async fn events(State(state): State<AppState>) -> impl IntoResponse {
    live::events(state.changes.clone(), state.shutdown.clone())
}

async fn not_found(State(state): State<AppState>) -> Response {
    let frame = Frame::of(&state.registry.snapshot());
    let error = EnvError::invalid_argument("there is no page at this address");
    html_response(
        StatusCode::NOT_FOUND,
        error_page(frame, "Not found", &error),
    )
}
