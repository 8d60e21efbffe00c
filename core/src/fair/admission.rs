//! Which queued run takes the next place among the runs in flight: the book the admission
//! actor keeps, as plain data.
//!
//! A run counts while a loop of it runs — not while it waits on a person at 202, nor while it
//! is queued. A new loop over a limit waits, and so does a loop going on after a person
//! answered it, before its next model call. Waiters are taken round-robin by the user who
//! started their run — the user served longest ago (or never) first — and, within a user, in
//! the order they began waiting (`since`, then arrival): one user's backlog never holds another
//! user's run behind all of it. Every pass admits them in that order while their limits allow.
//! Each limit — a project's runs, a user's runs, a project's cost ceiling — has its own line:
//! a waiter's `position` is its place among the runs waiting for the same limit, in that order.

use rummy_provider::time::Millis;
use rummy_store::ids::{ProjectId, RunId};
use serde::Serialize;
use std::collections::{HashMap, HashSet};

/// Why a run has not started its next loop, as `queued.reason` in `run/state` and `getRun`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueReason {
    /// Its next loop waits behind the run's own running loop.
    Loop,
    /// The project's or the user's runs in flight are at their limit.
    RunsLimit,
    /// The project spent its cost ceiling for the period.
    CostCeiling,
}

impl QueueReason {
    /// Every reason, in the order the protocol lists them.
    pub const ALL: [QueueReason; 3] = [
        QueueReason::Loop,
        QueueReason::RunsLimit,
        QueueReason::CostCeiling,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            QueueReason::Loop => "loop",
            QueueReason::RunsLimit => "runs_limit",
            QueueReason::CostCeiling => "cost_ceiling",
        }
    }
}

/// `queued` as clients see it: why, and the 1-based place in that line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Queued {
    /// Why the run waits.
    pub reason: QueueReason,
    /// Its place among the runs waiting for the same limit (for `loop`: how many of the run's
    /// own loops are queued).
    pub position: u32,
}

/// The runs-in-flight limits (`RUMMY_MAX_RUNS_PER_USER`, `RUMMY_MAX_RUNS_PER_PROJECT`); `None`
/// is unlimited.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunLimits {
    /// Runs in flight a user may have (runs started without a token have no user).
    pub per_user: Option<u32>,
    /// Runs in flight a project may have.
    pub per_project: Option<u32>,
}

impl RunLimits {
    /// Whether any runs limit is set, so runs in flight must be counted.
    pub fn any(&self) -> bool {
        self.per_user.is_some() || self.per_project.is_some()
    }
}

/// A run asking for a place for its next loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ask {
    /// The run.
    pub run_id: RunId,
    /// Its project.
    pub project_id: ProjectId,
    /// Who started it, when a token named them.
    pub user: Option<String>,
    /// When it began waiting (now for a new ask; what was stored, after a restart).
    pub since: Millis,
    /// A loop going on after a person answered it (not a new loop): a runs limit holds it
    /// until a place frees, a cost ceiling does not.
    pub going_on: bool,
}

/// One limit, with its own line of waiters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Limit {
    Cost(ProjectId),
    Project(ProjectId),
    User(String),
}

impl Limit {
    fn reason(&self) -> QueueReason {
        match self {
            Limit::Cost(_) => QueueReason::CostCeiling,
            Limit::Project(_) | Limit::User(_) => QueueReason::RunsLimit,
        }
    }
}

#[derive(Debug)]
struct Waiter {
    ask: Ask,
    arrival: u64,
    queued: Option<Queued>,
}

/// What a pass decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pass {
    /// Runs that got a place, in the order they got it.
    pub admitted: Vec<RunId>,
    /// Runs that wait for the first time or for another reason than before, with their
    /// `queued` (a place that only moved up is not announced).
    pub announce: Vec<(RunId, Queued)>,
}

/// The places taken and the runs waiting for one.
#[derive(Debug, Default)]
pub struct Book {
    limits: RunLimits,
    /// Runs in flight: their project and user (counted only when a runs limit is set).
    holders: HashMap<RunId, (ProjectId, Option<String>)>,
    per_project: HashMap<ProjectId, u32>,
    per_user: HashMap<String, u32>,
    /// In the order they began waiting.
    waiting: Vec<Waiter>,
    arrivals: u64,
    /// When each user (`None`: runs started without a token) was last given a place, as a
    /// count of places given: kept while the user has a run waiting or in flight.
    served: HashMap<Option<String>, u64>,
    serves: u64,
}

