//! lazyfs: a FUSE passthrough view of a backing directory that remembers what was not fsynced
//! and forgets it on command, to test crash consistency as Jepsen's LazyFS does. A SIGKILL
//! keeps the page cache; this throws away what a power loss would.
//!
//! Usage: lazyfs --backing DIR --mount DIR --control SOCKET [--entries dir|own|path]
//!
//! Control: connect to the Unix socket SOCKET, send one command line, read one reply line:
//!   power-loss  drop everything not durable (see model.rs for what is durable);
//!               replies `ok files=.. dropped_bytes=.. restored_bytes=.. removed_entries=..
//!               restored_entries=..`
//!   pending     replies `ok files=<files with unsynced data> dirs=<dirs with unsynced entries>`
//!   unmount     replies `ok`, then unmounts and exits
//! The mount is live once the socket accepts connections.

mod fs;
mod inodes;
mod lazy;
mod model;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use fuser::{Config, MountOption};

use crate::fs::{LazyFs, State};
use crate::lazy::{Handles, Lazy};
use crate::model::EntryMode;

struct Args {
    backing: PathBuf,
    mount: PathBuf,
    control: PathBuf,
    mode: EntryMode,
}

fn parse_args() -> Result<Args, String> {
    let mut backing = None;
    let mut mount = None;
    let mut control = None;
    let mut mode = EntryMode::Own;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--backing" => backing = Some(PathBuf::from(value()?)),
            "--mount" => mount = Some(PathBuf::from(value()?)),
            "--control" => control = Some(PathBuf::from(value()?)),
            "--entries" => {
                mode = match value()?.as_str() {
                    "dir" => EntryMode::Dir,
                    "own" => EntryMode::Own,
                    "path" => EntryMode::Path,
                    other => return Err(format!("--entries dir|own|path, not {other}")),
                }
            }
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(Args {
        backing: backing.ok_or("--backing DIR is required")?,
        mount: mount.ok_or("--mount DIR is required")?,
        control: control.ok_or("--control SOCKET is required")?,
        mode,
    })
}

fn command(state: &Arc<Mutex<State>>, line: &str) -> String {
    let mut st = match state.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    match line.trim() {
        "power-loss" => match st.lazy.power_loss() {
            Ok(s) => format!(
                "ok files={} dropped_bytes={} restored_bytes={} removed_entries={} restored_entries={}",
                s.files_reverted, s.bytes_dropped, s.bytes_restored, s.entries_removed, s.entries_restored
            ),
            Err(e) => format!("error {e}"),
        },
        "pending" => {
            let (files, dirs) = st.lazy.pending();
            format!("ok files={files} dirs={dirs}")
        }
        other => format!("error unknown command {other:?}"),
    }
}

fn run(args: Args) -> Result<(), String> {
    let lazy =
        Lazy::new(args.backing.clone(), args.mode).map_err(|e| format!("backing {}: {e}", args.backing.display()))?;
    let state = Arc::new(Mutex::new(State { lazy, handles: Handles::default() }));
    let mut cfg = Config::default();
    cfg.mount_options = vec![MountOption::FSName("lazyfs".into()), MountOption::Subtype("lazyfs".into())];
    let session = fuser::spawn_mount(LazyFs { state: state.clone() }, &args.mount, &cfg)
        .map_err(|e| format!("mounting on {}: {e}", args.mount.display()))?;
    let _ = std::fs::remove_file(&args.control);
    let listener =
        UnixListener::bind(&args.control).map_err(|e| format!("control socket {}: {e}", args.control.display()))?;
    eprintln!(
        "lazyfs: {} mounted on {} (control {})",
        args.backing.display(),
        args.mount.display(),
        args.control.display()
    );
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { continue };
        let mut line = String::new();
        if BufReader::new(&conn).read_line(&mut line).is_err() {
            continue;
        }
        if line.trim() == "unmount" {
            let _ = writeln!(conn, "ok");
            break;
        }
        let reply = command(&state, &line);
        eprintln!("lazyfs: {} -> {reply}", line.trim());
        let _ = writeln!(conn, "{reply}");
    }
    let _ = std::fs::remove_file(&args.control);
    session.umount_and_join().map_err(|e| format!("unmount: {e}"))
}

fn main() -> ExitCode {
    let result = parse_args().and_then(run);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lazyfs: {e}");
            ExitCode::FAILURE
        }
    }
}
