//! N worker threads that live through every round of one mode, each owning
//! what it needs (its own connection, an engine handle, two folders). A
//! burst sends every worker its order and a barrier releases all N at once,
//! so the timed calls start together; cleanup orders are untimed.
//!
//! Each claim is timed by its own thread, from just after the barrier to its
//! answer; the burst's wall time runs from the earliest start to the latest
//! answer. Each thread also counts the CPU time it spent in the timed call
//! (`CLOCK_THREAD_CPUTIME_ID`): the client's share of a socket claim. A worker that fails reports its error instead of panicking, so
//! the bench stops with the reason rather than waiting on a barrier forever.

use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Barrier};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// One thread's part of a mode.
pub trait Worker: Send + 'static {
    /// The timed operation of round `round` (a prepare, or two durable writes).
    fn timed(&mut self, round: usize) -> Result<(), String>;
    /// Undoes round `round`'s operation, untimed.
    fn clean(&mut self, round: usize) -> Result<(), String>;
}

enum Order {
    Burst(usize),
    Clean(usize),
}

/// One timed call: when it started and ended, and the CPU time its thread used.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: Instant,
    end: Instant,
    cpu: Duration,
}

/// What one worker answers to an order: its span for a burst.
type Answer = Result<Option<Span>, String>;

/// The timings of one burst.
#[derive(Debug, Clone)]
pub struct Burst {
    /// Each claim's latency, from its thread's release to its answer.
    pub latencies: Vec<Duration>,
    /// From the earliest start to the latest answer.
    pub wall: Duration,
    /// The CPU time of the N threads in their timed calls, summed.
    pub cpu: Duration,
}

/// The threads of one mode.
#[derive(Debug)]
pub struct Crew {
    orders: Vec<Sender<Order>>,
    answers: Receiver<Answer>,
    threads: Vec<JoinHandle<()>>,
}

impl Crew {
    /// One thread per worker, waiting for orders.
    pub fn new<W: Worker>(workers: Vec<W>) -> Self {
        let barrier = Arc::new(Barrier::new(workers.len()));
        let (answer, answers) = channel();
        let mut orders = Vec::with_capacity(workers.len());
        let mut threads = Vec::with_capacity(workers.len());
        for worker in workers {
            let (order, inbox) = channel();
            let (barrier, answer) = (Arc::clone(&barrier), answer.clone());
            threads.push(std::thread::spawn(move || {
                serve(worker, &inbox, &barrier, &answer);
            }));
            orders.push(order);
        }
        Self {
            orders,
            answers,
            threads,
        }
    }

    /// Runs round `round` on every worker at once; panics with the first
    /// worker's error.
    pub fn burst(&self, round: usize) -> Burst {
        let spans: Vec<Span> = self
            .order(|| Order::Burst(round))
            .into_iter()
            .flatten()
            .collect();
        let first = spans.iter().map(|s| s.start).min();
        let last = spans.iter().map(|s| s.end).max();
        Burst {
            latencies: spans
                .iter()
                .map(|s| s.end.duration_since(s.start))
                .collect(),
            wall: match (first, last) {
                (Some(first), Some(last)) => last.duration_since(first),
                _ => Duration::ZERO,
            },
            cpu: spans.iter().map(|s| s.cpu).sum(),
        }
    }

    /// Undoes round `round` on every worker (concurrently, untimed).
    pub fn clean(&self, round: usize) {
        self.order(|| Order::Clean(round));
    }

    fn order(&self, make: impl Fn() -> Order) -> Vec<Option<Span>> {
        for order in &self.orders {
            order.send(make()).expect("a bench worker thread is gone");
        }
        (0..self.orders.len())
            .map(|_| {
                self.answers
                    .recv()
                    .expect("a bench worker thread is gone")
                    .unwrap_or_else(|e| panic!("bench worker failed: {e}"))
            })
            .collect()
    }
}

impl Drop for Crew {
    fn drop(&mut self) {
        self.orders.clear();
        for thread in self.threads.drain(..) {
            let _ = thread.join();
        }
    }
}

fn serve<W: Worker>(
    mut worker: W,
    inbox: &Receiver<Order>,
    barrier: &Barrier,
    answer: &Sender<Answer>,
) {
    for order in inbox {
        let reply = match order {
            Order::Burst(round) => {
                barrier.wait();
                let (start, cpu) = (Instant::now(), thread_cpu());
                worker.timed(round).map(|()| {
                    let end = Instant::now();
                    Some(Span {
                        start,
                        end,
                        cpu: thread_cpu().saturating_sub(cpu),
                    })
                })
            }
            Order::Clean(round) => worker.clean(round).map(|()| None),
        };
        if answer.send(reply).is_err() {
            return;
        }
    }
}

/// CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    use nix::time::{ClockId, clock_gettime};
    clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID).map_or(Duration::ZERO, Duration::from)
}