impl Book {
    /// An empty book under `limits`.
    pub fn new(limits: RunLimits) -> Book {
        Book {
            limits,
            ..Book::default()
        }
    }

    /// Whether `run_id` holds a place.
    pub fn holds(&self, run_id: RunId) -> bool {
        self.holders.contains_key(&run_id)
    }

    /// Counts `run_id` as in flight without asking — a loop a restart found running — even over
    /// a limit. Nothing to count without a runs limit; a run already counted stays counted
    /// once.
    pub fn hold(&mut self, run_id: RunId, project_id: ProjectId, user: Option<String>) {
        if !self.limits.any() || self.holders.contains_key(&run_id) {
            return;
        }
        *self.per_project.entry(project_id).or_default() += 1;
        if let Some(user) = &user {
            *self.per_user.entry(user.clone()).or_default() += 1;
        }
        self.holders.insert(run_id, (project_id, user));
    }

    /// `run_id`'s loop no longer runs (it ended, or waits on a person): its place frees.
    /// Answers whether it held one.
    pub fn release(&mut self, run_id: RunId) -> bool {
        let Some((project_id, user)) = self.holders.remove(&run_id) else {
            return false;
        };
        decrement(&mut self.per_project, &project_id);
        if let Some(user) = user {
            decrement(&mut self.per_user, &user);
        }
        true
    }

    /// Adds a waiter in the order it began waiting; a run already waiting keeps its place.
    pub fn wait(&mut self, ask: Ask) {
        if self.is_waiting(ask.run_id) {
            return;
        }
        self.arrivals += 1;
        let arrival = self.arrivals;
        let at = self
            .waiting
            .iter()
            .position(|w| (w.ask.since, w.arrival) > (ask.since, arrival))
            .unwrap_or(self.waiting.len());
        self.waiting.insert(
            at,
            Waiter {
                ask,
                arrival,
                queued: None,
            },
        );
    }

    /// Takes `run_id` out of the line (its loop was cancelled); answers whether it waited.
    pub fn withdraw(&mut self, run_id: RunId) -> bool {
        let before = self.waiting.len();
        self.waiting.retain(|w| w.ask.run_id != run_id);
        self.waiting.len() != before
    }

    /// Admits the waiters, in round-robin order ([`Book::rotation`]), whose limits allow; the
    /// others get their place in the line of the limit that holds them (a cost ceiling first,
    /// then the project's runs, then the user's). `over` are the projects at or over their cost
    /// ceiling.
    pub fn pass(&mut self, over: &HashSet<ProjectId>) -> Pass {
        let mut pass = Pass::default();
        let mut lines: HashMap<Limit, u32> = HashMap::new();
        let order = self.rotation();
        let mut slots: Vec<Option<Waiter>> = std::mem::take(&mut self.waiting)
            .into_iter()
            .map(Some)
            .collect();
        for at in order {
            let Some(mut waiter) = slots.get_mut(at).and_then(Option::take) else {
                continue;
            };
            let Some(limit) = self.blocker(&waiter.ask, over) else {
                let Ask {
                    run_id,
                    project_id,
                    user,
                    ..
                } = waiter.ask;
                self.serves += 1;
                self.served.insert(user.clone(), self.serves);
                self.hold(run_id, project_id, user);
                pass.admitted.push(run_id);
                continue;
            };
            let line = lines.entry(limit.clone()).or_default();
            *line += 1;
            let queued = Queued {
                reason: limit.reason(),
                position: *line,
            };
            if waiter.queued.map(|q| q.reason) != Some(queued.reason) {
                pass.announce.push((waiter.ask.run_id, queued));
            }
            waiter.queued = Some(queued);
            slots[at] = Some(waiter);
        }
        // The kept waiters stay in the order they began waiting.
        self.waiting = slots.into_iter().flatten().collect();
        self.forget_idle_users();
        pass
    }

