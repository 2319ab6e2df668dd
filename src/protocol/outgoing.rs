//! A response on its way to the socket: encoded bytes, and for a Fetch answer the ranges of
//! segment files its records are in, sent with sendfile(2) between the encoded parts so the
//! broker never copies them into its memory (Apache Kafka's zero-copy transfer). Over TLS the
//! records must be encrypted, so they are read from the files in pieces and written through the
//! TLS stream (Apache Kafka loses zero-copy under TLS too).
//!
//! The Fetch message is encoded by kafka-protocol as usual, with a stand-in of the right length in
//! place of each file range (store::log::file_range::stand_in): length prefixes and everything
//! around the records come out exactly as if the bytes were there. [`Segments`], the buffer it is
//! encoded into, recognises a stand-in by its address when the encoder writes it, and cuts the
//! frame there instead of copying.

use std::io;
use std::ops::Range;
use std::os::fd::AsFd;

use bytes::buf::UninitSlice;
use bytes::{BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ApiKey, FetchResponse, RequestHeader};
use kafka_protocol::protocol::buf::ByteBufMut;
use kafka_protocol::protocol::Encodable;
use tokio::io::{AsyncWriteExt, Interest, WriteHalf};
use tokio::net::tcp::OwnedWriteHalf;
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::frame::{put_head, FrameError};
use crate::store::log::file_range::{is_stand_in, FileRange};
use crate::sys;

/// One piece of a response frame, in order.
#[derive(Debug)]
pub enum Part {
    Mem(Bytes),
    File(FileRange),
}

/// What the writer sends for one response.
#[derive(Debug)]
pub enum Outgoing {
    Frame(Bytes),
    Parts(Vec<Part>),
}

impl Outgoing {
    /// Bytes of the frame, file ranges included.
    pub fn frame_len(&self) -> usize {
        match self {
            Outgoing::Frame(b) => b.len(),
            Outgoing::Parts(p) => p
                .iter()
                .map(|p| match p {
                    Part::Mem(b) => b.len(),
                    Part::File(r) => r.len,
                })
                .sum(),
        }
    }

    /// Writes it all to a plain socket, the file ranges with sendfile; an error closes the
    /// connection.
    async fn write_plain(&self, wr: &mut OwnedWriteHalf) -> io::Result<()> {
        let parts = match self {
            Outgoing::Frame(b) => return wr.write_all(b).await,
            Outgoing::Parts(parts) => parts,
        };
        // One response in as few segments as the data allows: the short encoded parts wait for
        // the file data instead of going out alone (TCP_NODELAY is on for the connection).
        let sock: &TcpStream = wr.as_ref();
        cork(sock, true);
        let mut result = Ok(());
        for p in parts {
            result = match p {
                Part::Mem(b) => wr.write_all(b).await,
                Part::File(r) => send_file(wr.as_ref(), r).await,
            };
            if result.is_err() {
                break;
            }
        }
        cork(wr.as_ref(), false);
        result
    }

    /// Writes it all through TLS, the file ranges read in pieces of [`TLS_READ_PIECE`].
    async fn write_tls(&self, wr: &mut WriteHalf<TlsStream<TcpStream>>) -> io::Result<()> {
        let parts = match self {
            Outgoing::Frame(b) => return wr.write_all(b).await,
            Outgoing::Parts(parts) => parts,
        };
        let mut piece = Vec::new();
        for p in parts {
            match p {
                Part::Mem(b) => wr.write_all(b).await?,
                Part::File(r) => {
                    let mut done = 0usize;
                    while done < r.len {
                        let n = (r.len - done).min(TLS_READ_PIECE);
                        piece.resize(n, 0);
                        // A page-cache read of at most one piece on this connection's thread,
                        // as Kafka's network threads read records for TLS.
                        std::os::unix::fs::FileExt::read_exact_at(&*r.file, &mut piece, r.pos + done as u64)?;
                        wr.write_all(&piece).await?;
                        done += n;
                    }
                }
            }
        }
        wr.flush().await
    }
}

/// Bytes of records read from a segment file at once for a TLS connection.
pub const TLS_READ_PIECE: usize = 256 * 1024;

