//! What a run has left, for tools that run guests of their own: a dynamic tool called from a
//! code-mode snippet runs in a nested run, and that run must not get more than its caller has.
//!
//! While `call_tool` serves a call, the call's future runs inside a task-local
//! [`CallerBudget`]; a runner that starts a nested run reads it with [`CallerBudget::current`],
//! holds its own limits to it with [`CallerBudget::clamp`], and reports the fuel it used with
//! [`CallerBudget::charge`] (from the same task). Serving a call allocates nothing: this is on
//! every tool call's path. The caller adds that fuel to its own `fuel_used`, and once the fuel
//! charged to it reaches its budget the run ends on the fuel limit.

use crate::limits::Limits;
use std::cell::Cell;
use std::future::Future;
use std::time::Instant;

tokio::task_local! {
    static CALLER: Served;
}

/// The budget of the call being served, and the fuel charged to it so far.
struct Served {
    budget: CallerBudget,
    charged: Cell<u64>,
}

/// What is left of the run whose tool call is being served.
#[derive(Debug, Clone, Copy)]
pub struct CallerBudget {
    /// Fuel not yet charged to nested runs: an upper bound on what the caller has left (its
    /// own guest's use is only known when it stops).
    fuel: u64,
    /// The caller's memory cap (a nested run gets an instance of its own, never more).
    memory_bytes: usize,
    /// When the caller must end.
    deadline: Instant,
}

impl CallerBudget {
    /// The budget of the run whose tool call the current task serves, if any.
    pub fn current() -> Option<CallerBudget> {
        CALLER.try_with(|served| served.budget).ok()
    }

    /// `limits`, held to what the caller has left: fuel, memory and the time to its deadline.
    pub fn clamp(&self, limits: &Limits) -> Limits {
        Limits {
            fuel: limits.fuel.min(self.fuel),
            memory_bytes: limits.memory_bytes.min(self.memory_bytes),
            deadline: limits
                .deadline
                .min(self.deadline.saturating_duration_since(Instant::now())),
            ..limits.clone()
        }
    }

    /// Charges `fuel` a nested run used to the run whose call the current task serves (nothing
    /// when it serves none).
    pub fn charge(fuel: u64) {
        let _ = CALLER.try_with(|served| {
            served
                .charged
                .set(served.charged.get().saturating_add(fuel))
        });
    }

    pub(crate) fn new(fuel: u64, memory_bytes: usize, deadline: Instant) -> Self {
        CallerBudget {
            fuel,
            memory_bytes,
            deadline,
        }
    }

    /// Runs `call` with this budget current; gives its output and the fuel charged meanwhile.
    pub(crate) async fn serve<F: Future>(self, call: F) -> (F::Output, u64) {
        let served = Served {
            budget: self,
            charged: Cell::new(0),
        };
        CALLER
            .scope(served, async {
                let output = call.await;
                (output, CALLER.with(|served| served.charged.get()))
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_nested_run_gets_at_most_what_its_caller_has_left() {
        let budget = CallerBudget::new(1_000, 1 << 20, Instant::now() + Duration::from_millis(50));
        let ((), charged) = budget
            .serve(async {
                let current = CallerBudget::current().expect("inside a served call");
                let limits = current.clamp(&Limits::default());
                assert_eq!(limits.fuel, 1_000);
                assert_eq!(limits.memory_bytes, 1 << 20);
                assert!(limits.deadline <= Duration::from_millis(50));
                CallerBudget::charge(700);
                CallerBudget::charge(50);
            })
            .await;
        assert_eq!(charged, 750);
        assert!(CallerBudget::current().is_none(), "only inside the call");
    }
}
