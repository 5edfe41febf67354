//! Host memory of this process: its proportional set size, read from `/proc/self/smaps_rollup`
//! on Linux (elsewhere there is no figure, and the rows say so).
//!
//! Not VmRSS: every pool slot maps its guest's memory image from the same compiled file, and
//! VmRSS counts a page of it once per slot that has read it, though the machine holds it once.
//! In the proportional set size a page mapped `k` times counts `1/k` each time, so the growth
//! per run is what the run really costs: the pages it wrote, and its share of those it read.

/// The process's proportional set size in bytes, where the platform tells it.
#[cfg(target_os = "linux")]
pub fn resident_bytes() -> Option<u64> {
    let rollup = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = rollup.lines().find(|l| l.starts_with("Pss:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The process's proportional set size in bytes, where the platform tells it.
#[cfg(not(target_os = "linux"))]
pub fn resident_bytes() -> Option<u64> {
    None
}

/// Why memory rows have no figure on this platform.
pub const UNMEASURED: &str = "resident memory is only read on Linux (/proc/self/smaps_rollup)";

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
