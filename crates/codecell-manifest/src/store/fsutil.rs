//! File-system primitives over cap-std: atomic writes, bounded reads, an inter-process lock.

use cap_std::fs::{Dir, OpenOptions};
use std::io::{self, Read as _, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Opens (creating if needed) a directory given by an ambient path.
pub(crate) fn open_ambient(path: &Path) -> io::Result<Dir> {
    std::fs::create_dir_all(path)?;
    Dir::open_ambient_dir(path, cap_std::ambient_authority())
}

/// Opens (creating if needed) a subdirectory of `dir`.
pub(crate) fn open_sub(dir: &Dir, name: &str) -> io::Result<Dir> {
    dir.create_dir_all(name)?;
    dir.open_dir(name)
}

/// Options for a new private file: 0600 where the platform has modes.
fn private_options(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    options
}

/// Options that never block in `open`: without `O_NONBLOCK`, a FIFO planted in place of a store
/// file blocks the open until some writer appears, which hangs `tool list` forever. Regular files
/// ignore the flag, and [`checked_regular`] refuses everything else right after the open.
fn nonblocking(options: &mut OpenOptions) -> &mut OpenOptions {
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NONBLOCK);
    }
    options
}

/// Refuses a handle that is not a regular file (a FIFO, a device, a directory, a socket),
/// checked on the opened handle itself so a rename between check and use cannot swap it.
fn checked_regular(file: cap_std::fs::File, name: &str) -> io::Result<cap_std::fs::File> {
    let metadata = file.metadata()?;
    if metadata.is_file() {
        Ok(file)
    } else {
        Err(not_regular(name))
    }
}

/// The error for a store file that is not a regular file.
fn not_regular(name: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{name} is not a regular file; refused"),
    )
}

/// Opens `name` in `dir` with `options`, without blocking, and only if it is a regular file.
pub(crate) fn open_regular(
    dir: &Dir,
    name: &str,
    options: &mut OpenOptions,
) -> io::Result<cap_std::fs::File> {
    let file = dir.open_with(name, nonblocking(options)).map_err(|e| {
        // Windows refuses to open a directory as a file ("Access denied") before the check
        // below can: name the refusal as that check does, so it reads the same everywhere.
        let directory = || dir.symlink_metadata(name).is_ok_and(|m| m.is_dir());
        if cfg!(windows) && e.kind() == io::ErrorKind::PermissionDenied && directory() {
            not_regular(name)
        } else {
            e
        }
    })?;
    checked_regular(file, name)
}

/// A fresh unique-enough hex token (pid, time, counter) for temporary names and event ids.
pub(crate) fn unique_token() -> String {
    use sha2::Digest as _;
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let seed = format!(
        "{}:{}:{}:{:?}",
        std::process::id(),
        nanos,
        COUNTER.fetch_add(1, Ordering::Relaxed),
        std::thread::current().id()
    );
    hex::encode(&sha2::Sha256::digest(seed.as_bytes())[..16])
}

/// Writes `name` atomically: a private temporary file, fsync, rename over, fsync the directory.
/// Readers see the old file or the whole new one, never a torn one.
pub(crate) fn write_atomic(dir: &Dir, name: &str, bytes: &[u8]) -> io::Result<()> {
    let temporary = format!(".{name}.{}.tmp", unique_token());
    let result = (|| {
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        let mut file = dir.open_with(&temporary, private_options(&mut options))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        dir.rename(&temporary, dir, name)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = dir.remove_file(&temporary);
    }
    result
}

/// Flushes a directory's entries (the rename) to disk; a no-op where directories can't be synced.
pub(crate) fn sync_dir(dir: &Dir) -> io::Result<()> {
    #[cfg(unix)]
    {
        // Dir handles may be O_PATH (no fsync); open the directory itself for reading.
        let mut options = OpenOptions::new();
        options.read(true);
        dir.open_with(".", &options)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// Reads a regular file of at most `max` bytes; `Ok(None)` when it is larger. Never blocks on
/// a FIFO and never reads more than `max + 1` bytes, whatever the file claims its length is.
pub(crate) fn read_bounded(dir: &Dir, name: &str, max: u64) -> io::Result<Option<Vec<u8>>> {
    let file = open_regular(dir, name, OpenOptions::new().read(true))?;
    if file.metadata()?.len() > max {
        return Ok(None);
    }
    let mut bytes = Vec::new();
    file.take(max + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= max).then_some(bytes))
}

/// Closes a torn log line; a line ending with it is an interrupted write.
pub(crate) const TORN_MARK: u8 = 0;

/// An exclusive lock on a lock file, held until dropped; it serialises writers across processes.
pub(crate) struct LockGuard(std::fs::File);

impl LockGuard {
    /// Blocks until the lock file `name` in `dir` is exclusively locked.
    pub(crate) fn acquire(dir: &Dir, name: &str) -> io::Result<LockGuard> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(true);
        let file = open_regular(dir, name, private_options(&mut options))?.into_std();
        file.lock()?;
        Ok(LockGuard(file))
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Closing the file releases the lock too; unlocking first just makes it prompt.
        let _ = self.0.unlock();
    }
}

/// Appends one line to `name` and fsyncs it; `line` is given the 1-based number the line will
/// have (signed events cover it). Call only under the lock: if the file does not end with a
/// newline (a writer died mid-line), the torn fragment is first closed with [`TORN_MARK`] and a
/// newline, so it stays a line of its own that never becomes valid (even if the fragment
/// happened to be a whole event whose write was not confirmed).
/// A log already holding `max` bytes or more is refused (readers would not load it either).
pub(crate) fn append_line(
    dir: &Dir,
    name: &str,
    max: u64,
    line: impl FnOnce(usize) -> String,
) -> io::Result<()> {
    let mut options = OpenOptions::new();
    options.read(true).append(true).create(true);
    let mut file = open_regular(dir, name, private_options(&mut options))?.into_std();
    let len = file.metadata()?.len();
    if len >= max {
        return Err(full(name, max));
    }
    // Bounded by `max` just above: the whole log is read to number the new line.
    let mut existing = Vec::new();
    (&mut file).take(max).read_to_end(&mut existing)?;
    let mut buffer = Vec::new();
    if existing.last().is_some_and(|last| *last != b'\n') {
        buffer.push(TORN_MARK);
        buffer.push(b'\n');
    }
    let newlines = existing.iter().filter(|b| **b == b'\n').count() + buffer.len() / 2;
    let line = line(newlines + 1);
    if (existing.len() + buffer.len() + line.len() + 1) as u64 > max {
        return Err(full(name, max));
    }
    buffer.extend_from_slice(line.as_bytes());
    buffer.push(b'\n');
    // One write call: O_APPEND puts it at the end even if a lock were ever bypassed.
    file.write_all(&buffer)?;
    file.sync_all()
}

fn full(name: &str, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::StorageFull,
        format!("{name} would grow past its limit of {max} bytes"),
    )
}
