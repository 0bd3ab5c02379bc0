//! A wake-up for the queue's job slots when one of this worker's jobs ends.
//!
//! graphile_worker 0.14 has a slot claim a job only on a signal — the NOTIFY of a new
//! job, or its poll (every second) — and one job per signal. A slot that finished while
//! jobs were still queued therefore sat idle until the next poll: measured, one worker
//! at concurrency 4 drained a backlog at about 4 jobs a second, whatever the jobs cost.
//!
//! Decision: the queue's database driver is wrapped, and its notification stream also
//! carries a local "a slot is free" message, sent when a job handler returns; the
//! library's own dispatcher then claims the next job at once, by its own rules
//! (`SKIP LOCKED`, flags). Not taken: a shorter poll interval (a query per slot per
//! interval on every idle worker, and still a wait); the library's LocalQueue (it
//! prefetches jobs into one worker, where they wait behind long executions while
//! another worker is idle, and hands them back on a timeout); NOTIFYing the queue's
//! channel from the worker (it wakes every slot of every worker).

use std::sync::Arc;

use graphile_worker::tokio_postgres::TokioPostgresDatabase;
use graphile_worker::{
    BoxFuture, DatabaseDriver, DbError, DbExecutor, DbParams, DbRow, DbTransaction, Notification,
    NotificationStream,
};
use tokio::sync::Notify;

/// The queue's driver, plus the local wake-up.
#[derive(Debug, Clone)]
pub(crate) struct WakingDatabase {
    inner: TokioPostgresDatabase,
    free: Arc<Notify>,
}

impl WakingDatabase {
    /// `free.notify_one()` then wakes the slots. Wake-ups that arrive together
    /// coalesce into one, which is enough: the library hands each signal to all of
    /// its slots.
    pub(crate) fn new(inner: TokioPostgresDatabase, free: Arc<Notify>) -> WakingDatabase {
        WakingDatabase { inner, free }
    }
}

impl DbExecutor for WakingDatabase {
    fn execute<'a>(
        &'a self,
        sql: &'a str,
        params: DbParams,
    ) -> BoxFuture<'a, Result<u64, DbError>> {
        self.inner.execute(sql, params)
    }

    fn fetch_all<'a>(
        &'a self,
        sql: &'a str,
        params: DbParams,
    ) -> BoxFuture<'a, Result<Vec<DbRow>, DbError>> {
        self.inner.fetch_all(sql, params)
    }
}

impl DatabaseDriver for WakingDatabase {
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }

    fn begin<'a>(&'a self) -> BoxFuture<'a, Result<DbTransaction, DbError>> {
        self.inner.begin()
    }

    fn listen<'a>(
        &'a self,
        channel: &'a str,
    ) -> BoxFuture<'a, Result<Option<NotificationStream>, DbError>> {
        Box::pin(async move {
            let from_server = self.inner.listen(channel).await?;
            let free = self.free.clone();
            let channel_name = channel.to_owned();
            let local = futures::stream::unfold(free, move |free| {
                let channel = channel_name.clone();
                async move {
                    free.notified().await;
                    let note = Notification {
                        channel,
                        payload: String::new(),
                    };
                    Some((Ok(note), free))
                }
            });
            let stream: NotificationStream = match from_server {
                Some(server) => Box::pin(futures::stream::select(server, local)),
                None => Box::pin(local),
            };
            Ok(Some(stream))
        })
    }
}