    /// The waiters' indexes in the order a pass takes them: one of each user's in turn, the
    /// user served longest ago (or never) first — ties to the user whose first waiter began
    /// waiting first — and each user's own in the order they began waiting.
    fn rotation(&self) -> Vec<usize> {
        let mut lines: Vec<(&Option<String>, Vec<usize>)> = Vec::new();
        for (at, waiter) in self.waiting.iter().enumerate() {
            match lines.iter_mut().find(|(user, _)| **user == waiter.ask.user) {
                Some((_, line)) => line.push(at),
                None => lines.push((&waiter.ask.user, vec![at])),
            }
        }
        // `lines` is in the order of each user's first waiter; a stable sort keeps that order
        // among users served alike.
        lines.sort_by_key(|(user, _)| self.served.get(*user).copied().unwrap_or(0));
        let longest = lines.iter().map(|(_, line)| line.len()).max().unwrap_or(0);
        (0..longest)
            .flat_map(|round| {
                lines
                    .iter()
                    .filter_map(move |(_, line)| line.get(round).copied())
            })
            .collect()
    }

    /// Forgets when users with nothing waiting or in flight were served: the next time they
    /// ask, they are first in turn (they hold no place the others lack).
    fn forget_idle_users(&mut self) {
        let (waiting, holders) = (&self.waiting, &self.holders);
        self.served.retain(|user, _| {
            waiting.iter().any(|w| w.ask.user == *user) || holders.values().any(|(_, u)| u == user)
        });
    }

    /// The limit that keeps `ask` waiting, if any.
    fn blocker(&self, ask: &Ask, over: &HashSet<ProjectId>) -> Option<Limit> {
        if !ask.going_on && over.contains(&ask.project_id) {
            return Some(Limit::Cost(ask.project_id));
        }
        let count = |n: Option<&u32>| n.copied().unwrap_or(0);
        if let Some(max) = self.limits.per_project {
            if count(self.per_project.get(&ask.project_id)) >= max {
                return Some(Limit::Project(ask.project_id));
            }
        }
        match (&ask.user, self.limits.per_user) {
            (Some(user), Some(max)) if count(self.per_user.get(user)) >= max => {
                Some(Limit::User(user.clone()))
            }
            _ => None,
        }
    }

    /// Why `run_id` waits and where, if it waits (as of the last pass).
    pub fn queued(&self, run_id: RunId) -> Option<Queued> {
        self.waiting
            .iter()
            .find(|w| w.ask.run_id == run_id)
            .and_then(|w| w.queued)
    }

    /// Whether `run_id` waits for a place.
    pub fn is_waiting(&self, run_id: RunId) -> bool {
        self.waiting.iter().any(|w| w.ask.run_id == run_id)
    }

    /// The projects of the waiting new loops (whose cost ceilings a pass must know).
    pub fn waiting_projects(&self) -> HashSet<ProjectId> {
        self.waiting
            .iter()
            .filter(|w| !w.ask.going_on)
            .map(|w| w.ask.project_id)
            .collect()
    }

    /// The projects whose waiters are held by their cost ceiling (as of the last pass).
    pub fn held_by_cost(&self) -> HashSet<ProjectId> {
        self.waiting
            .iter()
            .filter(|w| {
                w.queued
                    .is_some_and(|q| q.reason == QueueReason::CostCeiling)
            })
            .map(|w| w.ask.project_id)
            .collect()
    }
}

