//! The program's memory: the peak it used (for the summary), and what it may take, which sets
//! `--memory-limit`'s default.

use std::path::Path;

/// The process's peak resident set size (VmHWM in /proc/self/status), on Linux.
pub fn peak_rss() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    kib_field(&status, "VmHWM")
}

/// The value in bytes of a `KEY:   N kB` line of a /proc file's `text`.
fn kib_field(text: &str, key: &str) -> Option<u64> {
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// `bytes` in MiB for the log, "1425 MiB".
pub fn mib(bytes: u128) -> String {
    format!("{:.0} MiB", bytes as f64 / (1u64 << 20) as f64)
}

/// `--memory-limit`'s default in bytes: half the memory `free` to the process (of the device,
/// with `--target cuda`), and at least `floor` (the library's 2 GiB, all there is where `free`
/// is unknown).
pub fn default_limit(free: Option<u64>, floor: usize) -> usize {
    free.map_or(floor, |free| {
        usize::try_from(free / 2).unwrap_or(usize::MAX).max(floor)
    })
}

/// The free memory of the device `--target cuda` runs on (on the simulator the host's
/// MemAvailable, which the host's [`free_memory`] never exceeds), or `None` without one.
pub fn free_device_memory() -> Option<u64> {
    ufunc::cuda::device_memory().ok().map(|m| m.free as u64)
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
    let available = kib_field(meminfo, "MemAvailable")?;
    Some(cgroup_room(cgroups, root).map_or(available, |room| room.min(available)))
}

/// A control-group hierarchy's memory files: the limit, the use, and the key in `memory.stat`
/// of the page cache the kernel can drop.
struct CgroupFiles {
    limit: &'static str,
    usage: &'static str,
    cache: &'static str,
}

const CGROUP_V2: CgroupFiles = CgroupFiles {
    limit: "memory.max",
    usage: "memory.current",
    cache: "inactive_file",
};

const CGROUP_V1: CgroupFiles = CgroupFiles {
    limit: "memory.limit_in_bytes",
    usage: "memory.usage_in_bytes",
    cache: "total_inactive_file",
};

/// The least room (limit less use) of the process's memory control group and those above it:
/// cgroup v2's (the line `0::PATH`) or v1's under `memory/` (`N:memory:PATH`). The use leaves
/// out the page cache the kernel can drop, as MemAvailable does and as kubelet counts it: a
/// job that has just read its movies is not full. A group without a limit ("max", or v1's
/// near-2^63) or whose files are not there (a path outside a container's view) leaves no
/// bound.
fn cgroup_room(cgroups: &str, root: &Path) -> Option<u64> {
    let mut least: Option<u64> = None;
    for line in cgroups.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let (top, files) = if controllers.is_empty() {
            (root.to_path_buf(), &CGROUP_V2)
        } else if controllers.split(',').any(|c| c == "memory") {
            (root.join("memory"), &CGROUP_V1)
        } else {
            continue;
        };
        let mut group = top.join(path.trim_start_matches('/'));
        loop {
            if let Some(room) = room_of(&group, files) {
                least = Some(least.map_or(room, |least| least.min(room)));
            }
            if group == top || !group.pop() {
                break;
            }
        }
    }
    least
}

