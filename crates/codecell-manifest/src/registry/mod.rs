//! The scope-aware registry (the seed's `DynamicToolRegistry`): define, invoke, resolve.
//! Resolution is always session > project > global. Session manifests are loaded once at open
//! and kept in memory; project/global state is re-read from disk on every query, so other
//! processes' promotions are seen.

mod define;
mod scopes;
mod versions;

pub use versions::{PublicEvent, VersionEntry, VersionsReport};

use crate::clock::{Clock, SystemClock};
use crate::error::DynamicToolError;
use crate::event_log::Event;
use crate::load_errors::MAX_LOAD_ERRORS;
use crate::manifest::{Manifest, Scope};
use crate::runner::ToolRunner;
use crate::schema::CompiledSchema;
use crate::store::Store;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

/// Asked before a promotion without the approved flag: `(manifest, "promote:<scope>")`.
pub type Approval = Arc<dyn Fn(&Manifest, &str) -> bool + Send + Sync>;

/// How to open a registry.
#[derive(Clone)]
pub struct RegistryOptions {
    /// Root session (frame) id; required.
    pub session_id: String,
    /// Project id; defaults to the session id as in the seed.
    pub project_id: Option<String>,
    /// Store directory.
    pub store_dir: PathBuf,
    /// Time source (TTL and event timestamps).
    pub clock: Arc<dyn Clock>,
    /// Approval callback for promotions; none means "not approved".
    pub approval: Option<Approval>,
    /// Store key: with one, every manifest and event written is signed (HMAC-SHA256) and
    /// anything read that is unsigned or mis-signed is inert and reported (see
    /// [`crate::auth`]). `None` keeps files and ids exactly the reference's.
    pub store_key: Option<Vec<u8>>,
}

impl RegistryOptions {
    /// Options with the system clock and no approval callback.
    pub fn new(session_id: impl Into<String>, store_dir: impl Into<PathBuf>) -> Self {
        RegistryOptions {
            session_id: session_id.into(),
            project_id: None,
            store_dir: store_dir.into(),
            clock: Arc::new(SystemClock),
            approval: None,
            store_key: None,
        }
    }

    /// These options with the store key read from `path` (see [`crate::auth::read_store_key`]).
    pub fn with_store_key_file(
        mut self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, crate::store::StoreError> {
        self.store_key = Some(crate::auth::read_store_key(path.as_ref())?);
        Ok(self)
    }
}

#[derive(Default)]
struct State {
    session: BTreeMap<String, Manifest>,
    load_errors: Vec<String>,
    load_error_set: HashSet<String>,
    /// Hashes of distinct errors seen after the first [`MAX_LOAD_ERRORS`]: counted, not kept.
    /// Bounded too: past [`MAX_SUPPRESSED_TRACKED`] every further error is simply counted.
    suppressed: HashSet<u64>,
    suppressed_untracked: usize,
    /// The latest "… and N more" of each source (the store already capped that source); kept
    /// apart so they are neither capped away nor piled up as the count changes between reads.
    source_summaries: BTreeMap<String, usize>,
    last_audit_event: Option<Event>,
}

/// Distinct suppressed errors remembered (by hash) so re-reading the store does not count them
/// again; 8 bytes each.
const MAX_SUPPRESSED_TRACKED: usize = 100_000;

impl State {
    fn record_errors(&mut self, errors: impl IntoIterator<Item = String>) {
        for error in errors {
            if let Some((source, count)) = crate::load_errors::parse_summary(&error) {
                self.source_summaries.insert(source.to_string(), count);
                continue;
            }
            if self.load_error_set.contains(&error) {
                continue;
            }
            if self.load_errors.len() < MAX_LOAD_ERRORS {
                self.load_error_set.insert(error.clone());
                self.load_errors.push(error);
                continue;
            }
            use std::hash::{BuildHasher as _, Hasher as _};
            // A fixed hasher: the same message must hash the same on every query.
            let mut hasher =
                std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default().build_hasher();
            hasher.write(error.as_bytes());
            let hash = hasher.finish();
            if self.suppressed.len() < MAX_SUPPRESSED_TRACKED {
                self.suppressed.insert(hash);
            } else if !self.suppressed.contains(&hash) {
                self.suppressed_untracked += 1;
            }
        }
    }

