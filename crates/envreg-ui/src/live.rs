//! Live updates: the registry's own change detection, turned into server-sent events.
//!
//! The registry notices changes on read: [`Registry::snapshot`] drains inotify (or
//! rescans) and bumps [`Snapshot::generation`](envreg_core::Snapshot) only when a file
//! changed. One task asks it every [`POLL_EVERY`] and publishes the generation on a
//! `watch` channel; each `/events` stream forwards it. Decision: one poller for the
//! whole server, not one per open page — ten tabs cost what one does, and a check that
//! finds nothing costs about a microsecond (`docs/envreg-registry.md`).
//!
//! Each stream first sends the current generation, so a page built just before a change
//! (and connected just after it) still learns it is stale.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use envreg_core::Registry;
use futures::{Stream, StreamExt as _};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How often the poller asks the registry whether anything changed.
pub const POLL_EVERY: Duration = Duration::from_millis(250);

/// Start the poller; it stops when `shutdown` is cancelled.
pub fn start(registry: Arc<Registry>, shutdown: CancellationToken) -> watch::Receiver<u64> {
    let (tx, rx) = watch::channel(registry.snapshot().generation);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(POLL_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => {}
                () = shutdown.cancelled() => break,
            }
            let registry = Arc::clone(&registry);
            // A rescan (no inotify) stats every file: keep it off the async workers.
            let Ok(generation) =
                tokio::task::spawn_blocking(move || registry.snapshot().generation).await
            else {
                break;
            };
            tx.send_if_modified(|current| {
                let changed = *current != generation;
                *current = generation;
                changed
            });
        }
    });
    rx
}

/// The `/events` stream: `event: change`, `data: <generation>`, first the current one,
/// then one per change, until the server shuts down.
pub fn events(
    changes: watch::Receiver<u64>,
    shutdown: CancellationToken,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let first = *changes.borrow();
    let initial = futures::stream::once(async move { change_event(first) });
    let updates = futures::stream::unfold(changes, |mut rx| async move {
        rx.changed().await.ok()?;
        let generation = *rx.borrow_and_update();
        Some((change_event(generation), rx))
    });
    let stream = initial
        .chain(updates)
        .take_until(shutdown.cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::default())
}

fn change_event(generation: u64) -> Result<Event, Infallible> {
    Ok(Event::default()
        .event("change")
        .data(generation.to_string()))
}