/// The writing half of a client connection.
pub enum Writer {
    Plain(OwnedWriteHalf),
    Tls(WriteHalf<TlsStream<TcpStream>>),
}

impl Writer {
    /// Writes a response; an error closes the connection.
    pub async fn send(&mut self, out: &Outgoing) -> io::Result<()> {
        match self {
            Writer::Plain(wr) => out.write_plain(wr).await,
            Writer::Tls(wr) => out.write_tls(wr).await,
        }
    }

    pub async fn shutdown(&mut self) {
        let _ = match self {
            Writer::Plain(wr) => wr.shutdown().await,
            Writer::Tls(wr) => wr.shutdown().await,
        };
    }
}

fn cork(sock: &TcpStream, on: bool) {
    if let Err(e) = sys::set_tcp_cork(sock.as_fd(), on) {
        tracing::debug!("TCP_CORK: {e}");
    }
}

/// sendfile(2) of `r` to the non-blocking socket, waiting for it to be writable.
async fn send_file(sock: &TcpStream, r: &FileRange) -> io::Result<()> {
    let end = r.pos + r.len as u64;
    let mut off = libc::off_t::try_from(r.pos).map_err(|_| io::Error::other("file position out of range"))?;
    loop {
        let left = end.saturating_sub(off as u64);
        if left == 0 {
            return Ok(());
        }
        sock.writable().await?;
        let sent = sock.try_io(Interest::WRITABLE, || {
            // The socket is borrowed and the file held by the range for the call.
            sys::sendfile(sock.as_fd(), &r.file, &mut off, left.min(1 << 30) as usize)
        });
        match sent {
            // The file ends before the range: it was truncated under us; never send other bytes.
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "segment file shorter than the fetched range"))
            }
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
    }
}

/// Encodes a Fetch answer whose records stand in for `files` (file ranges, see
/// store::log::file_range): the frame as parts with the ranges between them (protocol::outgoing).
pub fn encode_fetch_parts(
    header: &RequestHeader,
    response: &FetchResponse,
    files: Vec<FileRange>,
) -> Result<Vec<Part>, FrameError> {
    let version = header.request_api_version;
    let mut buf = Segments::new(files);
    put_head(&mut buf, header, ApiKey::Fetch.response_header_version(version))?;
    response.encode(&mut buf, version).map_err(|e| FrameError::Encode(e.to_string()))?;
    buf.finish().ok_or_else(|| FrameError::Encode("the response's records do not match its file ranges".into()))
}

/// The buffer a Fetch response is encoded into: encoded bytes in order, cut at every stand-in,
/// which is replaced by the next of the response's file ranges.
pub struct Segments {
    cur: BytesMut,
    parts: Vec<PartMut>,
    ranges: std::vec::IntoIter<FileRange>,
    /// A stand-in did not match the next range: the response cannot be sent as encoded.
    mismatch: bool,
}

enum PartMut {
    Mem(BytesMut),
    File(FileRange),
}

impl Segments {
    pub fn new(ranges: Vec<FileRange>) -> Segments {
        Segments { cur: BytesMut::with_capacity(256), parts: Vec::new(), ranges: ranges.into_iter(), mismatch: false }
    }

    /// The parts, with the frame's 4-byte length (a placeholder at the start of the first part)
    /// filled in; None if a stand-in and its range disagreed or a range was left over.
    pub fn finish(mut self) -> Option<Vec<Part>> {
        if self.mismatch || self.ranges.next().is_some() {
            return None;
        }
        if !self.cur.is_empty() {
            self.parts.push(PartMut::Mem(self.cur));
        }
        let total: usize = self
            .parts
            .iter()
            .map(|p| match p {
                PartMut::Mem(b) => b.len(),
                PartMut::File(r) => r.len,
            })
            .sum();
        let len = i32::try_from(total.checked_sub(4)?).ok()?;
        match self.parts.first_mut() {
            Some(PartMut::Mem(b)) if b.len() >= 4 => b[..4].copy_from_slice(&len.to_be_bytes()),
            _ => return None,
        }
        Some(
            self.parts
                .into_iter()
                .map(|p| match p {
                    PartMut::Mem(b) => Part::Mem(b.freeze()),
                    PartMut::File(r) => Part::File(r),
                })
                .collect(),
        )
    }
}

