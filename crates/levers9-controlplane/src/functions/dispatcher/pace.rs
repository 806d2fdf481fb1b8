//! How fast a stub's inputs go, and what follows for its containers.
//!
//! The dispatcher times each input from the moment it is sent to a
//! container to its end (its sojourn: the round trip, any wait in the
//! runner's queue, the run). Two decisions follow:
//!
//! - **Buffer.** A warm container is sent up to about [`BUFFERED_WORK`] of
//!   inputs beyond its `concurrency`, which wait in its runner's queue, so
//!   a fast function does not sit idle for a round trip between inputs. A
//!   slow function gets no buffer: an input waiting behind it could run
//!   sooner in another container.
//! - **Scale.** By Little's law the warm containers finish inputs at
//!   (inputs they hold) / (sojourn) a second. A queue they finish before a
//!   new container could be ready gets no new container: starting one costs
//!   CPU and helps nobody. A backlog that outlasts two container starts
//!   gets one more container at a time all the same, so a long stream of
//!   fast inputs still spreads out.

use std::time::{Duration, Instant};

/// About how much work a container holds beyond what it runs.
const BUFFERED_WORK: Duration = Duration::from_millis(50);
/// Inputs a container holds beyond its concurrency, at most.
const MAX_BUFFERED: usize = 16;
/// Weight of the newest sample in the running averages.
const SMOOTHING: f64 = 0.2;
/// What a container start is taken to cost before one was timed.
const FIRST_START_GUESS: Duration = Duration::from_secs(1);

/// An exponentially weighted average of durations.
#[derive(Debug, Clone, Copy, Default)]
struct Average(Option<Duration>);

impl Average {
    fn add(&mut self, sample: Duration) {
        self.0 = Some(match self.0 {
            None => sample,
            Some(mean) => mean.mul_f64(1.0 - SMOOTHING) + sample.mul_f64(SMOOTHING),
        });
    }
}

/// The pace of one stub's inputs.
#[derive(Debug, Default)]
pub(super) struct Pace {
    /// Sent-to-ended time of its inputs.
    sojourn: Average,
    /// Since when its queue has waited for a slot without a break.
    backlog_since: Option<Instant>,
}

impl Pace {
    /// An input sent at `sent` ended (in any state but lost).
    pub(super) fn ended(&mut self, sent: Instant) {
        self.sojourn.add(sent.elapsed());
    }

    /// Inputs a warm container with `concurrency` slots is sent beyond
    /// them: none until an input was timed.
    pub(super) fn buffer(&self, concurrency: usize) -> usize {
        let Some(sojourn) = self.sojourn.0 else {
            return 0;
        };
        let per_slot = BUFFERED_WORK.as_secs_f64() / sojourn.as_secs_f64().max(1e-6);
        ((concurrency as f64 * per_slot) as usize).min(MAX_BUFFERED)
    }

    /// How many of the `wanted` containers to start for `queued` inputs
    /// that no slot takes, while warm containers hold `held` inputs and a
    /// container takes `start` to be ready.
    pub(super) fn worth_starting(
        &mut self,
        wanted: usize,
        queued: usize,
        held: usize,
        start: Duration,
    ) -> usize {
        self.worth_starting_at(Instant::now(), wanted, queued, held, start)
    }

    /// [`Pace::worth_starting`] at the instant `now` (the tests' clock).
    fn worth_starting_at(
        &mut self,
        now: Instant,
        wanted: usize,
        queued: usize,
        held: usize,
        start: Duration,
    ) -> usize {
        if queued == 0 {
            self.backlog_since = None;
            return 0;
        }
        let since = *self.backlog_since.get_or_insert(now);
        let Some(sojourn) = self.sojourn.0.filter(|_| held > 0) else {
            return wanted;
        };
        let per_second = held as f64 / sojourn.as_secs_f64().max(1e-6);
        if queued as f64 / per_second > start.as_secs_f64() {
            return wanted;
        }
        if now.duration_since(since) > start * 2 {
            self.backlog_since = Some(now);
            return wanted.min(1);
        }
        0
    }
}

/// How long a container takes from being asked for to its runner's hello,
/// over every stub: mostly the runtime's and the runner's start.
#[derive(Debug, Default)]
pub(super) struct StartTime(Average);

impl StartTime {
    /// A container asked for at `requested` is ready now.
    pub(super) fn ready(&mut self, requested: Instant) {
        self.0.add(requested.elapsed());
    }

    /// The expected start time.
    pub(super) fn expected(&self) -> Duration {
        self.0 .0.unwrap_or(FIRST_START_GUESS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timed(sojourn: Duration) -> Pace {
        Pace {
            sojourn: Average(Some(sojourn)),
            backlog_since: None,
        }
    }

    #[test]
    fn fast_inputs_get_a_buffer_and_slow_ones_none() {
        assert_eq!(Pace::default().buffer(1), 0, "nothing timed yet");
        assert_eq!(timed(Duration::from_millis(5)).buffer(1), 10);
        assert_eq!(timed(Duration::from_micros(100)).buffer(1), MAX_BUFFERED);
        assert_eq!(timed(Duration::from_millis(60)).buffer(1), 0);
        assert_eq!(timed(Duration::from_millis(20)).buffer(4), 10);
    }

    #[test]
    fn a_queue_the_warm_containers_finish_first_gets_no_container() {
        let start = Duration::from_millis(500);
        // 100 held, 10 ms each: 10,000 a second; 900 queued take 90 ms.
        let mut fast = timed(Duration::from_millis(10));
        assert_eq!(fast.worth_starting(8, 900, 100, start), 0);
        // One held, 1 s each: 9 queued take 9 s.
        let mut slow = timed(Duration::from_secs(1));
        assert_eq!(slow.worth_starting(8, 9, 1, start), 8);
        // Untimed, or nothing held: the queue decides alone.
        assert_eq!(Pace::default().worth_starting(3, 900, 100, start), 3);
        assert_eq!(fast.worth_starting(3, 900, 0, start), 3);
    }

    #[test]
    fn a_backlog_that_outlasts_two_starts_gets_one_container_at_a_time() {
        // On a clock of the test's own: a machine that stalls between two
        // calls cannot make them further apart than written.
        let start = Duration::from_millis(20);
        let t0 = Instant::now();
        let later = t0 + start * 3;
        let mut pace = timed(Duration::from_millis(10));
        assert_eq!(pace.worth_starting_at(t0, 8, 1, 100, start), 0);
        assert_eq!(pace.worth_starting_at(later, 8, 1, 100, start), 1);
        assert_eq!(
            pace.worth_starting_at(later + start, 8, 1, 100, start),
            0,
            "the clock starts again"
        );
        assert_eq!(pace.worth_starting_at(later + start, 8, 0, 100, start), 0);
        assert_eq!(
            pace.worth_starting_at(later + start * 4, 8, 1, 100, start),
            0,
            "an empty queue ended the backlog"
        );
    }

    #[test]
    fn start_times_are_averaged_with_a_guess_before_the_first() {
        let mut starts = StartTime::default();
        assert_eq!(starts.expected(), FIRST_START_GUESS);
        starts.ready(Instant::now() - Duration::from_millis(300));
        let first = starts.expected();
        // Averaged with the guess it would be 860 ms; the bound leaves a
        // loaded machine half a second between the two lines.
        assert!(
            first >= Duration::from_millis(300) && first < Duration::from_millis(800),
            "{first:?}"
        );
    }
}
