//! The program's memory: the peak it used (for the summary), and what it may take, which sets
//! `--memory-limit`'s default.

use std::path::Path;

/// The process's peak resident set size (VmHWM in /proc/self/status), on Linux.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `--memory-limit`'s default on the host's targets, in bytes: half the memory `free` to the
/// process, and at least `floor` (the library's 2 GiB, all there is where `free` is unknown).
pub fn default_limit(free: Option<u64>, floor: usize) -> usize {
    free.map_or(floor, |free| {
        usize::try_from(free / 2).unwrap_or(usize::MAX).max(floor)
    })
}

/// The memory free to this process in bytes, on Linux: the system's available memory
/// (MemAvailable), or less where the process's control group (a Slurm job's, a container's)
/// or one above it is limited closer to its use. `None` elsewhere.
pub fn free_memory() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    free_memory_in(&meminfo, &cgroups, Path::new("/sys/fs/cgroup"))
}

/// [`free_memory`] from the text of /proc/meminfo and /proc/self/cgroup, and the control
/// groups' files under `root`.
fn free_memory_in(meminfo: &str, cgroups: &str, root: &Path) -> Option<u64> {
    let kib: u64 = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let available = kib.saturating_mul(1024);
    Some(cgroup_room(cgroups, root).map_or(available, |room| room.min(available)))
}

/// The least room (limit less use) of the process's memory control group and those above it:
/// cgroup v2's `memory.max` and `memory.current` (the line `0::PATH`), or v1's
/// `memory.limit_in_bytes` and `memory.usage_in_bytes` under `memory/` (`N:memory:PATH`). A
/// group without a limit ("max", or v1's near-2^63) or whose files are not there (a path
/// outside a container's view) leaves no bound.
fn cgroup_room(cgroups: &str, root: &Path) -> Option<u64> {
    let mut least: Option<u64> = None;
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (top, limit, usage) = if controllers.is_empty() {
            (root.to_path_buf(), "memory.max", "memory.current")
        } else if controllers.split(',').any(|c| c == "memory") {
            (
                root.join("memory"),
                "memory.limit_in_bytes",
                "memory.usage_in_bytes",
            )
        } else {
            continue;
        };
        let mut group = top.join(path.trim_start_matches('/'));
        loop {
            let read = |name: &str| -> Option<u64> {
                std::fs::read_to_string(group.join(name))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            if let (Some(limit), Some(usage)) = (read(limit), read(usage)) {
                let room = limit.saturating_sub(usage);
                least = Some(least.map_or(room, |least| least.min(room)));
            }
            if group == top || !group.pop() {
                break;
            }
        }
    }
    least
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    const GIB: u64 = 1 << 30;
    const MEMINFO: &str = "MemTotal:       32000000 kB\nMemFree:         1000000 kB\n\
                           MemAvailable:    8388608 kB\nBuffers:          100 kB\n";

    fn write(root: &Path, file: &str, text: &str) {
        let path = root.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn scratch(tag: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("ufunc-memory-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn free_memory_is_the_least_of_the_system_and_the_control_groups_room() {
        // cgroup v2 as Slurm lays it out: the job limited to 4 GiB with 1 GiB in use, its
        // step and the root unlimited.
        let v2 = scratch("v2");
        write(&v2, "memory.max", "max\n");
        write(&v2, "memory.current", "123\n");
        write(
            &v2,
            "system.slice/job_7/memory.max",
            &format!("{}\n", 4 * GIB),
        );
        write(
            &v2,
            "system.slice/job_7/memory.current",
            &format!("{}\n", GIB),
        );
        write(&v2, "system.slice/job_7/step_0/memory.max", "max\n");
        write(&v2, "system.slice/job_7/step_0/memory.current", "5\n");
        let line = "0::/system.slice/job_7/step_0\n";
        assert_eq!(free_memory_in(MEMINFO, line, &v2), Some(3 * GIB));
        // A limit above what the system has available leaves the system's (8 GiB).
        write(
            &v2,
            "system.slice/job_7/memory.max",
            &format!("{}\n", 64 * GIB),
        );
        assert_eq!(free_memory_in(MEMINFO, line, &v2), Some(8 * GIB));
        // cgroup v1, this machine's layout: a group without a limit (v1's near-2^63), and
        // one above it limited to 6 GiB with 2.5 GiB in use.
        let v1 = scratch("v1");
        let unlimited = "9223372036854771712\n";
        write(
            &v1,
            "memory/process_api/memory.limit_in_bytes",
            &format!("{}\n", 6 * GIB),
        );
        write(
            &v1,
            "memory/process_api/memory.usage_in_bytes",
            &format!("{}\n", 5 * GIB / 2),
        );
        write(
            &v1,
            "memory/process_api/c41/memory.limit_in_bytes",
            unlimited,
        );
        write(
            &v1,
            "memory/process_api/c41/memory.usage_in_bytes",
            "1931325440\n",
        );
        let lines = "5:devices:/\n4:memory:/process_api/c41\n0::/\n";
        assert_eq!(free_memory_in(MEMINFO, lines, &v1), Some(7 * GIB / 2));
        // No control group to read (a container's view, another OS's layout): the system's.
        assert_eq!(free_memory_in(MEMINFO, "0::/gone\n", &v1), Some(8 * GIB));
        assert_eq!(free_memory_in(MEMINFO, "", &v1), Some(8 * GIB));
        assert_eq!(free_memory_in("MemTotal: 1 kB\n", "", &v1), None);
        for dir in [v1, v2] {
            fs::remove_dir_all(dir).unwrap();
        }
    }

    #[test]
    fn the_default_limit_is_half_the_free_memory_and_at_least_the_floor() {
        let floor = 2 << 30;
        assert_eq!(default_limit(Some(64 * GIB), floor), 32 << 30);
        assert_eq!(default_limit(Some(3 * GIB), floor), floor);
        assert_eq!(default_limit(None, floor), floor);
    }

    #[test]
    fn this_machines_free_memory_is_read_on_linux() {
        let free = free_memory();
        assert_eq!(free.is_some(), cfg!(target_os = "linux"), "{free:?}");
        assert!(free.is_none_or(|f| f > 0));
    }
}