// SAFETY: every method hands the current BytesMut's own implementation through.
unsafe impl BufMut for Segments {
    fn remaining_mut(&self) -> usize {
        self.cur.remaining_mut()
    }

    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller's promise is passed on to the same buffer it wrote into.
        unsafe { self.cur.advance_mut(cnt) }
    }

    fn chunk_mut(&mut self) -> &mut UninitSlice {
        self.cur.chunk_mut()
    }

    fn put_slice(&mut self, src: &[u8]) {
        if !is_stand_in(src) {
            return self.cur.extend_from_slice(src);
        }
        match self.ranges.next() {
            Some(r) if r.len == src.len() => {
                let done = self.cur.split();
                self.parts.push(PartMut::Mem(done));
                self.parts.push(PartMut::File(r));
            }
            _ => self.mismatch = true,
        }
    }
}

// Offsets are within the current part: kafka-protocol seeks only inside a field it is writing
// (gaps for sizes), never across the records of a Fetch response.
impl ByteBufMut for Segments {
    fn offset(&self) -> usize {
        self.cur.len()
    }

    fn seek(&mut self, offset: usize) {
        self.cur.resize(offset, 0);
    }

    fn range(&mut self, r: Range<usize>) -> &mut [u8] {
        &mut self.cur[r]
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
    use kafka_protocol::messages::{ResponseKind, TopicName};

    use super::*;
    use crate::protocol::frame::encode_response;
    use crate::store::log::file_range::stand_in;

    fn response(records: [Bytes; 3]) -> FetchResponse {
        let mut t = FetchableTopicResponse::default();
        t.topic = TopicName("t".to_string().into());
        for (i, r) in records.into_iter().enumerate() {
            let mut p = PartitionData::default();
            p.partition_index = i as i32;
            p.high_watermark = 10;
            p.records = Some(r);
            t.partitions.push(p);
        }
        let mut resp = FetchResponse::default();
        resp.responses.push(t);
        resp
    }

    #[test]
    fn parts_with_their_file_ranges_are_the_frame_encoded_from_the_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let content: Vec<u8> = (0..5000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &content).unwrap();
        let file = Arc::new(std::fs::File::open(&path).unwrap());
        let a = FileRange::unlent(file.clone(), 100, 1000);
        let b = FileRange::unlent(file, 3000, 200);
        let in_memory = Bytes::from_static(b"in memory");
        for version in [4, 11, 12, 16] {
            let header = RequestHeader::default().with_request_api_version(version).with_correlation_id(7);
            let real = response([a.load().unwrap(), in_memory.clone(), b.load().unwrap()]);
            let want = encode_response(&header, ApiKey::Fetch, &ResponseKind::Fetch(real)).unwrap();
            let stood = response([stand_in(a.len).unwrap(), in_memory.clone(), stand_in(b.len).unwrap()]);
            let parts = encode_fetch_parts(&header, &stood, vec![a.clone(), b.clone()]).unwrap();
            assert_eq!(parts.iter().filter(|p| matches!(p, Part::File(_))).count(), 2);
            let mut got = Vec::new();
            for p in &parts {
                match p {
                    Part::Mem(m) => got.extend_from_slice(m),
                    Part::File(r) => got.extend_from_slice(&r.load().unwrap()),
                }
            }
            assert_eq!(got, &want[..], "v{version}");
            assert_eq!(Outgoing::Parts(parts).frame_len(), want.len());
        }
    }

    #[test]
    fn a_stand_in_without_its_range_is_refused() {
        let header = RequestHeader::default().with_request_api_version(12);
        let stood = response([stand_in(10).unwrap(), Bytes::new(), Bytes::new()]);
        assert!(encode_fetch_parts(&header, &stood, Vec::new()).is_err());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), [0u8; 64]).unwrap();
        let file = Arc::new(std::fs::File::open(dir.path().join("f")).unwrap());
        let wrong_len = FileRange::unlent(file, 0, 11);
        assert!(encode_fetch_parts(&header, &stood, vec![wrong_len]).is_err());
    }
}
