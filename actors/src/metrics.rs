//! The server's metrics (`GET /metrics`, Prometheus text format): counters and histograms the
//! actors bump as things happen, and gauges read when a scrape asks ([`Metrics::render`]).
//!
//! One registry per server, carried by its [`Store`](crate::store::Store) handle — which every
//! actor already holds — rather than the process-wide default registry, so two servers in one
//! process (the tests) count apart. Names follow `rummy_<thing>_<unit>`, `_total` for counters.
//! What is cheap to read when asked (runs by status, queued loops, the WAL's size, connections,
//! the notification backlog) is read at scrape time and costs a turn nothing; a turn pays a few
//! atomic additions and, for labelled series, a hashed look-up of its label values.

use prometheus::core::Collector;
use prometheus::{
    CounterVec, Encoder, Histogram, HistogramOpts, HistogramVec, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use rummy_provider::Usage;
use rummy_store::ids::ProjectId;
use std::time::Duration;

/// Buckets for durations from a millisecond to a few minutes (a model call may take that long).
const SECONDS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
    120.0, 300.0,
];

/// Buckets for a store commit: most take well under a millisecond, an fsync a few.
const COMMIT_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
];

/// Buckets for the units one store commit carries (at most 64, `store::MAX_GROUP`).
const GROUP_UNITS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0];

/// Every series the server exports, registered in its own registry.
pub struct Metrics {
    registry: Registry,
    /// One scrape at a time: each resets and sets the scrape-time gauges before encoding.
    scraping: std::sync::Mutex<()>,
    /// Turns that ended (ran to an end or paused on a proposal), by how: `continue`,
    /// `conclude`, `abandon`, `overflow`, `paused`, `failed`.
    pub turns: IntCounterVec,
    /// How long a turn took, from its start to its end or pause.
    pub turn_seconds: Histogram,
    /// Provider calls (each HTTP attempt), by provider, model and outcome (`ok` or the fault).
    pub provider_requests: IntCounterVec,
    /// From a provider call's start to the first streamed chunk of its answer.
    pub provider_first_token_seconds: HistogramVec,
    /// From a provider call's start to its end, whatever the outcome.
    pub provider_request_seconds: HistogramVec,
    /// Tokens sent to and received from models (`direction`: `in`, `out`), by provider, model
    /// and project id (`rummy_project_info` names the project).
    pub tokens: IntCounterVec,
    /// What the providers reported the calls cost, US dollars.
    pub cost: CounterVec,
    /// Calls waiting in a provider's limiter now.
    pub limiter_queued: IntGaugeVec,
    /// Times a call waited in a provider's limiter, by why (`concurrency`, `rate`, `retry_after`).
    pub limiter_waits: IntCounterVec,
    /// How long one group commit of the store's writer took (its units and the commit).
    pub commit_seconds: Histogram,
    /// Units of writing work per commit.
    pub group_units: Histogram,
    /// JSON-RPC messages over WebSockets (`direction`: `in`, `out`; answers and notifications out).
    pub ws_messages: IntCounterVec,
    /// Side tasks (summaries, re-ranking, consolidation, session state), by task and outcome.
    pub sidecar_tasks: IntCounterVec,
    // Read at scrape time.
    runs: IntGaugeVec,
    loops_queued: IntGauge,
    wal_bytes: IntGauge,
    connections: IntGauge,
    backlog_bytes: IntGauge,
    project_info: IntGaugeVec,
}

/// What a scrape reads from the server besides the counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Runs per status code.
    pub runs_by_status: Vec<(i32, i64)>,
    /// Loops waiting in the queue.
    pub loops_queued: i64,
    /// The write-ahead log's size on disk.
    pub wal_bytes: u64,
    /// WebSocket connections open.
    pub connections: usize,
    /// Notification bytes handed to sessions and not yet written to their connections.
    pub backlog_bytes: usize,
    /// Every project's id and name.
    pub projects: Vec<(ProjectId, String)>,
}

