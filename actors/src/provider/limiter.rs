//! One provider's rate limiter, shared by every run of the server: a FIFO concurrency cap, then the per-minute buckets and any 429 pause.
//!
//! Several processes on one PostgreSQL database share each provider's limits by dividing them
//! ([`Limiter::share`]): every process takes an equal part of the concurrency and of the
//! per-minute budgets, re-divided whenever the number of live processes changes. Why a share
//! rather than one bucket row in the database: a call then waits on no database round trip,
//! a process that dies frees its part when its row expires (a row of slots would keep a dead
//! process's slots taken until someone cleaned them up), and the parts never sum to more than
//! the limit. The price: a busy process cannot borrow an idle one's part.

use super::{notify, Events, ProviderEvent};
use crate::clock::now;
use crate::metrics::Metrics;
use rummy_core::config::ProviderLimits;
use rummy_provider::limits::{RateLimits, Wait, WaitCause};
use rummy_provider::time::Millis;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, TryAcquireError};

/// The limiter of one provider (and its one key).
pub(crate) struct Limiter {
    provider: &'static str,
    /// The limits configured for the whole server.
    limits: ProviderLimits,
    /// This process's part of the concurrency now (all of it, unless processes share it).
    concurrency: std::sync::atomic::AtomicUsize,
    /// How many processes the limits are divided among now.
    shared_by: std::sync::atomic::AtomicUsize,
    /// Permits to take out of circulation as they come back (a share that shrank while they
    /// were in use).
    debt: Arc<std::sync::atomic::AtomicUsize>,
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

/// The right to have one request in flight; dropping it lets the next waiter go (or, when the
/// process's share shrank meanwhile, takes the permit out of circulation).
pub(crate) struct Slot {
    permit: Option<OwnedSemaphorePermit>,
    debt: Arc<std::sync::atomic::AtomicUsize>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        use std::sync::atomic::Ordering;
        let owed = self
            .debt
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| d.checked_sub(1));
        if let (Ok(_), Some(permit)) = (owed, self.permit.take()) {
            permit.forget();
        }
    }
}

impl Limiter {
    /// A limiter for `provider` with these limits.
    pub fn new(provider: &'static str, limits: ProviderLimits, metrics: Arc<Metrics>) -> Limiter {
        let concurrency = limits.concurrency.max(1);
        Limiter {
            metrics,
            provider,
            concurrency: concurrency.into(),
            shared_by: 1.into(),
            debt: Arc::default(),
            permits: Arc::new(Semaphore::new(concurrency)),
            rates: Mutex::new(RateLimits::new(limits.rpm, limits.tpm, now())),
            limits,
        }
    }

    /// Takes this process's part of the limits when `processes` processes share them: the
    /// concurrency and the per-minute budgets divided evenly (at least one request in flight
    /// and one a minute each, so with more processes than the concurrency allows the parts
    /// sum to one per process). With one process, all of them.
    pub fn share(&self, processes: usize) {
        use std::sync::atomic::Ordering;
        let n = processes.max(1);
        if self.shared_by.swap(n, Ordering::AcqRel) == n {
            return;
        }
        let target = (self.limits.concurrency.max(1) / n).max(1);
        let current = self.concurrency.swap(target, Ordering::AcqRel);
        if target > current {
            let mut add = target - current;
            // Permits still owed are simply not taken out after all.
            let _ = self
                .debt
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |d| {
                    let paid = d.min(add);
                    add -= paid;
                    Some(d - paid)
                });
            self.permits.add_permits(add);
        } else if target < current {
            let remove = current - target;
            let forgotten = self.permits.forget_permits(remove);
            self.debt.fetch_add(remove - forgotten, Ordering::AcqRel);
        }
        let part =
            |limit: Option<u32>| limit.map(|l| (l / u32::try_from(n).unwrap_or(u32::MAX)).max(1));
        *self.rates() = RateLimits::new(part(self.limits.rpm), part(self.limits.tpm), now());
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
                        self.provider,
                        self.concurrency.load(std::sync::atomic::Ordering::Acquire)
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
        Some(Slot {
            permit: Some(permit),
            debt: Arc::clone(&self.debt),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn slot(limiter: &Limiter) -> Slot {
        Slot {
            permit: Some(Arc::clone(&limiter.permits).try_acquire_owned().unwrap()),
            debt: Arc::clone(&limiter.debt),
        }
    }

    /// Shared among processes, the concurrency is divided; a share that shrinks while requests
    /// are in flight takes their permits out as they come back, and one that grows gives them
    /// back.
    #[test]
    fn a_process_takes_its_share_of_the_concurrency() {
        let limits = ProviderLimits {
            concurrency: 8,
            rpm: Some(60),
            tpm: None,
        };
        let limiter = Limiter::new("openai", limits, Arc::new(Metrics::new().unwrap()));
        limiter.share(2);
        assert_eq!(limiter.permits.available_permits(), 4);
        let mut slots: Vec<Slot> = (0..4).map(|_| slot(&limiter)).collect();
        assert_eq!(limiter.permits.available_permits(), 0);
        // Four processes now: two of the four in flight are owed back.
        limiter.share(4);
        slots.truncate(2);
        assert_eq!(limiter.permits.available_permits(), 0);
        slots.clear();
        assert_eq!(limiter.permits.available_permits(), 2);
        // More processes than the concurrency: one each.
        limiter.share(20);
        assert_eq!(limiter.permits.available_permits(), 1);
        limiter.share(1);
        assert_eq!(limiter.permits.available_permits(), 8);
    }
}
