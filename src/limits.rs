//! Process limits set at start-up. Kafka's packaging advises a high open-file limit (nofile);
//! kaas keeps one open file per log segment, so it raises its soft RLIMIT_NOFILE to the hard
//! limit before it opens anything.

use std::io;

use crate::sys;

/// rlim_t is u64 on 64-bit Linux but not on every target.
#[allow(clippy::unnecessary_cast)]
fn to_u64(v: libc::rlim_t) -> u64 {
    v as u64
}

/// The open-file limits (soft, hard).
pub fn nofile() -> io::Result<(u64, u64)> {
    let lim = sys::nofile_limit()?;
    Ok((to_u64(lim.rlim_cur), to_u64(lim.rlim_max)))
}

/// Raises the soft open-file limit to the hard limit. Returns (soft before, soft now).
pub fn raise_nofile() -> io::Result<(u64, u64)> {
    let mut lim = sys::nofile_limit()?;
    let before = to_u64(lim.rlim_cur);
    // An unlimited hard limit still cannot take the soft one past the kernel's fs.nr_open.
    let target = if lim.rlim_max == libc::RLIM_INFINITY {
        std::fs::read_to_string("/proc/sys/fs/nr_open")
            .ok()
            .and_then(|s| s.trim().parse::<libc::rlim_t>().ok())
            .unwrap_or(1 << 20)
    } else {
        lim.rlim_max
    };
    if lim.rlim_cur >= target {
        return Ok((before, before));
    }
    lim.rlim_cur = target;
    sys::set_nofile_limit(&lim)?;
    Ok((before, to_u64(lim.rlim_cur)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_open_file_limit_is_raised_to_the_hard_limit() {
        let (_, now) = raise_nofile().unwrap();
        let (soft, hard) = nofile().unwrap();
        assert_eq!((now, soft), (hard, hard));
    }
}
