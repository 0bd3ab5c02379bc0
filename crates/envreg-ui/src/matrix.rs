//! The matrix: environments across (tier order, production marked), services down,
//! each cell the service's deployments in that environment. A model only; `page.rs`
//! draws it.
//!
//! Every value comes from the registry's own functions: rows are ranked with
//! `env_find`'s ranking ([`envreg_core::read::rank_of`]), cells list
//! [`Snapshot::deployments_of`], and a deployment's namespace, workload and hosts are
//! what [`resolve_in_snapshot`] answers for it — the same Service Context an agent gets,
//! not a second reading of the YAML.
//!
//! Decisions:
//! - Rows are paginated ([`PAGE_ROWS`] services a page) and every column is shown: at
//!   100 environments × 2,000 services one page is 5,000 cells, which a browser lays out
//!   in well under a second, while a virtualized grid would need the JavaScript build
//!   step the issue rules out. Header row and column stay in view (CSS `sticky`).
//! - A tier or platform filter narrows the columns and then hides the rows left with no
//!   deployment at all (otherwise "production only" is mostly empty rows). The text
//!   filter narrows and orders the rows by rank, as `env_find` orders its hits; unlike
//!   `env_find` it is not cut at 25 hits.
//! - A deployment whose context does not resolve (a template error) still shows, with
//!   the error code; the cell page explains it.

use envreg_core::model::{Platform, Tier};
use envreg_core::read::{MIN_FIND_QUERY_CHARS, MatchField, rank_of};
use envreg_core::resolve::resolve_in_snapshot;
use envreg_core::{EnvError, RecordKind, Snapshot};

/// Services per page.
pub const PAGE_ROWS: usize = 50;

/// At most this many host ids are listed in a cell; the rest are counted.
pub const MAX_CELL_HOSTS: usize = 3;

/// The matrix's filters, as the query string gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub tier: Option<Tier>,
    pub platform: Option<Platform>,
    /// Lower-cased, trimmed, at least [`MIN_FIND_QUERY_CHARS`] characters.
    pub text: Option<String>,
    /// 1-based.
    pub page: usize,
}

/// The raw query string of `/`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct RawFilter {
    pub tier: Option<String>,
    pub platform: Option<String>,
    pub q: Option<String>,
    pub page: Option<String>,
}

pub const TIERS: [Tier; 4] = [Tier::Dev, Tier::Test, Tier::Staging, Tier::Production];
pub const PLATFORMS: [Platform; 5] = [
    Platform::Kubernetes,
    Platform::Vm,
    Platform::Docker,
    Platform::BareMetal,
    Platform::Other,
];

impl RawFilter {
    /// The filter, or `INVALID_ARGUMENT` naming the accepted values. Empty fields (an
    /// untouched form control) mean "no filter".
    pub fn parse(&self) -> Result<Filter, EnvError> {
        let given = |v: &Option<String>| {
            v.as_deref()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
        };
        let tier = match given(&self.tier) {
            None => None,
            Some(t) => Some(TIERS.into_iter().find(|x| x.as_str() == t).ok_or_else(|| {
                EnvError::invalid_argument(format!(
                    "unknown tier {t:?}; expected one of dev, test, staging, production"
                ))
            })?),
        };
        let platform = match given(&self.platform) {
            None => None,
            Some(p) => Some(
                PLATFORMS
                    .into_iter()
                    .find(|x| x.as_str() == p)
                    .ok_or_else(|| {
                        EnvError::invalid_argument(format!(
                            "unknown platform {p:?}; expected one of kubernetes, vm, docker, bare-metal, other"
                        ))
                    })?,
            ),
        };
        let text = match given(&self.q) {
            None => None,
            Some(q) if q.chars().count() < MIN_FIND_QUERY_CHARS => {
                return Err(EnvError::invalid_argument(format!(
                    "the text filter needs at least {MIN_FIND_QUERY_CHARS} characters (as env_find)"
                )));
            }
            Some(q) => Some(q.to_lowercase()),
        };
        let page = match given(&self.page) {
            None => 1,
            Some(p) => p.parse::<usize>().ok().filter(|n| *n >= 1).ok_or_else(|| {
                EnvError::invalid_argument("page must be a whole number from 1".to_owned())
            })?,
        };
        Ok(Filter {
            tier,
            platform,
            text,
            page,
        })
    }
}