    fn load_errors(&self) -> Vec<String> {
        let mut errors = self.load_errors.clone();
        errors.extend(
            self.source_summaries
                .iter()
                .map(|(source, count)| crate::load_errors::summary(source, *count)),
        );
        let more = self.suppressed.len() + self.suppressed_untracked;
        if more > 0 {
            errors.push(crate::load_errors::summary("store", more));
        }
        errors
    }
}

/// The compiled schemas of one manifest, with the schemas they were compiled from (a caller
/// may hand `invoke_manifest` any manifest, so a cached entry is used only if they match).
struct Validators {
    input_schema: Value,
    output_schema: Value,
    input: Result<CompiledSchema, String>,
    output: Result<CompiledSchema, String>,
}

impl Validators {
    fn new(manifest: &Manifest) -> Validators {
        let compile = |schema: &Value, name: &str| {
            CompiledSchema::new(schema, name).map_err(|e| format!("schema does not compile: {e}"))
        };
        Validators {
            input: compile(&manifest.input_schema, "input_schema"),
            output: compile(&manifest.output_schema, "output_schema"),
            input_schema: manifest.input_schema.clone(),
            output_schema: manifest.output_schema.clone(),
        }
    }

    fn fits(&self, manifest: &Manifest) -> bool {
        self.input_schema == manifest.input_schema && self.output_schema == manifest.output_schema
    }
}

/// Manifests whose compiled schemas are kept; past it an arbitrary entry makes room.
const MAX_CACHED_VALIDATORS: usize = 256;

/// Scope-aware dynamic tool versions with session-first resolution.
pub struct Registry {
    session_id: String,
    project_id: String,
    store: Store,
    runner: Arc<dyn ToolRunner>,
    approval: Option<Approval>,
    clock: Arc<dyn Clock>,
    state: Mutex<State>,
    /// Compiled schemas by manifest id: compiling on every invoke cost more than validating.
    validators: Mutex<HashMap<String, Arc<Validators>>>,
}

impl Registry {
    /// Opens the store and loads this session's valid, unexpired manifests; bad files are
    /// reported in [`Registry::load_errors`], never fatal.
    pub fn open(
        options: RegistryOptions,
        runner: Arc<dyn ToolRunner>,
    ) -> Result<Registry, DynamicToolError> {
        let session_id = options.session_id.trim().to_string();
        if session_id.is_empty() {
            return Err(DynamicToolError::MissingSessionId);
        }
        let project_id = options
            .project_id
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| session_id.clone());
        let store = Store::open_with(&options.store_dir, options.clock.clone(), options.store_key)?;
        let registry = Registry {
            session_id,
            project_id,
            store,
            runner,
            approval: options.approval,
            clock: options.clock,
            state: Mutex::new(State::default()),
            validators: Mutex::new(HashMap::new()),
        };
        let (manifests, errors) = registry.store.load_session_manifests(&registry.session_id);
        let now = registry.clock.now();
        {
            let mut state = registry.state();
            state.record_errors(errors);
            for manifest in manifests {
                if now < manifest.expires_at {
                    state.session.insert(manifest.name.clone(), manifest);
                }
            }
        }
        // Surface scoped load errors at open, as the seed's constructor does.
        registry.effective();
        Ok(registry)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere must not make the registry unusable: the state stays consistent
        // because every mutation is a single insert/remove.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The root session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The project id.
    pub fn project_id(&self) -> &str {
        &self.project_id
    }

    /// Every distinct load error seen so far (corrupt, tampered or torn files and log lines):
    /// the first [`MAX_LOAD_ERRORS`], then one line counting the rest.
    pub fn load_errors(&self) -> Vec<String> {
        self.state().load_errors()
    }

    /// The event appended by the last promote/activate/rollback of this registry.
    pub fn last_audit_event(&self) -> Option<Event> {
        self.state().last_audit_event.clone()
    }