/// One control group's room, where it has a limit.
fn room_of(group: &Path, files: &CgroupFiles) -> Option<u64> {
    let read = |name: &str| std::fs::read_to_string(group.join(name)).ok();
    let limit: u64 = read(files.limit)?.trim().parse().ok()?;
    let usage: u64 = read(files.usage)?.trim().parse().ok()?;
    let cache: u64 = read("memory.stat")
        .and_then(|stat| {
            stat.lines().find_map(|l| {
                let (key, value) = l.split_once(' ')?;
                (key == files.cache).then(|| value.trim().parse().ok())?
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(cache)))
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

    /// A fresh directory, removed when dropped (after a failed assertion too).
    struct Scratch(std::path::PathBuf);

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn scratch(tag: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!("ufunc-memory-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    #[test]
    fn free_memory_is_the_least_of_the_system_and_the_control_groups_room() {
        // cgroup v2 as Slurm lays it out: the job limited to 4 GiB with 1 GiB in use, its
        // step and the root unlimited.
        let v2 = scratch("v2");
        let v2 = v2.0.as_path();
        write(v2, "memory.max", "max\n");
        write(v2, "memory.current", "123\n");
        write(
            v2,
            "system.slice/job_7/memory.max",
            &format!("{}\n", 4 * GIB),
        );
        write(
            v2,
            "system.slice/job_7/memory.current",
            &format!("{}\n", GIB),
        );
        write(v2, "system.slice/job_7/step_0/memory.max", "max\n");
        write(v2, "system.slice/job_7/step_0/memory.current", "5\n");
        let line = "0::/system.slice/job_7/step_0\n";
        assert_eq!(free_memory_in(MEMINFO, line, v2), Some(3 * GIB));
        // Page cache the kernel can drop is not use: 0.75 GiB of the job's 1 GiB is inactive
        // file pages, which leaves 3.75 GiB of room.
        let stat = format!(
            "anon 1000\nfile 900\ninactive_file {}\nactive_file 5\n",
            3 * GIB / 4
        );
        write(v2, "system.slice/job_7/memory.stat", &stat);
        assert_eq!(free_memory_in(MEMINFO, line, v2), Some(15 * GIB / 4));
        // A limit above what the system has available leaves the system's (8 GiB).
        write(
            v2,
            "system.slice/job_7/memory.max",
            &format!("{}\n", 64 * GIB),
        );
        assert_eq!(free_memory_in(MEMINFO, line, v2), Some(8 * GIB));
        // cgroup v1, this machine's layout: a group without a limit (v1's near-2^63), and
        // one above it limited to 6 GiB with 2.5 GiB in use, 0.5 GiB of it inactive cache.
        let v1 = scratch("v1");
        let v1 = v1.0.as_path();
        let unlimited = "9223372036854771712\n";
        write(
            v1,
            "memory/process_api/memory.limit_in_bytes",
            &format!("{}\n", 6 * GIB),
        );
        write(
            v1,
            "memory/process_api/memory.usage_in_bytes",
            &format!("{}\n", 5 * GIB / 2),
        );
        write(
            v1,
            "memory/process_api/c41/memory.limit_in_bytes",
            unlimited,
        );
        write(
            v1,
            "memory/process_api/c41/memory.usage_in_bytes",
            "1931325440\n",
        );
        let lines = "5:devices:/\n4:memory:/process_api/c41\n0::/\n";
        assert_eq!(free_memory_in(MEMINFO, lines, v1), Some(7 * GIB / 2));
        let stat = format!(
            "cache 1\ninactive_file 2\ntotal_inactive_file {}\n",
            GIB / 2
        );
        write(v1, "memory/process_api/memory.stat", &stat);
        assert_eq!(free_memory_in(MEMINFO, lines, v1), Some(4 * GIB));
        // No control group to read (a container's view, another OS's layout): the system's.
        assert_eq!(free_memory_in(MEMINFO, "0::/gone\n", v1), Some(8 * GIB));
        assert_eq!(free_memory_in(MEMINFO, "", v1), Some(8 * GIB));
        assert_eq!(free_memory_in("MemTotal: 1 kB\n", "", v1), None);
    }

    #[test]
    fn the_default_limit_is_half_the_free_memory_and_at_least_the_floor() {
        let floor = 2 << 30;
        assert_eq!(default_limit(Some(64 * GIB), floor), 32 << 30);
        assert_eq!(default_limit(Some(3 * GIB), floor), floor);
        assert_eq!(default_limit(None, floor), floor);
    }

    #[test]
    fn this_machines_free_memory_is_read_where_the_kernel_says_it() {
        let meminfo = fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let free = free_memory();
        assert_eq!(
            free.is_some(),
            meminfo.contains("MemAvailable:"),
            "{free:?}"
        );
    }
}
