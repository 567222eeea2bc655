//! Limits for sandboxes that run side by side: their memory limits together stay within the
//! memory the machine has available, so that a runaway script in every job at once is
//! stopped by its limit rather than by the kernel's out-of-memory killer.

use super::Limits;

/// No job's Lua memory limit is set below this, however many jobs share the memory: an
/// upgrade step over a small save needs a few MiB, and a limit much lower than this would
/// fail ordinary saves rather than protect the machine.
pub const MIN_JOB_MEMORY: usize = 64 << 20;

impl Limits {
    /// The limits for each of `jobs` sandboxes running at once (0 counts as 1): the default
    /// limits, with the memory lowered to an equal share of the memory available, but not
    /// below [`MIN_JOB_MEMORY`].
    ///
    /// The memory available is `MemAvailable` of `/proc/meminfo` (memory that can be given
    /// to programs without swapping, page cache that can be dropped included), or the limit
    /// of the process's memory cgroup (version 2 `memory.max`, version 1
    /// `memory.limit_in_bytes`, of its cgroup and their parents) when that is lower, as in a
    /// container or a batch job. Where neither can be read (not Linux, no `/proc`), the
    /// default limits are returned.
    ///
    /// Only Lua's memory is limited: the saves as Rust values, held besides, come on top.
    /// With the floor, `jobs` × [`MIN_JOB_MEMORY`] can exceed what is available; a caller
    /// that wants to stay within it runs fewer jobs.
    ///
    /// ```
    /// use savechain::lua::{Limits, MIN_JOB_MEMORY};
    ///
    /// let limits = Limits::for_jobs(8);
    /// assert!(limits.memory <= Limits::default().memory);
    /// assert!(limits.memory >= MIN_JOB_MEMORY);
    /// assert_eq!(limits.instructions, Limits::default().instructions);
    /// ```
    pub fn for_jobs(jobs: usize) -> Limits {
        Limits::for_jobs_within(
            jobs,
            available_memory(&|path| std::fs::read_to_string(path).ok()),
        )
    }

    /// [`Limits::for_jobs`] with `available` bytes of memory (`None`: unknown).
    fn for_jobs_within(jobs: usize, available: Option<u64>) -> Limits {
        let default = Limits::default();
        let Some(available) = available else {
            return default;
        };
        let share = available / jobs.max(1) as u64;
        let memory = share.max(MIN_JOB_MEMORY as u64).min(default.memory as u64);
        Limits {
            // No more than the default, which is a usize.
            memory: memory as usize,
            ..default
        }
    }
}

/// Bytes of memory the process may still use, reading files through `read` (a path in, its
/// text out): `MemAvailable`, lowered to the lowest memory cgroup limit over it.
///
/// A cgroup's limit counts rather than its limit minus its usage: the usage includes page
/// cache, which the kernel reclaims before it kills anything, so a cgroup that has read a lot
/// would look full when it is not.
fn available_memory(read: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    let available = mem_available(&read("/proc/meminfo")?)?;
    Some(match cgroup_limit(read) {
        Some(limit) => available.min(limit),
        None => available,
    })
}

/// `MemAvailable` of a `/proc/meminfo`, in bytes.
fn mem_available(meminfo: &str) -> Option<u64> {
    let line = meminfo
        .lines()
        .find_map(|line| line.strip_prefix("MemAvailable:"))?;
    let mut words = line.split_whitespace();
    let number: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => number.checked_mul(1024),
        None => Some(number),
        Some(_) => None,
    }
}

