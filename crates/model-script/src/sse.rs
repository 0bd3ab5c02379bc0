//! Rendering a turn into a byte stream with its ending (shared by every protocol).

use axum::body::{Body, Bytes};
use axum::response::Response;
use futures::StreamExt as _;

use crate::Ending;

/// One SSE frame: `event: NAME` (when given) and `data: JSON`.
pub(crate) fn frame(event: Option<&str>, data: &serde_json::Value) -> Bytes {
    match event {
        Some(name) => Bytes::from(format!("event: {name}\ndata: {data}\n\n")),
        None => Bytes::from(format!("data: {data}\n\n")),
    }
}

/// Splits `text` into up to three pieces on char boundaries, so a client sees real
/// deltas rather than one chunk.
pub(crate) fn pieces(text: &str) -> Vec<&str> {
    let n = text.chars().count();
    if n < 3 {
        return vec![text];
    }
    let cut = |k: usize| {
        text.char_indices()
            .nth(n * k / 3)
            .map_or(text.len(), |(i, _)| i)
    };
    let (a, b) = (cut(1), cut(2));
    vec![&text[..a], &text[a..b], &text[b..]]
}

/// An SSE response: the `body` frames, then `tail` frames only when the turn
/// completes; otherwise hang or disconnect after the body.
pub(crate) fn respond(body: Vec<Bytes>, tail: Vec<Bytes>, ending: Ending) -> Response {
    let head = futures::stream::iter(body.into_iter().map(Ok::<_, std::io::Error>));
    let stream: futures::stream::BoxStream<'static, Result<Bytes, std::io::Error>> = match ending {
        Ending::Complete => head
            .chain(futures::stream::iter(tail.into_iter().map(Ok)))
            .boxed(),
        Ending::Hang => head.chain(futures::stream::pending()).boxed(),
        Ending::Disconnect => head
            .chain(futures::stream::once(async {
                tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionAborted,
                    "model-script: scripted disconnect",
                ))
            }))
            .boxed(),
    };
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("cache-control", "no-cache")
        .body(Body::from_stream(stream))
        // Static, valid headers: the builder cannot fail; an empty 500 if it ever did.
        .unwrap_or_else(|_| {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = axum::http::StatusCode::INTERNAL_SERVER_ERROR;
            response
        })
}