/// An environment column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    pub id: String,
    pub name: String,
    pub tier: Tier,
    pub platform: Platform,
}

impl Column {
    pub fn is_production(&self) -> bool {
        self.tier == Tier::Production
    }
}

/// Where a deployment runs, as its resolved Service Context says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// The resolved `namespace` and/or `workload` variables.
    Workload {
        namespace: Option<String>,
        workload: Option<String>,
    },
    /// The environment's host ids (at most [`MAX_CELL_HOSTS`]) and how many more.
    Hosts { ids: Vec<String>, more: usize },
    /// Neither variable and no hosts.
    Unspecified,
    /// The context does not resolve; the error code.
    Unresolved(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeploymentBadge {
    pub id: String,
    /// The deployment's own platform, else its environment's (a mixed estate).
    pub platform: Platform,
    pub placement: Placement,
}

/// One service row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub id: String,
    pub name: String,
    /// Which field the text filter matched.
    pub matched: Option<MatchField>,
    /// One entry per column, in column order.
    pub cells: Vec<Vec<DeploymentBadge>>,
}

/// One page of the matrix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    pub filter: Filter,
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
    /// Rows over all pages.
    pub total_rows: usize,
    pub pages: usize,
    pub total_services: usize,
    pub total_environments: usize,
}

fn tier_rank(tier: Tier) -> usize {
    TIERS.iter().position(|t| *t == tier).unwrap_or(TIERS.len())
}

/// The columns: every environment the filter keeps, in tier order, then by id.
pub fn columns(snapshot: &Snapshot, filter: &Filter) -> Vec<Column> {
    let mut out: Vec<Column> = snapshot
        .records(RecordKind::Environment)
        .filter_map(|r| r.as_environment())
        .filter(|e| filter.tier.is_none_or(|t| t == e.tier))
        .filter(|e| filter.platform.is_none_or(|p| p == e.platform))
        .map(|e| Column {
            id: e.id.clone(),
            name: e.name.clone(),
            tier: e.tier,
            platform: e.platform,
        })
        .collect();
    // Records come in id order and the sort is stable: tier order, then id.
    out.sort_by_key(|c| tier_rank(c.tier));
    out
}

/// Build one page of the matrix.
pub fn build(snapshot: &Snapshot, filter: &Filter) -> Matrix {
    let columns = columns(snapshot, filter);
    let narrowed = filter.tier.is_some() || filter.platform.is_some();
    let mut candidates: Vec<(u8, &envreg_core::Record, Option<MatchField>)> = snapshot
        .records(RecordKind::Service)
        .filter_map(|rec| match &filter.text {
            None => Some((0, rec.as_ref(), None)),
            Some(needle) => {
                rank_of(rec.common(), needle).map(|(rank, field)| (rank, rec.as_ref(), Some(field)))
            }
        })
        .filter(|(_, rec, _)| {
            !narrowed
                || columns
                    .iter()
                    .any(|c| !snapshot.deployments_of(&c.id, rec.id()).is_empty())
        })
        .collect();
    // Rank first (as env_find), then id; records arrive in id order, the sort is stable.
    candidates.sort_by_key(|(rank, _, _)| *rank);
    let total_rows = candidates.len();
    let pages = total_rows.div_ceil(PAGE_ROWS).max(1);
    let start = (filter.page - 1).saturating_mul(PAGE_ROWS);
    let rows = candidates
        .iter()
        .skip(start)
        .take(PAGE_ROWS)
        .map(|(_, rec, matched)| Row {
            id: rec.id().to_owned(),
            name: rec.name().to_owned(),
            matched: *matched,
            cells: columns
                .iter()
                .map(|c| {
                    snapshot
                        .deployments_of(&c.id, rec.id())
                        .iter()
                        .map(|d| badge(snapshot, &c.id, rec.id(), d))
                        .collect()
                })
                .collect(),
        })
        .collect();
    Matrix {
        filter: filter.clone(),
        columns,
        rows,
        total_rows,
        pages,
        total_services: snapshot.count(RecordKind::Service),
        total_environments: snapshot.count(RecordKind::Environment),
    }
}