/// The lowest memory limit set on the process's cgroup or any parent of it, of either cgroup
/// version, as `/proc/self/cgroup` names them.
fn cgroup_limit(read: &dyn Fn(&str) -> Option<String>) -> Option<u64> {
    let cgroups = read("/proc/self/cgroup")?;
    let mut lowest: Option<u64> = None;
    for line in cgroups.lines() {
        // hierarchy:controllers:path; version 2 has no controllers listed.
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (root, file) = if controllers.is_empty() {
            ("/sys/fs/cgroup", "memory.max")
        } else if controllers.split(',').any(|c| c == "memory") {
            ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        } else {
            continue;
        };
        // Inside a container the path may not exist below the mount, whose root is then the
        // container's own cgroup: walking up reaches it.
        let mut dir = path.trim_end_matches('/');
        loop {
            let limit = read(&format!("{root}{dir}/{file}"))
                .and_then(|text| text.trim().parse::<u64>().ok());
            if let Some(limit) = limit {
                lowest = Some(lowest.map_or(limit, |l| l.min(limit)));
            }
            match dir.rfind('/') {
                Some(at) => dir = &dir[..at],
                None => break,
            }
        }
    }
    lowest
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;
    const MIB: u64 = 1 << 20;

    #[test]
    fn each_job_gets_an_equal_share_between_the_floor_and_the_default() {
        let default = Limits::default();
        let memory = |jobs, available| Limits::for_jobs_within(jobs, available).memory as u64;
        // Plenty: the default.
        assert_eq!(memory(4, Some(64 * GIB)), default.memory as u64);
        assert_eq!(memory(1, Some(u64::MAX)), default.memory as u64);
        // A share.
        assert_eq!(memory(16, Some(8 * GIB)), 512 * MIB);
        assert_eq!(memory(3, Some(GIB)), GIB / 3);
        assert_eq!(memory(0, Some(512 * MIB)), 512 * MIB);
        assert_eq!(memory(1, Some(512 * MIB)), 512 * MIB);
        // Never below the floor.
        assert_eq!(memory(64, Some(GIB)), MIN_JOB_MEMORY as u64);
        assert_eq!(memory(1, Some(0)), MIN_JOB_MEMORY as u64);
        assert_eq!(memory(usize::MAX, Some(64 * GIB)), MIN_JOB_MEMORY as u64);
        // Unknown: the default.
        assert_eq!(Limits::for_jobs_within(32, None), default);
        // The instruction budget is the default's.
        assert_eq!(
            Limits::for_jobs_within(16, Some(GIB)).instructions,
            default.instructions
        );
    }

    #[test]
    fn available_memory_is_read_from_meminfo() {
        let meminfo =
            "MemTotal:       32768000 kB\nMemFree:         1000 kB\nMemAvailable:   16384000 kB\n";
        assert_eq!(mem_available(meminfo), Some(16_384_000 * 1024));
        assert_eq!(mem_available("MemTotal: 5 kB\n"), None);
        assert_eq!(mem_available("MemAvailable: lots kB\n"), None);
        assert_eq!(mem_available("MemAvailable: 5 MB\n"), None);
        assert_eq!(
            mem_available(&format!("MemAvailable: {} kB", u64::MAX)),
            None
        );
    }

    /// A file system of `files`, for `read`.
    fn files<'a>(files: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |path| {
            files
                .iter()
                .find(|(p, _)| *p == path)
                .map(|(_, text)| text.to_string())
        }
    }

    const MEMINFO: (&str, &str) = ("/proc/meminfo", "MemAvailable: 8388608 kB\n");

    #[test]
    fn a_lower_cgroup_limit_wins() {
        // Version 2, limited by a parent of the process's cgroup.
        let read = files(&[
            MEMINFO,
            ("/proc/self/cgroup", "0::/jobs/batch/one\n"),
            ("/sys/fs/cgroup/jobs/batch/one/memory.max", "max\n"),
            ("/sys/fs/cgroup/jobs/batch/memory.max", "2147483648\n"),
            ("/sys/fs/cgroup/jobs/memory.max", "4294967296\n"),
        ]);
        assert_eq!(available_memory(&read), Some(2 * GIB));
        // Version 1, in a container whose own cgroup is the mount's root.
        let read = files(&[
            MEMINFO,
            (
                "/proc/self/cgroup",
                "5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "1073741824\n",
            ),
        ]);
        assert_eq!(available_memory(&read), Some(GIB));
        // Limits above what is available, or none at all: what is available.
        let read = files(&[
            MEMINFO,
            ("/proc/self/cgroup", "4:memory:/\n0::/\n"),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("/sys/fs/cgroup/memory.max", "max\n"),
        ]);
        assert_eq!(available_memory(&read), Some(8 * GIB));
        assert_eq!(available_memory(&files(&[MEMINFO])), Some(8 * GIB));
        // No /proc/meminfo: unknown, whatever the cgroup says.
        let read = files(&[
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/memory.max", "1073741824\n"),
        ]);
        assert_eq!(available_memory(&read), None);
    }

    #[test]
    fn this_machine_is_read() {
        let known = available_memory(&|path| std::fs::read_to_string(path).ok());
        if cfg!(target_os = "linux") {
            assert!(known.is_some());
        }
        if let Some(bytes) = known {
            assert!(bytes > 0);
            // Far more jobs than memory: each gets the floor, which only a known amount gives.
            assert!(bytes / 1_000_000 < MIN_JOB_MEMORY as u64);
            assert_eq!(Limits::for_jobs(1_000_000).memory, MIN_JOB_MEMORY);
        }
    }
}
