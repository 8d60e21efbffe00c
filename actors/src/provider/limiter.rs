//! One provider's rate limiter, shared by every run of the server: a FIFO concurrency cap, then the per-minute buckets and any 429 pause.

use super::{notify, Events, ProviderEvent};
use crate::clock::now;
use crate::metrics::Metrics;
use rummy_core::config::ProviderLimits;
use rummy_core::provider::limits::{RateLimits, Wait, WaitCause};
use rummy_core::time::Millis;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// The limiter of one provider (and its one key).
pub(crate) struct Limiter {
    provider: &'static str,
    concurrency: usize,
    /// Fair: waiters get permits in the order they asked, across all runs.
    permits: Arc<Semaphore>,
    /// Locked only to reserve or settle, never across an await.
    rates: Mutex<RateLimits>,
    /// Where waits are counted.
    metrics: Arc<Metrics>,
}

/// Counts a call as queued in the limiter while it lives.
struct Queued<'a> {
    gauge: &'a prometheus::IntGauge,
}

impl<'a> Queued<'a> {
    fn new(gauge: &'a prometheus::IntGauge) -> Self {
        gauge.inc();
        Queued { gauge }
    }
}

impl Drop for Queued<'_> {
    /// Also when the waiting call is dropped (cancelled).
    fn drop(&mut self) {
        self.gauge.dec();
    }
}

/// The right to have one request in flight; dropping it lets the next waiter go.
pub(crate) struct Slot {
    _permit: OwnedSemaphorePermit,
}

impl Limiter {
    /// A limiter for `provider` with these limits.
    pub fn new(provider: &'static str, limits: ProviderLimits, metrics: Arc<Metrics>) -> Limiter {
        let concurrency = limits.concurrency.max(1);
        Limiter {
            metrics,
            provider,
            concurrency,
            permits: Arc::new(Semaphore::new(concurrency)),
            rates: Mutex::new(RateLimits::new(limits.rpm, limits.tpm, now())),
        }
    }

    fn rates(&self) -> MutexGuard<'_, RateLimits> {
        // The guarded state is plain arithmetic; a panic elsewhere cannot leave it torn.
        self.rates.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a slot, then for the buckets and any pause; tells the caller why whenever it waits.
    ///
    /// `None` only when the limiter is closed, which this server never does.
    pub async fn acquire(&self, tokens: u64, events: &Events) -> Option<Slot> {
        let permit = match Arc::clone(&self.permits).try_acquire_owned() {
            Ok(permit) => permit,
            Err(TryAcquireError::Closed) => return None,
            Err(TryAcquireError::NoPermits) => {
                self.waited("concurrency");
                let queued = self.queue_gauge();
                let _queued = Queued::new(&queued);
                notify(
                    events,
                    ProviderEvent::Queued(format!(
                        "waiting for a free {} slot: all {} in use",
                        self.provider, self.concurrency
                    )),
                );
                Arc::clone(&self.permits).acquire_owned().await.ok()?
            }
        };
        let wait = self.rates().reserve(now(), tokens);
        if let Some(wait) = wait {
            self.waited("rate");
            notify(events, ProviderEvent::Queued(self.reason(wait)));
            let queued = self.queue_gauge();
            let _queued = Queued::new(&queued);
            tokio::time::sleep(Duration::from_millis(wait.ms)).await;
        }
        // A 429 may have paused the provider while this request waited.
        loop {
            let paused = self.rates().paused_for(now());
            if paused == 0 {
                break;
            }
            let wait = Wait {
                ms: paused,
                cause: WaitCause::RetryAfter,
            };
            self.waited("retry_after");
            notify(events, ProviderEvent::Queued(self.reason(wait)));
            let queued = self.queue_gauge();
            let _queued = Queued::new(&queued);
            tokio::time::sleep(Duration::from_millis(paused)).await;
        }
        Some(Slot { _permit: permit })
    }

    /// Holds every request of this provider for `ms` (a 429's `Retry-After`, which the caller
    /// has held to `RUMMY_RETRY_CAP_MS`).
    pub fn pause(&self, ms: u64) {
        let until = Millis(
            now()
                .0
                .saturating_add(i64::try_from(ms).unwrap_or(i64::MAX)),
        );
        self.rates().pause_until(until);
    }

    /// Corrects the tokens-per-minute bucket with what a request really used.
    pub fn settle(&self, estimated: u64, actual: u64) {
        self.rates().settle(now(), estimated, actual);
    }

    fn queue_gauge(&self) -> prometheus::IntGauge {
        self.metrics
            .limiter_queued
            .with_label_values(&[self.provider])
    }

    fn waited(&self, why: &str) {
        self.metrics
            .limiter_waits
            .with_label_values(&[self.provider, why])
            .inc();
    }

    fn reason(&self, wait: Wait) -> String {
        let why = match wait.cause {
            WaitCause::RequestsPerMinute => "requests-per-minute limit reached",
            WaitCause::TokensPerMinute => "tokens-per-minute limit reached",
            WaitCause::RetryAfter => "the provider asked to slow down (429)",
        };
        format!("{}: {why}; waiting {} ms", self.provider, wait.ms)
    }
}
