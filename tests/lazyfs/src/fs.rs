//! The FUSE adapter: translates kernel requests into `Lazy` operations. Attributes and entries
//! are never cached by the kernel (TTL 0) and files are opened without FOPEN_KEEP_CACHE, so
//! after a power loss the next reader sees the reverted backing directory.

use std::ffi::OsStr;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::{FileExt, MetadataExt, PermissionsExt};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo, LockOwner, OpenFlags,
    RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs,
    ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::lazy::{Handles, Lazy};
use crate::model::Ino;

const TTL: Duration = Duration::ZERO;

pub struct State {
    pub lazy: Lazy,
    pub handles: Handles,
}

#[derive(Clone)]
pub struct LazyFs {
    pub state: Arc<Mutex<State>>,
}

fn errno(e: io::Error) -> Errno {
    Errno::from_i32(e.raw_os_error().unwrap_or(libc::EIO))
}

fn kind(m: &fs::Metadata) -> FileType {
    FileType::from_std(m.file_type()).unwrap_or(FileType::RegularFile)
}

fn time(secs: i64, nsecs: i64) -> SystemTime {
    if secs >= 0 {
        UNIX_EPOCH + Duration::new(secs as u64, nsecs as u32)
    } else {
        UNIX_EPOCH
    }
}

fn attr(ino: Ino, m: &fs::Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(ino),
        size: m.size(),
        blocks: m.blocks(),
        atime: time(m.atime(), m.atime_nsec()),
        mtime: time(m.mtime(), m.mtime_nsec()),
        ctime: time(m.ctime(), m.ctime_nsec()),
        crtime: time(m.ctime(), m.ctime_nsec()),
        kind: kind(m),
        perm: (m.mode() & 0o7777) as u16,
        nlink: m.nlink() as u32,
        uid: m.uid(),
        gid: m.gid(),
        rdev: m.rdev() as u32,
        blksize: m.blksize() as u32,
        flags: 0,
    }
}

impl LazyFs {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

impl State {
    fn meta(&self, ino: Ino, fh: Option<FileHandle>) -> io::Result<fs::Metadata> {
        if let Some((f, _)) = fh.and_then(|h| self.handles.files.get(&h.0)) {
            return f.metadata();
        }
        fs::symlink_metadata(self.lazy.abs(&self.lazy.path_of(ino)?))
    }

    /// Runs `op` on an open handle's file (or, without one, on the file opened by path).
    fn with_file<T>(
        &mut self,
        ino: Ino,
        fh: Option<FileHandle>,
        op: impl FnOnce(&mut Lazy, &File) -> io::Result<T>,
    ) -> io::Result<T> {
        if let Some((f, _)) = fh.and_then(|h| self.handles.files.get(&h.0)) {
            return op(&mut self.lazy, f);
        }
        let f = self.lazy.open(ino, libc::O_RDWR)?;
        op(&mut self.lazy, &f)
    }
}

impl Filesystem for LazyFs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.lock().lazy.lookup(parent.0, name) {
            Ok((ino, m)) => reply.entry(&TTL, &attr(ino, &m), Generation(0)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.lock().meta(ino.0, fh) {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut st = self.lock();
        let result = (|| {
            if let Some(size) = size {
                st.with_file(ino.0, fh, |lazy, f| lazy.truncate(ino.0, f, size))?;
            }
            if let Some(mode) = mode {
                let path = st.lazy.abs(&st.lazy.path_of(ino.0)?);
                fs::set_permissions(path, fs::Permissions::from_mode(mode & 0o7777))?;
            }
            st.meta(ino.0, fh)
        })();
        match result {
            Ok(m) => reply.attr(&TTL, &attr(ino.0, &m)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn mkdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let mut st = self.lock();
        let result = st.lazy.mkdir(parent.0, name, mode & !umask).and_then(|ino| Ok((ino, st.meta(ino, None)?)));
        match result {
            Ok((ino, m)) => reply.entry(&TTL, &attr(ino, &m), Generation(0)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.lock().lazy.unlink(parent.0, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.lock().lazy.unlink(parent.0, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        match self.lock().lazy.link(ino.0, newparent.0, newname) {
            Ok((ino, m)) => reply.entry(&TTL, &attr(ino, &m), Generation(0)),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        match self.lock().lazy.rename(parent.0, name, newparent.0, newname, flags.bits()) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let mut st = self.lock();
        match st.lazy.open(ino.0, flags.0) {
            Ok(f) => {
                let sync = flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0;
                let fh = st.handles.insert(f, sync);
                reply.opened(FileHandle(fh), FopenFlags::empty());
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut st = self.lock();
        match st.lazy.create(parent.0, name, mode & !umask & 0o7777, flags) {
            Ok((ino, f)) => match f.metadata() {
                Ok(m) => {
                    let sync = flags & (libc::O_SYNC | libc::O_DSYNC) != 0;
                    let fh = st.handles.insert(f, sync);
                    reply.created(&TTL, &attr(ino, &m), Generation(0), FileHandle(fh), FopenFlags::empty());
                }
                Err(e) => reply.error(errno(e)),
            },
            Err(e) => reply.error(errno(e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let st = self.lock();
        let Some((f, _)) = st.handles.files.get(&fh.0) else { return reply.error(Errno::EBADF) };
        let mut buf = vec![0u8; size as usize];
        let mut got = 0;
        while got < buf.len() {
            match f.read_at(&mut buf[got..], offset + got as u64) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) => return reply.error(errno(e)),
            }
        }
        reply.data(&buf[..got]);
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut st = self.lock();
        let st = &mut *st;
        let Some((f, sync)) = st.handles.files.get(&fh.0) else { return reply.error(Errno::EBADF) };
        match st.lazy.write(ino.0, f, offset, data) {
            Ok(n) => {
                if *sync {
                    st.lazy.fsync_file(ino.0);
                }
                reply.written(n as u32)
            }
            Err(e) => reply.error(errno(e)),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.lock().handles.files.remove(&fh.0);
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        // fdatasync counts as fsync: on ext4 it also commits a new file's size and entry.
        self.lock().lazy.fsync_file(ino.0);
        reply.ok();
    }

    fn opendir(&self, _req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let mut st = self.lock();
        let entries = match st.lazy.list(ino.0) {
            Ok(e) => e,
            Err(e) => return reply.error(errno(e)),
        };
        let dots = [(ino.0, FileType::Directory, OsStr::new(".")), (ino.0, FileType::Directory, OsStr::new(".."))];
        let all = dots.into_iter().chain(
            entries
                .iter()
                .map(|(n, i, t)| (*i, FileType::from_std(*t).unwrap_or(FileType::RegularFile), n.as_os_str())),
        );
        for (i, (child, kind, name)) in all.enumerate().skip(offset as usize) {
            if reply.add(INodeNo(child), (i + 1) as u64, kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        match self.lock().lazy.fsync_dir(ino.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(e)),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let st = self.lock();
        let path = st.lazy.abs(std::path::Path::new(""));
        let Ok(c) = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()) else {
            return reply.error(Errno::EIO);
        };
        let mut s: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: c is a valid NUL-terminated path and s a valid out pointer.
        if unsafe { libc::statvfs(c.as_ptr(), &mut s) } != 0 {
            return reply.error(errno(io::Error::last_os_error()));
        }
        reply.statfs(
            s.f_blocks,
            s.f_bfree,
            s.f_bavail,
            s.f_files,
            s.f_ffree,
            s.f_bsize as u32,
            s.f_namemax as u32,
            s.f_frsize as u32,
        );
    }

    fn access(&self, _req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        reply.ok();
    }
}
