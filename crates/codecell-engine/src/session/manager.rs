//! Sessions by id, for a server: a cap on how many live at once and on the memory their caps
//! reserve together, and idle sessions evicted.

use super::{Session, SessionLimits, Turn};
use crate::engine::Engine;
use crate::error::EngineError;
use crate::limits::Limits;
use codecell_catalog::Catalog;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The caps a [`SessionManager`] holds its sessions to together.
///
/// | limit | default |
/// | --- | --- |
/// | `max_sessions` | 32 live sessions (each holds one of the engine's pool slots) |
/// | `max_memory_bytes` | 4 GiB: the sum of the live sessions' memory caps |
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionManagerLimits {
    /// Sessions alive at once.
    pub max_sessions: usize,
    /// Sum of the live sessions' memory caps (`Limits::memory_bytes`), in bytes.
    pub max_memory_bytes: usize,
}

impl Default for SessionManagerLimits {
    fn default() -> Self {
        SessionManagerLimits {
            max_sessions: 32,
            max_memory_bytes: 4 << 30,
        }
    }
}

type Shared = Arc<tokio::sync::Mutex<Session>>;

/// Sessions keyed by id: made with the same catalog and limits, evicted when idle past their
/// time-to-live. Cheap to clone; clones share the sessions.
#[derive(Clone)]
pub struct SessionManager {
    engine: Engine,
    catalog: Option<Catalog>,
    limits: Limits,
    session_limits: SessionLimits,
    caps: SessionManagerLimits,
    sessions: Arc<Mutex<HashMap<String, Shared>>>,
}

impl std::fmt::Debug for SessionManager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionManager")
            .field("caps", &self.caps)
            .field("live", &self.len())
            .finish()
    }
}

impl SessionManager {
    /// A manager whose sessions run on `engine` with `catalog`, `limits` per turn and
    /// `session_limits` each.
    pub fn new(
        engine: &Engine,
        catalog: Option<Catalog>,
        limits: Limits,
        session_limits: SessionLimits,
        caps: SessionManagerLimits,
    ) -> Self {
        SessionManager {
            engine: engine.clone(),
            catalog,
            limits,
            session_limits,
            caps,
            sessions: Arc::default(),
        }
    }

    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Shared>> {
        self.sessions.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Live sessions.
    pub fn len(&self) -> usize {
        self.map().len()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a session; gives its id (32 hex digits, drawn from the host's randomness).
    pub async fn create(&self) -> Result<String, EngineError> {
        self.evict_idle();
        self.check_room(self.map().len())?;
        let session = Session::new(
            &self.engine,
            self.catalog.clone(),
            self.limits.clone(),
            self.session_limits.clone(),
        )
        .await?;
        let id = format!("{:032x}", rand::random::<u128>());
        let mut map = self.map();
        // Two creates may have raced past the check above: the caps still hold.
        self.check_room(map.len())?;
        map.insert(id.clone(), Arc::new(tokio::sync::Mutex::new(session)));
        Ok(id)
    }

    /// Refuses one more session beside `live` ones when it would pass either cap.
    fn check_room(&self, live: usize) -> Result<(), EngineError> {
        let reserved = live.saturating_mul(self.limits.memory_bytes);
        if live >= self.caps.max_sessions
            || reserved.saturating_add(self.limits.memory_bytes) > self.caps.max_memory_bytes
        {
            return Err(EngineError::SessionsFull {
                live,
                reserved,
                max_sessions: self.caps.max_sessions,
                max_memory: self.caps.max_memory_bytes,
            });
        }
        Ok(())
    }

    /// Runs `code` as the next turn of session `id`. A session the turn ended is dropped.
    pub async fn execute(&self, id: &str, code: &str) -> Result<Turn, EngineError> {
        self.evict_idle();
        let session = self.map().get(id).cloned().ok_or_else(|| unknown(id))?;
        let mut session = session.lock().await;
        let turn = session.execute(code).await;
        if session.ended().is_some() {
            self.map().remove(id);
        }
        turn
    }

    /// Ends session `id`; false if there was none.
    pub fn close(&self, id: &str) -> bool {
        self.map().remove(id).is_some()
    }

    /// Drops every session idle past its time-to-live (one running a turn is not idle); gives
    /// how many were dropped.
    pub fn evict_idle(&self) -> usize {
        let ttl = self.session_limits.idle_ttl;
        let mut map = self.map();
        let before = map.len();
        map.retain(|_, session| match session.try_lock() {
            Ok(session) => session.idle_for() <= ttl && session.ended().is_none(),
            Err(_) => true,
        });
        before - map.len()
    }

    /// The journal of session `id`, for [`Session::restore`].
    pub async fn save(&self, id: &str) -> Result<super::Journal, EngineError> {
        let session = self.map().get(id).cloned().ok_or_else(|| unknown(id))?;
        let session = session.lock().await;
        session.save()
    }
}

fn unknown(id: &str) -> EngineError {
    EngineError::UnknownSession {
        id: id.chars().take(64).collect(),
    }
}
