//! Sessions: one instance kept alive across turns, so globals, imports, functions and classes
//! persist from one `execute` to the next.
//!
//! A [`Session`] owns a store, an instance and a pool slot for its whole life. Every turn is held
//! to the per-turn [`Limits`] (fuel, deadline, output, tool calls), re-armed before the turn; the
//! instance's memory cap (`Limits::memory_bytes`) and the [`SessionLimits`] hold for the whole
//! session. A turn that traps (fuel, deadline, output, tool-call limit, a crash) leaves the
//! instance in no state to run again: the session ends, or, with
//! [`SessionLimits::restart_on_trap`], starts over in a fresh instance and says so.
//!
//! Every session keeps a [`Journal`] as it goes, so [`Session::save`] and [`Session::restore`]
//! need nothing else: its random generators are always seeded (by [`Limits::seed`], or by a seed
//! drawn from the host when there is none), a seeded session's clocks are virtual, and an
//! unseeded one's real clocks record every read (`clocks.rs`).
//!
//! | type / module | what it is |
//! | --- | --- |
//! | [`Session`] (here) | the instance, the per-turn re-arming, how a turn ends the session |
//! | [`SessionManager`] (`manager.rs`) | sessions by id for a server: caps on count and memory, idle eviction |
//! | [`Journal`] (`journal.rs`) | the saved form, and the tool-call record and replay of the current cell |
//! | `clocks.rs` | the recorded and replayed real clocks of an unseeded session |

mod clocks;
mod journal;
mod manager;

pub use clocks::MAX_RECORDED_CLOCK_READS;
pub(crate) use journal::{CallJournal, ReplayDiverged};
pub use journal::{
    JOURNAL_FORMAT, Journal, JournalCall, JournalCell, JournalClocks, JournalResult,
};
pub use manager::{SessionManager, SessionManagerLimits};

use crate::bindings::Sandbox;
use crate::determinism::{make_deterministic, seed_random};
use crate::ending::{self, GuestEnd, LimitStop, Returned};
use crate::engine::{Engine, disarm};
use crate::error::EngineError;
use crate::limits::Limits;
use crate::outcome::{LimitKind, Outcome, Status};
use crate::run::{TIMEOUT_GRACE, cap_below_start, checked, options};
use crate::state::RunState;
use clocks::ClockLogs;
use codecell_catalog::Catalog;
use std::time::{Duration, Instant};
use tokio::sync::OwnedSemaphorePermit;
use wasmtime::Store;

/// Bounds that hold for a whole session, beside the per-turn [`Limits`].
///
/// | limit | default | when exceeded |
/// | --- | --- | --- |
/// | `max_turns` | 1,000 turns | the session ends after the last one |
/// | `idle_ttl` | 10 minutes between turns | the session ends; the next turn is refused |
/// | `max_total_fuel` | 100 turns' worth of the default fuel (kept only by a fuel-metered engine, [`crate::Metering`]) | the session ends after the turn that used it up |
/// | `max_journal_bytes` | 16 MiB of cells, outputs and tool results | the session runs on, but [`Session::save`] is refused |
/// | `restart_on_trap` | off: a trapped session ends | on: it restarts in a fresh instance, its state lost |
///
/// The instance's memory cap is the turn limits' `memory_bytes`, for the whole session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionLimits {
    /// Turns the session may run.
    pub max_turns: u32,
    /// Longest wait between turns before the session is dropped.
    pub idle_ttl: Duration,
    /// Fuel all turns together may consume.
    pub max_total_fuel: u64,
    /// Bytes the journal may hold before the session can no longer be saved.
    pub max_journal_bytes: usize,
    /// Whether a turn that traps starts the session over in a fresh instance (else it ends).
    pub restart_on_trap: bool,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            max_turns: 1_000,
            idle_ttl: Duration::from_secs(600),
            max_total_fuel: Limits::default().fuel.saturating_mul(100),
            max_journal_bytes: 16 << 20,
            restart_on_trap: false,
        }
    }
}

/// Where a session stands after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionState {
    /// The next turn runs in the same interpreter.
    Live,
    /// The turn trapped; the next turn runs in a fresh instance, and every global is gone.
    Restarted,
    /// The session is over; every further turn is refused with this reason.
    Ended(String),
}

/// One turn's outcome, and where the session stands after it.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The turn's outcome: its output alone, its tool calls, its fuel.
    pub outcome: Outcome,
    /// The turn's number, from 1.
    pub number: u32,
    /// Whether the session runs on.
    pub state: SessionState,
}

