//! Stored batches as a range of a segment file, for Fetch answers sent with sendfile(2) straight
//! from the page cache (as Apache Kafka does with FileRecords): the broker neither copies the
//! bytes into its memory nor holds them while a slow consumer takes them off the socket.
//!
//! A range always covers whole batches. Segment files are append-only below the high watermark,
//! a deleted or evicted segment stays readable through the `Arc<File>` the range holds, and a file
//! found shorter than the range while it is sent (a shared-disk peer truncated a torn tail)
//! closes that connection rather than sending something else.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};

use super::file_cache::Loan;

/// `len` bytes of a segment file from `pos`: whole batches.
#[derive(Debug, Clone)]
pub struct FileRange {
    pub file: Arc<File>,
    pub pos: u64,
    pub len: usize,
    /// The open-file cache's loan that lets this range keep its file open until it is sent;
    /// None when the loans were spent: the range must then be read into memory (file_cache).
    pub loan: Option<Arc<Loan>>,
}

impl FileRange {
    /// A range of `file` with no loan (tests, and ranges read into memory at once).
    pub fn unlent(file: Arc<File>, pos: u64, len: usize) -> FileRange {
        FileRange { file, pos, len, loan: None }
    }

    /// The bytes, read into memory (tests, and ranges too large to stand in for).
    pub fn load(&self) -> io::Result<Bytes> {
        let mut buf = BytesMut::zeroed(self.len);
        self.file.read_exact_at(&mut buf, self.pos)?;
        Ok(buf.freeze())
    }
}

/// Records read for a Fetch: in memory, or a range of a segment file.
#[derive(Debug, Clone)]
pub enum Stored {
    Mem(Bytes),
    File(FileRange),
}

impl Default for Stored {
    fn default() -> Self {
        Stored::Mem(Bytes::new())
    }
}

impl Stored {
    pub fn len(&self) -> usize {
        match self {
            Stored::Mem(b) => b.len(),
            Stored::File(r) => r.len,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes in memory (reads a file range).
    pub fn load(self) -> io::Result<Bytes> {
        match self {
            Stored::Mem(b) => Ok(b),
            Stored::File(r) => r.load(),
        }
    }
}

/// The largest range a response can carry as a stand-in (see [`stand_in`]); a larger one (a batch
/// above 64 MiB, or fetch_max_bytes raised above it) is read into memory instead.
pub const MAX_STAND_IN: usize = 64 << 20;

/// One reserved, never-written region of zeroes: calloc'd, so its pages are never touched and
/// cost no memory.
fn region() -> &'static [u8] {
    static REGION: OnceLock<&'static [u8]> = OnceLock::new();
    REGION.get_or_init(|| Box::leak(vec![0u8; MAX_STAND_IN].into_boxed_slice()))
}

/// A stand-in of `len` bytes for a file range in a response message: the encoder recognises it by
/// its address (protocol::frame::Segments) and sends the file range in its place, so the bytes
/// are never read. None when `len` exceeds [`MAX_STAND_IN`].
pub fn stand_in(len: usize) -> Option<Bytes> {
    (len <= MAX_STAND_IN).then(|| Bytes::from_static(&region()[..len]))
}

/// Whether `bytes` is a stand-in made by [`stand_in`].
pub fn is_stand_in(bytes: &[u8]) -> bool {
    !bytes.is_empty() && std::ptr::eq(bytes.as_ptr(), region().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stand_ins_are_recognised_by_address_and_cost_no_copy() {
        let s = stand_in(1000).unwrap();
        assert!(is_stand_in(&s));
        assert_eq!(s.len(), 1000);
        assert!(!is_stand_in(&vec![0u8; 1000]), "equal bytes elsewhere are not a stand-in");
        assert!(!is_stand_in(&s[1..]), "only a stand-in's own start");
        assert!(stand_in(MAX_STAND_IN + 1).is_none());
    }

    #[test]
    fn a_range_loads_its_bytes() {
        let dir = std::env::temp_dir().join(format!("kaas-range-{}", std::process::id()));
        std::fs::write(&dir, b"0123456789").unwrap();
        let r = FileRange::unlent(Arc::new(File::open(&dir).unwrap()), 3, 4);
        assert_eq!(&Stored::File(r).load().unwrap()[..], b"3456");
        std::fs::remove_file(&dir).unwrap();
    }
}