/// A deployment as a cell shows it: its effective platform, and its resolved
/// namespace/workload, else its hosts (its own when it has them).
fn badge(
    snapshot: &Snapshot,
    environment: &str,
    service: &str,
    deployment: &str,
) -> DeploymentBadge {
    let placement = match resolve_in_snapshot(
        snapshot,
        Some(environment),
        service,
        Some(deployment),
        // Never consulted: the environment is given.
        || Err(EnvError::invalid_argument("no environment")),
    ) {
        Err(e) => Placement::Unresolved(e.code.as_str().to_owned()),
        Ok(ctx) => {
            let namespace = ctx.variables.get("namespace").cloned();
            let workload = ctx.variables.get("workload").cloned();
            // A deployment with its own hosts (a VM service in a Kubernetes
            // environment) is placed by them, not by the environment's namespace.
            let own_hosts = snapshot
                .deployment(deployment)
                .is_some_and(|d| d.hosts.as_ref().is_some_and(|h| !h.is_empty()));
            if !own_hosts && (namespace.is_some() || workload.is_some()) {
                Placement::Workload {
                    namespace,
                    workload,
                }
            } else if ctx.hosts.is_empty() {
                Placement::Unspecified
            } else {
                Placement::Hosts {
                    ids: ctx
                        .hosts
                        .iter()
                        .take(MAX_CELL_HOSTS)
                        .map(|h| h.id.clone())
                        .collect(),
                    more: ctx.hosts.len().saturating_sub(MAX_CELL_HOSTS),
                }
            }
        }
    };
    let platform = match (
        snapshot.deployment(deployment),
        snapshot.environment(environment),
    ) {
        (Some(d), Some(e)) => d.effective_platform(e),
        (_, Some(e)) => e.platform,
        _ => Platform::Other,
    };
    DeploymentBadge {
        id: deployment.to_owned(),
        platform,
        placement,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(tier: &str, platform: &str, q: &str, page: &str) -> RawFilter {
        let some = |s: &str| Some(s.to_owned());
        RawFilter {
            tier: some(tier),
            platform: some(platform),
            q: some(q),
            page: some(page),
        }
    }

    proptest::proptest! {
        /// The fuzz target `envreg_ui_request`'s twin: any query fields parse or are
        /// refused, never panic, and a parsed filter keeps its invariants.
        #[test]
        fn any_query_parses_or_is_refused(
            tier in proptest::option::of(".{0,12}"),
            platform in proptest::option::of(".{0,12}"),
            q in proptest::option::of(".{0,12}"),
            page in proptest::option::of("[0-9-]{0,6}|.{0,4}"),
        ) {
            let raw = RawFilter { tier, platform, q, page };
            if let Ok(filter) = raw.parse() {
                proptest::prop_assert!(filter.page >= 1);
                if let Some(text) = &filter.text {
                    proptest::prop_assert!(text.chars().count() >= MIN_FIND_QUERY_CHARS);
                    proptest::prop_assert_eq!(text, &text.to_lowercase());
                }
            }
        }
    }

    #[test]
    fn empty_fields_mean_no_filter() {
        let f = raw("", " ", "", "").parse().expect("parses");
        assert_eq!(
            f,
            Filter {
                page: 1,
                ..Filter::default()
            }
        );
    }

    #[test]
    fn filters_parse_and_bad_values_name_the_accepted_ones() {
        let f = raw("production", "kubernetes", " Checkout ", "2")
            .parse()
            .expect("parses");
        assert_eq!(f.tier, Some(Tier::Production));
        assert_eq!(f.platform, Some(Platform::Kubernetes));
        assert_eq!(f.text.as_deref(), Some("checkout"));
        assert_eq!(f.page, 2);
        let e = raw("prod", "", "", "").parse().expect_err("bad tier");
        assert!(e.message.contains("dev, test, staging, production"), "{e}");
        let e = raw("", "k8s", "", "").parse().expect_err("bad platform");
        assert!(e.message.contains("kubernetes, vm"), "{e}");
        assert!(raw("", "", "x", "").parse().is_err());
        assert!(raw("", "", "", "0").parse().is_err());
        assert!(raw("", "", "", "-1").parse().is_err());
    }
}
