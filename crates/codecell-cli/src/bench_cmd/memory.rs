//! Host memory of this process: its resident set, read from `/proc/self/status` on Linux
//! (elsewhere there is no figure, and the rows say so).

/// The process's resident set size in bytes, where the platform tells it.
#[cfg(target_os = "linux")]
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The process's resident set size in bytes, where the platform tells it.
#[cfg(not(target_os = "linux"))]
pub fn resident_bytes() -> Option<u64> {
    None
}

/// Why memory rows have no figure on this platform.
pub const UNMEASURED: &str = "resident memory is only read on Linux (/proc/self/status)";

/// `(after - before) / count` in MiB (0 when memory went down).
pub fn mib_each(before: u64, after: u64, count: usize) -> f64 {
    after.saturating_sub(before) as f64 / (1u64 << 20) as f64 / count.max(1) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_instance_share_of_growth() {
        assert_eq!(mib_each(0, 8 << 20, 4), 2.0);
        assert_eq!(mib_each(8 << 20, 0, 4), 0.0);
        assert_eq!(mib_each(0, 1 << 20, 0), 1.0);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_has_a_resident_size() {
        assert!(resident_bytes().is_some_and(|b| b > 0));
    }
}
