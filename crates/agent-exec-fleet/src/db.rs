//! The fleet's connection to PostgreSQL (shared with the journal), the queue
//! library's schema [`QUEUE_SCHEMA`] and utilities, and the LISTEN channels. The
//! fleet's own tables are `store`'s.

use std::time::Duration;

use std::sync::Arc;

use agent_exec_journal::{Notice, PgConnection};
use graphile_worker::WorkerUtils;
use graphile_worker::tokio_postgres::TokioPostgresDatabase;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use crate::FleetError;

/// The queue library's schema in the fleet database.
pub const QUEUE_SCHEMA: &str = "agent_exec_queue";
/// The queue's task identifier for one execution.
pub const TASK: &str = "agent_exec_run";
/// NOTIFY channel: an execution asked to stop (payload: the execution id).
pub const CANCEL_CHANNEL: &str = "agent_exec_fleet_cancel";
/// NOTIFY channel: an execution reached its end (payload: the execution id).
pub const DONE_CHANNEL: &str = "agent_exec_fleet_done";
/// How long `connect` waits for a server that does not answer.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// The fleet's connection to its database (shared with the journal in the one-shot
/// commands: see [`FleetDb::connection`]).
pub struct FleetDb {
    pub(crate) conn: Arc<PgConnection>,
    pub(crate) location: String,
    pub(crate) url: String,
}

impl std::fmt::Debug for FleetDb {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetDb")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

/// Connects within [`CONNECT_TIMEOUT`]; the error names the redacted location only.
pub(crate) async fn connect_raw(
    url: &str,
) -> Result<
    (
        Client,
        tokio_postgres::Connection<tokio_postgres::Socket, tokio_postgres::tls::NoTlsStream>,
    ),
    FleetError,
> {
    let location = agent_exec_journal::redact_url(url);
    match tokio::time::timeout(CONNECT_TIMEOUT, tokio_postgres::connect(url, NoTls)).await {
        Ok(Ok(pair)) => Ok(pair),
        Ok(Err(e)) => Err(FleetError::Connect {
            location,
            reason: e.to_string(),
        }),
        Err(_) => Err(FleetError::Connect {
            location,
            reason: format!("no answer within {CONNECT_TIMEOUT:?}"),
        }),
    }
}

/// [`PgConnection::connect`] within [`CONNECT_TIMEOUT`], errors as [`connect_raw`]'s.
async fn connect_shared(url: &str) -> Result<PgConnection, FleetError> {
    let location = agent_exec_journal::redact_url(url);
    match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect(url)).await {
        Ok(Ok(conn)) => Ok(conn),
        Ok(Err(e)) => Err(FleetError::Connect {
            location,
            reason: e.to_string(),
        }),
        Err(_) => Err(FleetError::Connect {
            location,
            reason: format!("no answer within {CONNECT_TIMEOUT:?}"),
        }),
    }
}

impl FleetDb {
    /// Connects without creating anything (read-only views: `runs`). Queries of a
    /// database that has no fleet tables fail; callers treat that as "no fleet".
    pub async fn connect_existing(url: &str) -> Result<FleetDb, FleetError> {
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(FleetError::NotPostgres);
        }
        let conn = connect_shared(url).await?;
        Ok(FleetDb {
            location: conn.location().to_owned(),
            conn: Arc::new(conn),
            url: url.to_owned(),
        })
    }

    /// The connection, to open the journal on (`PgJournal::open_on`): a one-shot
    /// command then needs one connection, not two.
    pub fn connection(&self) -> &Arc<PgConnection> {
        &self.conn
    }

    /// The redacted URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// True once the connection is gone (the server restarted or went away).
    pub fn is_closed(&self) -> bool {
        self.conn.is_closed()
    }

    pub(crate) fn pg(&self, source: tokio_postgres::Error) -> FleetError {
        FleetError::Postgres {
            location: self.location.clone(),
            source,
        }
    }

    pub(crate) fn queue_err(&self, e: impl std::fmt::Display) -> FleetError {
        FleetError::Queue {
            location: self.location.clone(),
            reason: e.to_string(),
        }
    }

    /// The queue library's utilities over a small pool of its own (it connects only
    /// when used without an executor of ours).
    pub(crate) fn queue_utils(&self, pool_size: usize) -> Result<WorkerUtils, FleetError> {
        let database =
            TokioPostgresDatabase::from_url(&self.url, pool_size).map_err(|e| self.queue_err(e))?;
        Ok(WorkerUtils::new(database, QUEUE_SCHEMA))
    }

    /// LISTEN on `channels` on this connection; the receiver gets each NOTIFY (channel,
    /// payload). One caller per connection (`wait`); `None` when taken already.
    pub async fn listen_here(
        &self,
        channels: &[&str],
    ) -> Result<Option<tokio::sync::mpsc::UnboundedReceiver<Notice>>, FleetError> {
        let Some(notices) = self.conn.take_notices() else {
            return Ok(None);
        };
        let client = self.conn.read().await;
        for channel in channels {
            // Channel names are our constants, never input.
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .map_err(|e| self.pg(e))?;
        }
        Ok(Some(notices))
    }

    /// A second connection that receives NOTIFY on `channels`; each payload goes to
    /// the returned receiver. The receiver ends when the connection does.
    pub async fn listen(
        &self,
        channels: &[&str],
    ) -> Result<
        (
            Client,
            tokio::sync::mpsc::UnboundedReceiver<(String, String)>,
        ),
        FleetError,
    > {
        let (client, mut connection) = connect_raw(&self.url).await?;
        let (send, receive) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut messages = futures::stream::poll_fn(move |cx| connection.poll_message(cx));
            use futures::StreamExt as _;
            while let Some(message) = messages.next().await {
                match message {
                    Ok(AsyncMessage::Notification(n)) => {
                        if send
                            .send((n.channel().to_owned(), n.payload().to_owned()))
                            .is_err()
                        {
                            break;
                        }
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(%error, "fleet: listening connection ended");
                        break;
                    }
                }
            }
        });
        for channel in channels {
            // Channel names are our constants, never input.
            client
                .batch_execute(&format!("LISTEN {channel}"))
                .await
                .map_err(|e| self.pg(e))?;
        }
        Ok((client, receive))
    }
}
