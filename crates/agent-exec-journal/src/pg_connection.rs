//! One PostgreSQL connection that the journal and the fleet can share, with its
//! prepared statements cached and its NOTIFY messages kept.
//!
//! Why: on a loaded two-core machine a new connection costs tens of milliseconds (the
//! server forks a process and warms its caches) and every statement sent as text is two
//! round trips (parse, then execute). A short-lived command of the fleet (`submit`,
//! `wait`, `cancel`) used three connections and parsed every statement anew; that was
//! most of its time. Decision: the connection is the unit that is shared
//! ([`PgConnection`] behind an `Arc`), each user keeps its own logic; not taken: one
//! type that is both journal and fleet (the fleet's tables are not the journal's
//! concern), and a connection pool for these one-shot commands (they run one thing at a
//! time).

use std::collections::HashMap;
use std::sync::Mutex as SyncMutex;

use tokio::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard, mpsc};
use tokio_postgres::types::ToSql;
use tokio_postgres::{AsyncMessage, Client, GenericClient, NoTls, Row, Statement};

/// A NOTIFY message: (channel, payload).
pub type Notice = (String, String);

/// One connection, its statement cache, and the NOTIFY messages it received.
pub struct PgConnection {
    /// Shared by single statements (which the driver pipelines), exclusive for a
    /// transaction (nobody else's statement may land inside it).
    client: RwLock<Client>,
    statements: SyncMutex<HashMap<String, Statement>>,
    notices: SyncMutex<Option<mpsc::UnboundedReceiver<Notice>>>,
    location: String,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for PgConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgConnection")
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl Drop for PgConnection {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PgConnection {
    /// Connects to `url` (no TLS, as the journal). Errors are the driver's; callers
    /// name the location with [`redact_url`], never the URL.
    pub async fn connect(url: &str) -> Result<PgConnection, tokio_postgres::Error> {
        let (client, mut connection) = tokio_postgres::connect(url, NoTls).await?;
        let (send, receive) = mpsc::unbounded_channel();
        // Driving the connection through `poll_message` keeps the NOTIFY messages
        // (`connection.await` drops them); nobody reading them costs nothing.
        let task = tokio::spawn(async move {
            loop {
                match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                    Some(Ok(AsyncMessage::Notification(n))) => {
                        let _ = send.send((n.channel().to_owned(), n.payload().to_owned()));
                    }
                    Some(Ok(_)) => {}
                    Some(Err(error)) => {
                        tracing::warn!(%error, "PostgreSQL connection ended");
                        break;
                    }
                    None => break,
                }
            }
        });
        Ok(PgConnection {
            client: RwLock::new(client),
            statements: SyncMutex::new(HashMap::new()),
            notices: SyncMutex::new(Some(receive)),
            location: redact_url(url),
            task,
        })
    }

    /// The client alone, for a transaction.
    pub async fn lock(&self) -> RwLockWriteGuard<'_, Client> {
        self.client.write().await
    }

    /// The client for single statements (each its own transaction); several holders
    /// at once have their statements pipelined on the connection.
    pub async fn read(&self) -> RwLockReadGuard<'_, Client> {
        self.client.read().await
    }

    /// The redacted URL.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// True once the connection is gone (the server restarted or went away).
    pub fn is_closed(&self) -> bool {
        self.task.is_finished()
    }

    /// The NOTIFY messages of the channels this connection LISTENs to; `None` after
    /// the first call (one reader).
    pub fn take_notices(&self) -> Option<mpsc::UnboundedReceiver<Notice>> {
        self.notices.lock().ok().and_then(|mut n| n.take())
    }

    /// `sql` prepared once on this connection (`client` is this connection's client
    /// or a transaction on it), then reused: one round trip per statement, not two.
    pub async fn statement(
        &self,
        client: &(impl GenericClient + Sync),
        sql: &str,
    ) -> Result<Statement, tokio_postgres::Error> {
        if let Some(found) = self
            .statements
            .lock()
            .ok()
            .and_then(|s| s.get(sql).cloned())
        {
            return Ok(found);
        }
        let statement = client.prepare(sql).await?;
        if let Ok(mut statements) = self.statements.lock() {
            statements.insert(sql.to_owned(), statement.clone());
        }
        Ok(statement)
    }

    /// Prepares `sqls` together: their requests are pipelined, one round trip for all
    /// (a one-shot command runs each statement once, so parsing them one by one was
    /// a round trip each). One that does not prepare — its table is not created yet —
    /// is left to its first use, which reports the error if there is one.
    pub async fn prepare_all(&self, sqls: &[&str]) {
        let client = self.client.read().await;
        let missing: Vec<&str> = match self.statements.lock() {
            Ok(cached) => sqls
                .iter()
                .copied()
                .filter(|sql| !cached.contains_key(*sql))
                .collect(),
            Err(_) => return,
        };
        let prepared =
            futures::future::join_all(missing.iter().map(|sql| client.prepare(sql))).await;
        if let Ok(mut cached) = self.statements.lock() {
            for (sql, statement) in missing.into_iter().zip(prepared) {
                if let Ok(statement) = statement {
                    cached.insert(sql.to_owned(), statement);
                }
            }
        }
    }

    /// `execute` through the statement cache.
    pub async fn execute(
        &self,
        client: &(impl GenericClient + Sync),
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.execute(&statement, params).await
    }

    /// `query` through the statement cache.
    pub async fn query(
        &self,
        client: &(impl GenericClient + Sync),
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.query(&statement, params).await
    }

    /// `query_opt` through the statement cache.
    pub async fn query_opt(
        &self,
        client: &(impl GenericClient + Sync),
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Option<Row>, tokio_postgres::Error> {
        let statement = self.statement(client, sql).await?;
        client.query_opt(&statement, params).await
    }
}

/// The URL without its password, so it can appear in an error or a log: the
/// password of `user:password@` is dropped, and the value of every query parameter
/// whose name is a credential's (`password`, `sslpassword`, … — see
/// [`agent_exec_contract::redact::is_credential_name`]) becomes `[redacted]`.
/// Anything that is not a URL (a libpq `key=value` string) is not shown at all.
pub fn redact_url(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return "<postgres url>".to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let mut out = url[..scheme_end + 3].to_owned();
    let after_authority = match authority.rfind('@') {
        Some(at) => {
            let userinfo = &authority[..at];
            out.push_str(userinfo.split(':').next().unwrap_or(""));
            out.push('@');
            &rest[at + 1..]
        }
        None => rest,
    };
    // The fragment, if any, is dropped: it is never part of a connection string, so
    // nothing in it is worth the risk of showing.
    let before_fragment = after_authority.split('#').next().unwrap_or(after_authority);
    let Some((path, query)) = before_fragment.split_once('?') else {
        out.push_str(before_fragment);
        return out;
    };
    out.push_str(path);
    out.push('?');
    let params: Vec<String> = query
        .split('&')
        .map(|param| match param.split_once('=') {
            Some((name, _)) if agent_exec_contract::redact::is_credential_name(name) => {
                format!("{name}={}", agent_exec_contract::redact::REDACTED)
            }
            _ => param.to_owned(),
        })
        .collect();
    out.push_str(&params.join("&"));
    out
}