/// Registers `metric` in `registry` and hands it back.
fn register<M: Collector + Clone + 'static>(
    registry: &Registry,
    metric: M,
) -> prometheus::Result<M> {
    registry.register(Box::new(metric.clone()))?;
    Ok(metric)
}

fn counters(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntCounterVec> {
    register(r, IntCounterVec::new(Opts::new(name, help), labels)?)
}

fn gauges(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntGaugeVec> {
    register(r, IntGaugeVec::new(Opts::new(name, help), labels)?)
}

fn gauge(r: &Registry, name: &str, help: &str) -> prometheus::Result<IntGauge> {
    register(r, IntGauge::with_opts(Opts::new(name, help))?)
}

fn histogram(
    r: &Registry,
    name: &str,
    help: &str,
    buckets: &[f64],
) -> prometheus::Result<Histogram> {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(r, Histogram::with_opts(opts)?)
}

fn histograms(
    r: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
    buckets: &[f64],
) -> prometheus::Result<HistogramVec> {
    let opts = HistogramOpts::new(name, help).buckets(buckets.to_vec());
    register(r, HistogramVec::new(opts, labels)?)
}

impl Metrics {
    /// A registry of its own with every series at zero; `Err` only if a name were invalid.
    pub fn new() -> prometheus::Result<Metrics> {
        let r = Registry::new();
        let by_model = &["provider", "model"];
        Ok(Metrics {
            turns: counters(&r, "rummy_turns_total", "Turns that ended, by how they ended.", &["end"])?,
            turn_seconds: histogram(&r, "rummy_turn_duration_seconds", "A turn from its start to its end or pause.", SECONDS)?,
            provider_requests: counters(&r, "rummy_provider_requests_total", "Provider calls, by provider, model and outcome (ok or the failure's kind).", &["provider", "model", "outcome"])?,
            provider_first_token_seconds: histograms(&r, "rummy_provider_first_token_seconds", "A provider call's start to the first chunk of its streamed answer.", by_model, SECONDS)?,
            provider_request_seconds: histograms(&r, "rummy_provider_request_duration_seconds", "A provider call from its start to its end.", by_model, SECONDS)?,
            tokens: counters(&r, "rummy_tokens_total", "Tokens sent to (in) and received from (out) models, by provider, model and project id.", &["provider", "model", "project", "direction"])?,
            cost: register(&r, CounterVec::new(Opts::new("rummy_cost_dollars_total", "What the providers reported the calls cost, in US dollars, by provider, model and project id."), &["provider", "model", "project"])?)?,
            limiter_queued: gauges(&r, "rummy_limiter_queued_requests", "Calls waiting in a provider's limiter.", &["provider"])?,
            limiter_waits: counters(&r, "rummy_limiter_waits_total", "Times a call waited in a provider's limiter, by why.", &["provider", "reason"])?,
            commit_seconds: histogram(&r, "rummy_store_commit_duration_seconds", "One group commit of the store's writer, its units and the commit.", COMMIT_SECONDS)?,
            group_units: histogram(&r, "rummy_store_group_units", "Units of writing work per commit.", GROUP_UNITS)?,
            ws_messages: counters(&r, "rummy_websocket_messages_total", "JSON-RPC messages over WebSockets (in: from clients; out: answers and notifications).", &["direction"])?,
            sidecar_tasks: counters(&r, "rummy_sidecar_tasks_total", "Side tasks, by task and outcome.", &["task", "outcome"])?,
            runs: gauges(&r, "rummy_runs", "Runs, by status code.", &["status"])?,
            loops_queued: gauge(&r, "rummy_loops_queued", "Loops waiting in the queue.")?,
            wal_bytes: gauge(&r, "rummy_store_wal_bytes", "The SQLite write-ahead log's size on disk (0 on PostgreSQL).")?,
            connections: gauge(&r, "rummy_websocket_connections", "WebSocket connections open.")?,
            backlog_bytes: gauge(&r, "rummy_notification_backlog_bytes", "Notification bytes handed to sessions and not yet written to their connections.")?,
            project_info: gauges(&r, "rummy_project_info", "A project's id and name (always 1): join on project to name it.", &["project", "name"])?,
            registry: r,
            scraping: std::sync::Mutex::new(()),
        })
    }

    /// Counts a turn's end and its duration.
    pub fn turn_ended(&self, end: &str, took: Duration) {
        self.turns.with_label_values(&[end]).inc();
        self.turn_seconds.observe(took.as_secs_f64());
    }

    /// Counts one provider call's outcome and its durations.
    pub fn provider_call(
        &self,
        provider: &str,
        model: &str,
        outcome: &str,
        first_chunk: Option<Duration>,
        took: Duration,
    ) {
        let by_model = [provider, model];
        self.provider_requests
            .with_label_values(&[provider, model, outcome])
            .inc();
        if let Some(first) = first_chunk {
            self.provider_first_token_seconds
                .with_label_values(&by_model)
                .observe(first.as_secs_f64());
        }
        self.provider_request_seconds
            .with_label_values(&by_model)
            .observe(took.as_secs_f64());
    }

    /// Counts what one answered call used and cost, for the project it was made for.
    pub fn usage(&self, provider: &str, model: &str, project: ProjectId, usage: &Usage) {
        let project = project.0.to_string();
        let input = u64::try_from(usage.prompt_tokens).unwrap_or(0);
        let output = u64::try_from(usage.completion_tokens).unwrap_or(0);
        self.tokens
            .with_label_values(&[provider, model, &project, "in"])
            .inc_by(input);
        self.tokens
            .with_label_values(&[provider, model, &project, "out"])
            .inc_by(output);
        if usage.cost > 0.0 && usage.cost.is_finite() {
            self.cost
                .with_label_values(&[provider, model, &project])
                .inc_by(usage.cost);
        }
    }

    /// The registry's series in the Prometheus text format, with the scrape-time gauges set
    /// from `now`.
    pub fn render(&self, now: &Snapshot) -> String {
        let _one = self
            .scraping
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.runs.reset();
        for (status, count) in &now.runs_by_status {
            self.runs
                .with_label_values(&[&status.to_string()])
                .set(*count);
        }
        self.loops_queued.set(now.loops_queued);
        self.wal_bytes
            .set(i64::try_from(now.wal_bytes).unwrap_or(i64::MAX));
        self.connections
            .set(i64::try_from(now.connections).unwrap_or(i64::MAX));
        self.backlog_bytes
            .set(i64::try_from(now.backlog_bytes).unwrap_or(i64::MAX));
        self.project_info.reset();
        for (id, name) in &now.projects {
            self.project_info
                .with_label_values(&[&id.0.to_string(), name])
                .set(1);
        }
        let mut text = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut text) {
            tracing::error!(error = %e, "cannot encode the metrics");
        }
        String::from_utf8_lossy(&text).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every series registers under its name, and the export names each one.
    #[test]
    fn every_series_is_exported_by_name() {
        let metrics = Metrics::new().unwrap();
        metrics.turn_ended("conclude", Duration::from_millis(3));
        let text = metrics.render(&Snapshot {
            runs_by_status: vec![(200, 2)],
            projects: vec![(ProjectId(1), "web".into())],
            ..Snapshot::default()
        });
        assert!(
            text.contains("rummy_turns_total{end=\"conclude\"} 1\n"),
            "{text}"
        );
        assert!(text.contains("rummy_runs{status=\"200\"} 2\n"), "{text}");
        assert!(
            text.contains("rummy_project_info{name=\"web\",project=\"1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("rummy_turn_duration_seconds_count 1\n"),
            "{text}"
        );
    }
}
