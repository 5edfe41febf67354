//! `codecell repl`: one session, cell after cell — an interactive prompt on a terminal, cells
//! separated by `# %%` lines otherwise — with `--save`/`--restore` of its journal.

mod cells;
mod prompt;

use crate::failure::{Failure, GUEST_FAILED};
use crate::out;
use crate::run_cmd::{SandboxArgs, print_human};
use crate::store_args::DynamicStoreArgs;
use cells::Cells;
use clap::Args;
use codecell::{CodeMode, Journal, Metering, Session, SessionLimits, SessionState, Turn};
use prompt::{Entry, Prompt};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Largest cell accepted, in bytes.
const MAX_CELL_BYTES: usize = 1 << 20;
/// Largest journal file `--restore` reads, in bytes (a journal's own default cap is 16 MiB of
/// texts; JSON escaping can add to that).
const MAX_JOURNAL_FILE_BYTES: u64 = 64 << 20;

#[derive(Args, Debug)]
pub struct ReplArgs {
    #[command(flatten)]
    sandbox: SandboxArgs,
    /// Print each cell's outcome as one `codecell run --json` object per line.
    #[arg(long)]
    json: bool,
    /// Turns the session may run.
    #[arg(long)]
    max_turns: Option<u32>,
    /// Seconds the session may wait between turns before it is dropped (a person at a prompt
    /// may step away: a day, where a server's sessions get 10 minutes).
    #[arg(long, default_value_t = 86_400)]
    idle_ttl_s: u64,
    /// Fuel all turns together may use (turns on fuel metering, like `--fuel`).
    #[arg(long)]
    total_fuel: Option<u64>,
    /// Start over in a fresh instance when a turn traps (a limit, a crash), instead of ending.
    #[arg(long)]
    restart_on_trap: bool,
    /// Write the session's journal to FILE after every cell.
    #[arg(long, value_name = "FILE")]
    save: Option<PathBuf>,
    /// Replay the journal in FILE (saved with `--save`) before the first cell.
    #[arg(long, value_name = "FILE")]
    restore: Option<PathBuf>,
    /// `--store DIR --session ID [--project ID]`: the catalog's `{"dynamic": name}` handlers.
    #[command(flatten)]
    dynamic: DynamicStoreArgs,
}

impl ReplArgs {
    fn session_limits(&self) -> SessionLimits {
        let mut limits = SessionLimits::default();
        if let Some(v) = self.max_turns {
            limits.max_turns = v;
        }
        limits.idle_ttl = Duration::from_secs(self.idle_ttl_s);
        if let Some(v) = self.total_fuel {
            limits.max_total_fuel = v;
        }
        limits.restart_on_trap = self.restart_on_trap;
        limits
    }
}

/// The REPL's state: the code mode it makes sessions from, and the current session.
struct Repl {
    code_mode: CodeMode,
    session_limits: SessionLimits,
    session: Session,
    json: bool,
    save: Option<PathBuf>,
    failed: bool,
}

pub async fn run(args: ReplArgs) -> Result<ExitCode, Failure> {
    let store = args.dynamic.open(args.sandbox.guest)?;
    let catalog = args.sandbox.catalog(store.as_ref()).await?;
    // A session-wide fuel budget is only kept by a fuel-metered engine.
    let metering = match args.total_fuel {
        Some(_) => Metering::Fuel,
        None => args.sandbox.limits.metering(),
    };
    let code_mode = args.sandbox.code_mode_metered(catalog, false, metering)?;
    let session_limits = args.session_limits();
    let session = match &args.restore {
        Some(path) => {
            let journal = read_journal(path)?;
            let cells = journal.cells.len();
            let session = code_mode
                .restore_session(session_limits.clone(), journal)
                .await
                .map_err(Failure::codecell)?;
            out::stderr(&format!(
                "[codecell] restored {cells} cell(s) from {}\n",
                path.display()
            ));
            session
        }
        None => code_mode
            .session(session_limits.clone())
            .await
            .map_err(Failure::codecell)?,
    };
    let mut repl = Repl {
        code_mode,
        session_limits,
        session,
        json: args.json,
        save: args.save.clone(),
        failed: false,
    };
    if std::io::stdin().is_terminal() {
        repl.interactive().await?;
    } else {
        let mut cells = Cells::new(std::io::stdin().lock(), MAX_CELL_BYTES);
        while let Some(cell) = cells.next_cell()? {
            if !repl.cell(&cell).await? {
                break;
            }
        }
    }
    Ok(if repl.failed {
        ExitCode::from(GUEST_FAILED)
    } else {
        ExitCode::SUCCESS
    })
}