fn decrement<K: std::hash::Hash + Eq>(counts: &mut HashMap<K, u32>, key: &K) {
    if let Some(n) = counts.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            counts.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ask(run_id: i32, project_id: i32, user: Option<&str>, since: i64) -> Ask {
        Ask {
            run_id: RunId(run_id),
            project_id: ProjectId(project_id),
            user: user.map(str::to_owned),
            since: Millis(since),
            going_on: false,
        }
    }

    fn queued(reason: QueueReason, position: u32) -> Queued {
        Queued { reason, position }
    }

    const RUNS: QueueReason = QueueReason::RunsLimit;
    const COST: QueueReason = QueueReason::CostCeiling;

    fn none() -> HashSet<ProjectId> {
        HashSet::new()
    }

    fn runs(ids: &[i32]) -> Vec<RunId> {
        ids.iter().copied().map(RunId).collect()
    }

    fn projects(ids: &[i32]) -> HashSet<ProjectId> {
        ids.iter().copied().map(ProjectId).collect()
    }

    /// Under a project limit of 1, later runs wait in line, each told its place once; the
    /// first place that frees goes to the first in line, and the others move up silently.
    #[test]
    fn a_project_limit_admits_in_the_order_runs_began_waiting() {
        let mut book = Book::new(RunLimits {
            per_project: Some(1),
            per_user: None,
        });
        book.wait(ask(1, 7, None, 10));
        assert_eq!(
            book.pass(&none()),
            Pass {
                admitted: runs(&[1]),
                announce: vec![]
            }
        );
        book.wait(ask(2, 7, None, 20));
        book.wait(ask(3, 7, None, 30));
        book.wait(ask(4, 8, None, 40));
        assert_eq!(
            book.pass(&none()),
            Pass {
                admitted: runs(&[4]),
                announce: vec![(RunId(2), queued(RUNS, 1)), (RunId(3), queued(RUNS, 2))],
            }
        );
        assert!(book.release(RunId(1)));
        assert_eq!(
            book.pass(&none()),
            Pass {
                admitted: runs(&[2]),
                announce: vec![]
            }
        );
        assert_eq!(book.queued(RunId(3)), Some(queued(RUNS, 1)));
        assert!(!book.release(RunId(1)), "a place is freed once");
    }

    /// A run waiting on a person frees its place; when the person answers, its loop goes on
    /// only once a place frees again (it waits like any other, in its user's turn), and a cost
    /// ceiling does not hold it.
    #[test]
    fn a_loop_going_on_waits_for_a_place_but_not_for_a_ceiling() {
        let mut book = Book::new(RunLimits {
            per_project: Some(1),
            per_user: None,
        });
        book.wait(ask(1, 7, Some("alice"), 1));
        assert_eq!(book.pass(&none()).admitted, runs(&[1]));
        book.release(RunId(1)); // waits at 202
        book.wait(ask(2, 7, Some("bob"), 5));
        assert_eq!(book.pass(&none()).admitted, runs(&[2]));
        book.wait(Ask {
            going_on: true,
            ..ask(1, 7, Some("alice"), 6)
        }); // the proposal was accepted: no place is free
        assert_eq!(
            book.pass(&projects(&[7])),
            Pass {
                admitted: runs(&[]),
                announce: vec![(RunId(1), queued(RUNS, 1))],
            }
        );
        assert_eq!(book.waiting_projects(), none(), "no ceiling to read for it");
        book.release(RunId(2));
        assert_eq!(book.pass(&projects(&[7])).admitted, runs(&[1]));
        assert!(book.holds(RunId(1)));
    }

    /// One user's eight runs queued first do not hold another user's run behind them: under a
    /// project limit of 1, the other user's run takes the next place, then the first user's
    /// start in the order they began waiting.
    #[test]
    fn one_users_backlog_does_not_hold_another_users_run() {
        let mut book = Book::new(RunLimits {
            per_project: Some(1),
            per_user: None,
        });
        for run in 1..=8 {
            book.wait(ask(run, 7, Some("alice"), i64::from(run)));
        }
        assert_eq!(book.pass(&none()).admitted, runs(&[1]));
        book.wait(ask(9, 7, Some("bob"), 100));
        assert_eq!(
            book.pass(&none()),
            Pass {
                admitted: runs(&[]),
                announce: vec![(RunId(9), queued(RUNS, 1))],
            }
        );
        let mut started = Vec::new();
        for running in [1, 9, 2, 3, 4, 5, 6, 7] {
            book.release(RunId(running));
            started.extend(book.pass(&none()).admitted);
        }
        assert_eq!(started, runs(&[9, 2, 3, 4, 5, 6, 7, 8]));
    }

    /// Places freed together go one to each user in turn, the user served longest ago first;
    /// runs without a user take their turn as one more user.
    #[test]
    fn places_freed_together_go_round_the_users() {
        let mut book = Book::new(RunLimits {
            per_project: Some(3),
            per_user: None,
        });
        book.wait(ask(1, 7, Some("bob"), 1));
        book.wait(ask(2, 7, Some("alice"), 2));
        book.wait(ask(3, 7, Some("alice"), 3));
        assert_eq!(book.pass(&none()).admitted, runs(&[1, 2, 3]));
        for (run, user, since) in [
            (4, Some("alice"), 10),
            (5, Some("alice"), 11),
            (6, Some("bob"), 12),
            (7, None, 13),
            (8, Some("bob"), 14),
        ] {
            book.wait(ask(run, 7, user, since));
        }
        book.pass(&none());
        let places: Vec<_> = [4, 5, 6, 7, 8]
            .map(|r| book.queued(RunId(r)).map(|q| q.position))
            .to_vec();
        assert_eq!(places, vec![Some(3), Some(5), Some(2), Some(1), Some(4)]);
        for run in [1, 2, 3] {
            book.release(RunId(run));
        }
        assert_eq!(book.pass(&none()).admitted, runs(&[7, 6, 4]));
    }

    /// A user's limit holds only that user's runs: another user's run (or one without a
    /// user) passes, and each user has a line of their own.
    #[test]
    fn a_user_limit_holds_only_that_users_runs() {
        let mut book = Book::new(RunLimits {
            per_user: Some(1),
            per_project: None,
        });
        book.hold(RunId(1), ProjectId(7), Some("alice".into()));
        book.wait(ask(2, 7, Some("alice"), 1));
        book.wait(ask(3, 7, Some("bob"), 2));
        book.wait(ask(4, 8, Some("alice"), 3));
        book.wait(ask(5, 7, None, 4));
        assert_eq!(
            book.pass(&none()),
            Pass {
                admitted: runs(&[3, 5]),
                announce: vec![(RunId(2), queued(RUNS, 1)), (RunId(4), queued(RUNS, 2))],
            }
        );
        book.release(RunId(1));
        assert_eq!(book.pass(&none()).admitted, runs(&[2]));
    }

    /// A waiter that leaves the line (its loop cancelled) lets the next move up; it is no
    /// longer counted anywhere.
    #[test]
    fn a_withdrawn_waiter_leaves_the_line() {
        let mut book = Book::new(RunLimits {
            per_project: Some(1),
            per_user: None,
        });
        book.hold(RunId(1), ProjectId(7), None);
        book.wait(ask(2, 7, None, 1));
        book.wait(ask(3, 7, None, 2));
        book.pass(&none());
        assert!(book.withdraw(RunId(2)));
        assert!(!book.withdraw(RunId(2)));
        book.pass(&none());
        assert_eq!(book.queued(RunId(3)), Some(queued(RUNS, 1)));
        assert!(!book.is_waiting(RunId(2)));
        book.release(RunId(1));
        assert_eq!(book.pass(&none()).admitted, runs(&[3]));
    }

    /// Waiters restored after a restart keep the order they began waiting in, ahead of runs
    /// that asked later but arrived first.
    #[test]
    fn waiters_are_ordered_by_when_they_began_waiting() {
        let mut book = Book::new(RunLimits {
            per_project: Some(1),
            per_user: None,
        });
        book.hold(RunId(9), ProjectId(7), None);
        book.wait(ask(3, 7, None, 300));
        book.wait(ask(1, 7, None, 100));
        book.wait(ask(2, 7, None, 100));
        book.wait(ask(1, 7, None, 50)); // already waiting: keeps its place
        book.pass(&none());
        let places: Vec<_> = [1, 2, 3]
            .map(|r| book.queued(RunId(r)).map(|q| q.position))
            .to_vec();
        assert_eq!(places, vec![Some(1), Some(2), Some(3)]);
    }

    /// A project at its cost ceiling holds its new loops whatever the places; once it is not
    /// (the ceiling raised, a new period), they start; the reason changing is announced.
    #[test]
    fn a_cost_ceiling_holds_new_loops_until_lifted() {
        let mut book = Book::new(RunLimits {
            per_project: Some(1),
            per_user: None,
        });
        book.hold(RunId(1), ProjectId(7), None);
        book.wait(ask(2, 7, None, 1));
        book.wait(ask(3, 8, None, 2));
        let over = projects(&[7, 8]);
        assert_eq!(
            book.pass(&over).announce,
            vec![(RunId(2), queued(COST, 1)), (RunId(3), queued(COST, 1))]
        );
        assert_eq!(book.held_by_cost(), projects(&[7, 8]));
        assert_eq!(
            book.pass(&HashSet::new()),
            Pass {
                admitted: runs(&[3]),
                announce: vec![(RunId(2), queued(RUNS, 1))],
            }
        );
    }

    /// Without runs limits nothing is counted: a waiter passes unless its project is over
    /// its ceiling, and releases are no-ops.
    #[test]
    fn without_runs_limits_only_a_ceiling_holds() {
        let mut book = Book::new(RunLimits::default());
        book.hold(RunId(1), ProjectId(7), Some("alice".into()));
        assert!(!book.holds(RunId(1)));
        book.wait(ask(2, 7, Some("alice"), 1));
        book.wait(ask(3, 8, None, 2));
        assert_eq!(
            book.pass(&projects(&[8])),
            Pass {
                admitted: runs(&[2]),
                announce: vec![(RunId(3), queued(COST, 1))],
            }
        );
        assert!(!book.release(RunId(2)));
        assert_eq!(book.waiting_projects(), projects(&[8]));
    }
}
