//! What a panic means depends on the thread. On a connection thread actix drops the panicking
//! connection's task: that client's socket closes and everyone else is served. On a thread that
//! owns broker state (partition leaders, coordinator shards, the cluster view, fsync threads) it
//! would leave an actor whose address stays registered but never answers: Produce to it times
//! out and markers to it are retried forever. There the broker stops at once with a clear error
//! and exit code 70 instead; everything it acknowledged is on disk, so a restart (systemd,
//! Kubernetes) recovers from the files.

use std::cell::Cell;
use std::sync::Once;

/// Exit status after a panic on a state-owning thread (EX_SOFTWARE).
pub const PANIC_EXIT_CODE: i32 = 70;

thread_local! {
    static OWNS_STATE: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as owning broker state: a panic on it stops the broker.
pub fn mark_state_thread() {
    OWNS_STATE.with(|c| c.set(true));
}

/// Installs the hook once per process; the previous hook (the panic message) still runs first.
pub fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let thread = std::thread::current();
            let name = thread.name().unwrap_or("unnamed");
            if OWNS_STATE.with(|c| c.get()) {
                tracing::error!(
                    thread = name,
                    "panic on a thread that owns partitions or coordinator state: {info}; stopping the broker \
                     (exit {PANIC_EXIT_CODE}) so that it restarts from disk instead of serving with a dead actor"
                );
                std::process::exit(PANIC_EXIT_CODE);
            }
            tracing::error!(thread = name, "panic on a connection thread: {info}; that connection is closed");
        }));
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    const CHILD: &str = "KAAS_SUPERVISOR_TEST_CHILD";

    /// Runs this test binary again as a child that panics on a thread of the given kind.
    fn child_status(kind: &str) -> std::process::ExitStatus {
        let exe = std::env::current_exe().expect("test binary path");
        Command::new(exe)
            .args(["--exact", "actors::supervisor::tests::child_entry", "--nocapture", "--test-threads=1"])
            .env(CHILD, kind)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .expect("run child")
    }

    #[test]
    fn child_entry() {
        let Ok(kind) = std::env::var(CHILD) else { return };
        install_panic_hook();
        let worker = std::thread::spawn(move || {
            if kind == "state" {
                mark_state_thread();
            }
            panic!("planted panic on a {kind} thread");
        });
        assert!(worker.join().is_err());
        // A connection-thread panic must not stop the process: reaching here exits 0.
    }

    #[test]
    fn panic_on_a_state_thread_stops_the_broker() {
        assert_eq!(child_status("state").code(), Some(PANIC_EXIT_CODE));
    }

    #[test]
    fn panic_on_a_connection_thread_only_ends_that_task() {
        assert_eq!(child_status("connection").code(), Some(0));
    }
}