/// A turn that trapped; `diverged` when the trap was a restored cell leaving its journal.
struct Trapped {
    diverged: Option<String>,
}

/// The live instance of a session.
struct Live {
    store: Store<RunState>,
    sandbox: Sandbox,
    _slot: OwnedSemaphorePermit,
}

/// The randomness and clocks of a session's instances.
#[derive(Clone)]
enum Clocks {
    /// Seeded by the caller: virtual clocks.
    Virtual,
    /// Real clocks, recorded (and, on restore, replayed first).
    Recorded(ClockLogs),
}

/// An interpreter kept alive across turns. See the module docs.
pub struct Session {
    engine: Engine,
    catalog: Option<Catalog>,
    limits: Limits,
    session_limits: SessionLimits,
    seed: u64,
    clocks: Clocks,
    live: Option<Live>,
    cells: Vec<JournalCell>,
    journal_bytes: usize,
    turns: u32,
    fuel_used: u64,
    /// Whether the current turn's fuel is all the session has left (less than a turn's).
    turn_fuel_is_the_rest: bool,
    last_used: Instant,
    /// Set while a turn runs: still set at the next turn means the last one was dropped mid-run.
    in_turn: bool,
    ended: Option<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("guest", &self.engine.guest())
            .field("turns", &self.turns)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Session {
    /// A session on `engine`: turns get `limits` each (its `memory_bytes` caps the instance for
    /// the whole session, its `seed`, if any, makes the session deterministic).
    pub async fn new(
        engine: &Engine,
        catalog: Option<Catalog>,
        limits: Limits,
        session_limits: SessionLimits,
    ) -> Result<Session, EngineError> {
        let (seed, clocks) = match limits.seed {
            Some(seed) => (seed, Clocks::Virtual),
            None => (rand::random(), Clocks::Recorded(ClockLogs::default())),
        };
        Session::start(engine, catalog, limits, session_limits, seed, clocks).await
    }

    async fn start(
        engine: &Engine,
        catalog: Option<Catalog>,
        limits: Limits,
        session_limits: SessionLimits,
        seed: u64,
        clocks: Clocks,
    ) -> Result<Session, EngineError> {
        let mut session = Session {
            engine: engine.clone(),
            catalog,
            limits,
            session_limits,
            seed,
            clocks,
            live: None,
            cells: Vec::new(),
            journal_bytes: 0,
            turns: 0,
            fuel_used: 0,
            turn_fuel_is_the_rest: false,
            last_used: Instant::now(),
            in_turn: false,
            ended: None,
        };
        session.live = Some(session.instantiate().await?);
        // Idle time starts once the session is usable: a slow start is not idleness.
        session.last_used = Instant::now();
        Ok(session)
    }

    /// A fresh instance with this session's randomness, clocks and memory cap.
    fn instantiate(&self) -> impl Future<Output = Result<Live, EngineError>> + Send + use<> {
        // Only owned values cross the awaits: a `&Session` would make the future `!Send`.
        instantiate(
            self.engine.clone(),
            self.catalog.clone(),
            self.limits.clone(),
            self.seed,
            self.clocks.clone(),
        )
    }

    /// Runs `code` as the session's next turn, in the globals every earlier turn left.
    ///
    /// An `Err` is a failure of the host, or a turn the session refuses: it has ended
    /// ([`EngineError::SessionEnded`]), and says why.
    ///
    /// Dropping the future mid-turn (a cancelled request) ends the session: the instance was
    /// stopped where it stood, so the next call is refused.
    pub async fn execute(&mut self, code: &str) -> Result<Turn, EngineError> {
        if self.in_turn {
            self.end("a turn was cancelled while it ran; its state is lost".to_string());
        }
        self.check_usable()?;
        self.in_turn = true;
        let ran = self.run_cell(code).await;
        self.in_turn = false;
        let (outcome, trapped) = ran?;
        Ok(self.finish_turn(code, outcome, trapped))
    }

    /// Refuses a turn of a session that has ended, or has been idle past its time-to-live.
    fn check_usable(&mut self) -> Result<(), EngineError> {
        if self.ended.is_none() && self.last_used.elapsed() > self.session_limits.idle_ttl {
            self.end(format!(
                "it was idle for longer than its time-to-live of {} s",
                self.session_limits.idle_ttl.as_secs_f64()
            ));
        }
        match &self.ended {
            Some(reason) => Err(EngineError::SessionEnded {
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Runs one cell under the turn's limits; gives its outcome and whether the instance trapped.
    async fn run_cell(&mut self, code: &str) -> Result<(Outcome, Option<Trapped>), EngineError> {
        if self.live.is_none() {
            self.live = Some(self.instantiate().await?);
        }
        let mut turn_limits = self.limits.clone();
        let fuel_left = self
            .session_limits
            .max_total_fuel
            .saturating_sub(self.fuel_used);
        self.turn_fuel_is_the_rest = fuel_left < turn_limits.fuel;
        turn_limits.fuel = turn_limits.fuel.min(fuel_left);
        let live = self.live.as_mut().expect("instantiated above");
        let store = &mut live.store;
        {
            let state = store.data_mut();
            state.stdout.reset(turn_limits.max_output_bytes);
            state.stderr.reset(turn_limits.max_output_bytes);
            state.tool_calls.clear();
            state.nested_fuel = 0;
            state.limits = turn_limits.clone();
            // The cap stays the session's; only the "refused this turn" flag starts over.
            state.limiter.rearm(turn_limits.memory_bytes);
        }
        self.engine.arm(store, &turn_limits)?;
        let started = Instant::now();
        let deadline = started + turn_limits.deadline;
        store.data_mut().deadline = Some(deadline);
        let options = options(&turn_limits, usize::MAX);
        let sandbox = &live.sandbox;
        let call = async {
            let ended = sandbox.call_run_cell(&mut *store, code, options).await?;
            Ok(ended.map_err(GuestEnd::from))
        };
        let guarded = tokio::time::timeout(
            turn_limits.deadline + TIMEOUT_GRACE,
            checked(deadline, call),
        );
        let (returned, trapped) = match guarded.await {
            Ok(Ok(result)) => (Returned::Guest(result), None),
            Ok(Err(trap)) => {
                let diverged = trap.downcast_ref::<ReplayDiverged>().map(|d| d.0.clone());
                (Returned::Trap(trap), Some(Trapped { diverged }))
            }
            Err(_elapsed) => (
                Returned::Trap(LimitStop::trap(LimitKind::Deadline)),
                Some(Trapped { diverged: None }),
            ),
        };
        let duration = started.elapsed();
        disarm(store);
        let guest_fuel = crate::engine::guest_fuel_used(store, &turn_limits);
        let state = store.data_mut();
        // Calls a turn started concurrently end with it: the next turn starts with none.
        state.cancel_in_flight();
        let fuel_used = guest_fuel.saturating_add(state.nested_fuel);
        let classified = ending::classify(returned, state.limiter.refused(), &turn_limits);
        let (stdout, out_cut) = state.stdout.take();
        let (stderr, err_cut) = state.stderr.take();
        let outcome = Outcome {
            result: classified.result,
            stdout,
            stderr,
            truncated: out_cut || err_cut || classified.clipped,
            fuel_used,
            duration_ms: Outcome::duration_ms_of(duration),
            tool_calls: std::mem::take(&mut state.tool_calls),
        };
        Ok((outcome, trapped))
    }

    /// Records the turn in the journal and decides whether the session runs on.
    fn finish_turn(&mut self, code: &str, outcome: Outcome, trapped: Option<Trapped>) -> Turn {
        self.turns = self.turns.saturating_add(1);
        self.fuel_used = self.fuel_used.saturating_add(outcome.fuel_used);
        self.last_used = Instant::now();
        let calls = self
            .live
            .as_mut()
            .and_then(|live| live.store.data_mut().journal.as_mut())
            .map(|journal| std::mem::take(&mut journal.recorded))
            .unwrap_or_default();
        let mut state = SessionState::Live;
        if trapped.is_some()
            && self.turn_fuel_is_the_rest
            && outcome.limit() == Some(LimitKind::Fuel)
        {
            self.end(format!(
                "it used its total fuel of {}",
                self.session_limits.max_total_fuel
            ));
        } else if trapped.is_some() {
            self.live = None;
            let why = match outcome.result.as_ref().err() {
                Some(failure) => failure.report().kind.clone(),
                None => "a trap".to_string(),
            };
            if self.session_limits.restart_on_trap {
                // The fresh instance starts from the snapshot: so does its journal.
                self.cells.clear();
                self.journal_bytes = 0;
                if let Clocks::Recorded(_) = self.clocks {
                    self.clocks = Clocks::Recorded(ClockLogs::default());
                }
                state = SessionState::Restarted;
            } else {
                self.end(format!(
                    "turn {} ended the instance ({why}); its state is lost",
                    self.turns
                ));
            }
        } else {
            self.record(code, &outcome, calls);
        }
        if self.ended.is_none() && self.turns >= self.session_limits.max_turns {
            self.end(format!(
                "it ran its limit of {} turns",
                self.session_limits.max_turns
            ));
        }
        if self.ended.is_none() && self.fuel_used >= self.session_limits.max_total_fuel {
            self.end(format!(
                "it used its total fuel of {}",
                self.session_limits.max_total_fuel
            ));
        }
        if let Some(reason) = &self.ended {
            state = SessionState::Ended(reason.clone());
        }
        Turn {
            outcome,
            number: self.turns,
            state,
        }
    }

    fn record(&mut self, code: &str, outcome: &Outcome, calls: Vec<JournalCall>) {
        let size = code.len()
            + outcome.stdout.len()
            + outcome.stderr.len()
            + calls.iter().map(JournalCall::size).sum::<usize>();
        self.journal_bytes = self.journal_bytes.saturating_add(size);
        // Past the cap nothing more is kept: the session runs on, `save` is refused.
        if self.journal_bytes <= self.session_limits.max_journal_bytes {
            self.cells.push(JournalCell {
                code: code.to_string(),
                stdout: outcome.stdout.clone(),
                stderr: outcome.stderr.clone(),
                status: outcome.status().as_str().to_string(),
                tool_calls: calls,
            });
        }
    }

    fn end(&mut self, reason: String) {
        self.live = None;
        self.ended.get_or_insert(reason);
    }

    /// Ends the session now, freeing its instance.
    pub fn close(&mut self) {
        self.end("it was closed".to_string());
    }

    /// Why the session has ended, or None while it runs on.
    pub fn ended(&self) -> Option<&str> {
        self.ended.as_deref()
    }

    /// Turns run so far.
    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// How long since the last turn (or since the session started).
    pub fn idle_for(&self) -> Duration {
        self.last_used.elapsed()
    }

    /// Bytes of linear memory the instance has grown to (0 once the session ended).
    pub fn memory_bytes(&self) -> usize {
        self.live
            .as_ref()
            .map(|live| live.store.data().limiter.peak())
            .unwrap_or(0)
    }

    /// The journal of every turn so far, for [`Session::restore`].
    pub fn save(&self) -> Result<Journal, EngineError> {
        let limit = self.session_limits.max_journal_bytes;
        if self.journal_bytes > limit {
            return Err(EngineError::JournalTooLarge {
                used: self.journal_bytes,
                limit,
            });
        }
        let clocks = match &self.clocks {
            Clocks::Virtual => JournalClocks::Virtual,
            Clocks::Recorded(logs) => {
                let (wall_ns, monotonic_ns, overflowed) = logs.snapshot();
                if overflowed {
                    return Err(EngineError::JournalTooLarge {
                        used: MAX_RECORDED_CLOCK_READS + 1,
                        limit: MAX_RECORDED_CLOCK_READS,
                    });
                }
                JournalClocks::Recorded {
                    wall_ns,
                    monotonic_ns,
                }
            }
        };
        Ok(Journal {
            format: JOURNAL_FORMAT,
            guest: self.engine.guest().name().to_string(),
            seed: self.seed,
            clocks,
            cells: self.cells.clone(),
        })
    }

    /// A new session in a fresh instance that has replayed `journal`: every cell run again with
    /// its tool calls answered from the journal, each checked to print what it printed then.
    ///
    /// Fails with [`EngineError::JournalDiverged`] naming the first cell that did otherwise,
    /// and [`EngineError::JournalInvalid`] for a journal this session cannot take.
    pub async fn restore(
        engine: &Engine,
        catalog: Option<Catalog>,
        limits: Limits,
        session_limits: SessionLimits,
        journal: Journal,
    ) -> Result<Session, EngineError> {
        check_journal(engine, &journal, &session_limits)?;
        let clocks = match journal.clocks {
            JournalClocks::Virtual => Clocks::Virtual,
            JournalClocks::Recorded {
                wall_ns,
                monotonic_ns,
            } => Clocks::Recorded(ClockLogs::replaying(wall_ns, monotonic_ns)),
        };
        let mut session = Session::start(
            engine,
            catalog,
            limits,
            session_limits,
            journal.seed,
            clocks,
        )
        .await?;
        for (index, cell) in journal.cells.into_iter().enumerate() {
            let diverged = |detail: String| EngineError::JournalDiverged {
                cell: index + 1,
                detail,
            };
            session.set_replay(Some(cell.tool_calls.clone()));
            let (outcome, trapped) = session.run_cell(&cell.code).await?;
            if let Some(Trapped {
                diverged: Some(why),
            }) = &trapped
            {
                return Err(diverged(why.clone()));
            }
            let left = session.take_replay();
            if left > 0 {
                return Err(diverged(format!(
                    "it made {left} fewer tool calls than the journal has"
                )));
            }
            if outcome.status().as_str() != cell.status {
                return Err(diverged(format!(
                    "it ended {} where the journal has {}",
                    outcome.status().as_str(),
                    cell.status
                )));
            }
            if outcome.stdout != cell.stdout || outcome.stderr != cell.stderr {
                return Err(diverged(
                    "it printed other output than the journal has".into(),
                ));
            }
            if trapped.is_some() {
                return Err(diverged("it ended the instance".into()));
            }
            session.finish_turn(&cell.code, outcome, None);
            if let Some(reason) = session.ended() {
                return Err(diverged(format!("the session ended: {reason}")));
            }
        }
        Ok(session)
    }

    fn set_replay(&mut self, calls: Option<Vec<JournalCall>>) {
        if let Some(journal) = self
            .live
            .as_mut()
            .and_then(|live| live.store.data_mut().journal.as_mut())
        {
            journal.replay = calls.map(Into::into);
        }
    }

    /// Ends replay of the cell; gives how many recorded calls it left unmade.
    fn take_replay(&mut self) -> usize {
        self.live
            .as_mut()
            .and_then(|live| live.store.data_mut().journal.as_mut())
            .and_then(|journal| journal.replay.take())
            .map_or(0, |left| left.len())
    }
}

/// Refuses a journal of another format or guest, or one larger than the session may hold.
fn check_journal(
    engine: &Engine,
    journal: &Journal,
    limits: &SessionLimits,
) -> Result<(), EngineError> {
    let invalid = |detail: String| Err(EngineError::JournalInvalid { detail });
    if journal.format != JOURNAL_FORMAT {
        return invalid(format!(
            "format {} is not the format {JOURNAL_FORMAT} this build reads",
            journal.format
        ));
    }
    if journal.guest != engine.guest().name() {
        return invalid(format!(
            "it was saved on the {} guest, not {}",
            journal.guest,
            engine.guest().name()
        ));
    }
    if journal.cells.len() > limits.max_turns as usize {
        return invalid(format!(
            "it has {} cells, over the session's limit of {} turns",
            journal.cells.len(),
            limits.max_turns
        ));
    }
    if let JournalClocks::Recorded {
        wall_ns,
        monotonic_ns,
    } = &journal.clocks
        && wall_ns.len().max(monotonic_ns.len()) > MAX_RECORDED_CLOCK_READS
    {
        return invalid(format!(
            "it has more than {MAX_RECORDED_CLOCK_READS} reads of a clock"
        ));
    }
    let statuses = [Status::Ok, Status::Error, Status::Limit].map(Status::as_str);
    if let Some(cell) = journal
        .cells
        .iter()
        .position(|c| !statuses.contains(&c.status.as_str()))
    {
        return invalid(format!("cell {} has an unknown status", cell + 1));
    }
    Ok(())
}

/// A fresh instance seeded with `seed`, with `clocks`, under `limits`' memory cap.
async fn instantiate(
    engine: Engine,
    catalog: Option<Catalog>,
    limits: Limits,
    seed: u64,
    clocks: Clocks,
) -> Result<Live, EngineError> {
    let slot = engine.slot().await?;
    let mut state = RunState::with_wasi(&limits, catalog, |builder| match &clocks {
        Clocks::Virtual => Some(make_deterministic(builder, seed)),
        Clocks::Recorded(logs) => {
            seed_random(builder, seed);
            logs.install(builder);
            None
        }
    });
    state.journal = Some(CallJournal::default());
    let mut store = engine.store_over(state, &limits)?;
    let sandbox = match engine.inner.pre.instantiate_async(&mut store).await {
        Ok(sandbox) => sandbox,
        Err(error) => {
            return Err(cap_below_start(&store, &limits).unwrap_or(EngineError::Wasmtime(error)));
        }
    };
    disarm(&mut store);
    Ok(Live {
        store,
        sandbox,
        _slot: slot,
    })
}