    /// Drops expired session manifests from memory; returns how many.
    pub fn purge_expired(&self) -> usize {
        let now = self.clock.now();
        let mut state = self.state();
        let before = state.session.len();
        state.session.retain(|_, m| now < m.expires_at);
        before - state.session.len()
    }

    /// This session's unexpired manifest of that name.
    pub fn session_manifest(&self, name: &str) -> Option<Manifest> {
        self.purge_expired();
        self.state().session.get(name).cloned()
    }

    /// The manifest `name` resolves to (session > project > global), if any.
    ///
    /// Only that name is resolved: a session tool is answered from memory, and otherwise only
    /// the project's and then the global versions of `name` are considered (resolving through
    /// the whole effective map cloned every manifest of every scope on each call).
    pub fn get(&self, name: &str) -> Option<Manifest> {
        self.purge_expired();
        if let Some(manifest) = self.state().session.get(name) {
            return Some(manifest.clone());
        }
        let view = self.scoped_view();
        [Scope::Project, Scope::Global]
            .into_iter()
            .find_map(|scope| self.active_version(&view, scope, name))
    }

    /// Every tool that resolves, sorted by name.
    pub fn tools(&self) -> Vec<Manifest> {
        self.purge_expired();
        self.effective().into_values().collect()
    }

    /// name → resolved manifest: global, overridden by project, overridden by session.
    fn effective(&self) -> BTreeMap<String, Manifest> {
        let view = self.scoped_view();
        let mut map = BTreeMap::new();
        for scope in [Scope::Global, Scope::Project] {
            for manifest in self.active_versions(&view, scope) {
                map.insert(manifest.name.clone(), manifest);
            }
        }
        for (name, manifest) in &self.state().session {
            map.insert(name.clone(), manifest.clone());
        }
        map
    }

    /// Resolves `name` and invokes exactly that manifest.
    pub async fn invoke(&self, name: &str, args: &Value) -> Result<Value, DynamicToolError> {
        let manifest = self
            .get(name)
            .ok_or_else(|| DynamicToolError::Unknown(name.to_string()))?;
        self.invoke_manifest(&manifest, args).await
    }

    /// Invokes this exact version: arguments checked before, result checked after. It never
    /// re-resolves the name, so an activation racing with the call cannot swap the code.
    pub async fn invoke_manifest(
        &self,
        manifest: &Manifest,
        args: &Value,
    ) -> Result<Value, DynamicToolError> {
        let validators = self.validators(manifest);
        let input = validators.input.as_ref();
        if let Some(error) = input.map_or_else(|e| Some(e.clone()), |v| v.validation_error(args)) {
            return Err(DynamicToolError::Arguments(error));
        }
        let result = self.runner.run(manifest, args).await?;
        let output = validators.output.as_ref();
        if let Some(error) =
            output.map_or_else(|e| Some(e.clone()), |v| v.validation_error(&result))
        {
            return Err(DynamicToolError::Output(error));
        }
        Ok(result)
    }

    /// The compiled schemas of `manifest`, from the cache or compiled now (outside the lock).
    fn validators(&self, manifest: &Manifest) -> Arc<Validators> {
        let cached = self.validator_cache().get(&manifest.manifest_id).cloned();
        if let Some(found) = cached.filter(|v| v.fits(manifest)) {
            return found;
        }
        let compiled = Arc::new(Validators::new(manifest));
        self.cache_validators(&manifest.manifest_id, compiled.clone());
        compiled
    }

    fn cache_validators(&self, manifest_id: &str, validators: Arc<Validators>) {
        let mut cache = self.validator_cache();
        if cache.len() >= MAX_CACHED_VALIDATORS
            && !cache.contains_key(manifest_id)
            && let Some(victim) = cache.keys().next().cloned()
        {
            cache.remove(&victim);
        }
        cache.insert(manifest_id.to_string(), validators);
    }

    fn validator_cache(&self) -> MutexGuard<'_, HashMap<String, Arc<Validators>>> {
        // Entries are inserted whole, so a poisoned cache is still consistent.
        self.validators.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many manifests have compiled schemas cached (for tests of the bound).
    #[doc(hidden)]
    pub fn cached_validator_count(&self) -> usize {
        self.validator_cache().len()
    }
}