impl Repl {
    async fn interactive(&mut self) -> Result<(), Failure> {
        let mut prompt = Prompt::new()?;
        out::stderr("codecell repl: %reset starts over, %limits shows the limits, Ctrl-D ends\n");
        loop {
            match prompt.read()? {
                Entry::Cell(code) => {
                    if !self.cell(&code).await? {
                        return Ok(());
                    }
                }
                Entry::Magic(magic) => self.magic(&magic).await?,
                Entry::Interrupted => continue,
                Entry::End => return Ok(()),
            }
        }
    }

    async fn magic(&mut self, magic: &str) -> Result<(), Failure> {
        match magic {
            "reset" => {
                self.session = self
                    .code_mode
                    .session(self.session_limits.clone())
                    .await
                    .map_err(Failure::codecell)?;
                out::stderr("[codecell] a fresh session: every global is gone\n");
            }
            "limits" => out::stderr(&format!(
                "per turn: {:?}\nsession: {:?}\n",
                self.code_mode.limits(),
                self.session_limits
            )),
            other => out::stderr(&format!(
                "[codecell] unknown command %{}: try %reset or %limits\n",
                out::escape_controls(other)
            )),
        }
        Ok(())
    }

    /// Runs one cell and reports it; false once the session has ended.
    async fn cell(&mut self, code: &str) -> Result<bool, Failure> {
        let turn = match self.session.execute(code).await {
            Ok(turn) => turn,
            Err(codecell::EngineError::SessionEnded { reason }) => {
                self.failed = true;
                out::stderr(&format!("[codecell] the session has ended: {reason}\n"));
                return Ok(false);
            }
            Err(e) => return Err(Failure::engine(e)),
        };
        self.report(&turn)?;
        if let Some(path) = &self.save {
            save(&self.session, path)?;
        }
        Ok(!matches!(turn.state, SessionState::Ended(_)))
    }

    fn report(&mut self, turn: &Turn) -> Result<(), Failure> {
        self.failed |= !turn.outcome.is_ok();
        if self.json {
            let text =
                serde_json::to_string(&turn.outcome).map_err(|e| Failure::host(e.to_string()))?;
            out::line(&text)?;
        } else {
            print_human(&turn.outcome)?;
        }
        match &turn.state {
            SessionState::Live => {}
            SessionState::Restarted => out::stderr(
                "[codecell] the turn ended the instance: the session starts over, every global is gone\n",
            ),
            SessionState::Ended(reason) => {
                out::stderr(&format!("[codecell] the session has ended: {reason}\n"))
            }
            _ => {}
        }
        Ok(())
    }
}

fn read_journal(path: &Path) -> Result<Journal, Failure> {
    let text = crate::input::read_text(&path.to_string_lossy(), MAX_JOURNAL_FILE_BYTES)?;
    serde_json::from_str(&text)
        .map_err(|e| Failure::input(format!("{} is not a codecell journal: {e}", path.display())))
}

/// Writes the journal next to `path` and renames it into place, so a crash mid-write leaves the
/// last complete journal.
fn save(session: &Session, path: &Path) -> Result<(), Failure> {
    let journal = match session.save() {
        Ok(journal) => journal,
        Err(e) => {
            out::stderr(&format!("[codecell] not saved: {e}\n"));
            return Ok(());
        }
    };
    let text = serde_json::to_vec(&journal).map_err(|e| Failure::host(e.to_string()))?;
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    std::fs::write(&partial, text)
        .and_then(|()| std::fs::rename(&partial, path))
        .map_err(|e| Failure::host(format!("cannot write {}: {e}", path.display())))
}
