//! The consumer protocol ("consumer" protocol type) as far as the coordinator reads it: the
//! topics of a member's Subscription (Kafka's ConsumerProtocol.deserializeSubscription), which
//! OffsetDelete needs to refuse subscribed topics (KIP-496).

/// Topics of a consumer-protocol Subscription (int16 version, then an array of int16-length
/// strings); None when it cannot be read (then treated as subscribed to everything).
pub fn subscribed_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut pos = 2usize;
    let read = |pos: &mut usize, n: usize| -> Option<&[u8]> {
        let s = metadata.get(*pos..*pos + n)?;
        *pos += n;
        Some(s)
    };
    let count = i32::from_be_bytes(read(&mut pos, 4)?.try_into().ok()?);
    if count < 0 || count as usize > metadata.len() {
        return None;
    }
    let mut topics = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let len = i16::from_be_bytes(read(&mut pos, 2)?.try_into().ok()?);
        if len < 0 {
            return None;
        }
        topics.push(String::from_utf8(read(&mut pos, len as usize)?.to_vec()).ok()?);
    }
    Some(topics)
}

/// A member's Subscription (Kafka's ConsumerProtocolSubscription, versions 0-3; a later version
/// is read as version 3, as Kafka's deserializer does).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Subscription {
    pub topics: Vec<String>,
    /// v1+: the partitions the member owns, by topic name.
    pub owned_partitions: Vec<(String, Vec<i32>)>,
    /// v3+
    pub rack_id: Option<String>,
}

/// Why embedded consumer-protocol bytes could not be read (Kafka's SchemaException).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Malformed;

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        let end = self.pos.checked_add(n).ok_or(Malformed)?;
        let s = self.buf.get(self.pos..end).ok_or(Malformed)?;
        self.pos = end;
        Ok(s)
    }
    fn i16(&mut self) -> Result<i16, Malformed> {
        Ok(i16::from_be_bytes(self.take(2)?.try_into().map_err(|_| Malformed)?))
    }
    fn i32(&mut self) -> Result<i32, Malformed> {
        Ok(i32::from_be_bytes(self.take(4)?.try_into().map_err(|_| Malformed)?))
    }
    fn nullable_string(&mut self) -> Result<Option<String>, Malformed> {
        let len = self.i16()?;
        if len < 0 {
            return Ok(None);
        }
        let bytes = self.take(len as usize)?;
        String::from_utf8(bytes.to_vec()).map(Some).map_err(|_| Malformed)
    }
    fn string(&mut self) -> Result<String, Malformed> {
        self.nullable_string()?.ok_or(Malformed)
    }
    /// An array count, bounded by the bytes left (each element takes at least `min` bytes).
    fn count(&mut self, min: usize) -> Result<usize, Malformed> {
        let n = self.i32()?;
        if n < 0 || (n as usize).saturating_mul(min) > self.buf.len().saturating_sub(self.pos) {
            return Err(Malformed);
        }
        Ok(n as usize)
    }
    fn skip_nullable_bytes(&mut self) -> Result<(), Malformed> {
        let len = self.i32()?;
        if len >= 0 {
            self.take(len as usize)?;
        }
        Ok(())
    }
    fn topic_partitions(&mut self) -> Result<Vec<(String, Vec<i32>)>, Malformed> {
        let n = self.count(6)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let topic = self.string()?;
            let k = self.count(4)?;
            let parts = (0..k).map(|_| self.i32()).collect::<Result<Vec<i32>, Malformed>>()?;
            out.push((topic, parts));
        }
        Ok(out)
    }
}

/// Kafka's ConsumerProtocol.deserializeConsumerProtocolSubscription.
pub fn deserialize_subscription(metadata: &[u8]) -> Result<Subscription, Malformed> {
    let mut r = Reader { buf: metadata, pos: 0 };
    let version = r.i16()?;
    if version < 0 {
        return Err(Malformed);
    }
    let n = r.count(2)?;
    let topics = (0..n).map(|_| r.string()).collect::<Result<Vec<String>, Malformed>>()?;
    r.skip_nullable_bytes()?;
    let mut sub = Subscription { topics, ..Default::default() };
    if version >= 1 {
        sub.owned_partitions = r.topic_partitions()?;
    }
    if version >= 2 {
        r.i32()?; // generation id
    }
    if version >= 3 {
        sub.rack_id = r.nullable_string()?;
    }
    Ok(sub)
}

/// Kafka's ConsumerProtocol.deserializeConsumerProtocolAssignment: the assigned partitions by
/// topic name. No bytes at all (a member that never got an assignment) is an empty assignment.
pub fn deserialize_assignment(bytes: &[u8]) -> Result<Vec<(String, Vec<i32>)>, Malformed> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let mut r = Reader { buf: bytes, pos: 0 };
    if r.i16()? < 0 {
        return Err(Malformed);
    }
    r.topic_partitions()
}

/// The ConsumerProtocolAssignment version the coordinator writes (Kafka's highest, 3; versions
/// 0-3 share one layout).
pub const ASSIGNMENT_VERSION: i16 = 3;

/// Kafka's ConsumerProtocol.serializeAssignment: version, the partitions by topic, no user data.
pub fn serialize_assignment(partitions: &[(String, Vec<i32>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&ASSIGNMENT_VERSION.to_be_bytes());
    out.extend_from_slice(&(partitions.len() as i32).to_be_bytes());
    for (topic, parts) in partitions {
        out.extend_from_slice(&(topic.len() as i16).to_be_bytes());
        out.extend_from_slice(topic.as_bytes());
        out.extend_from_slice(&(parts.len() as i32).to_be_bytes());
        for p in parts {
            out.extend_from_slice(&p.to_be_bytes());
        }
    }
    out.extend_from_slice(&(-1i32).to_be_bytes());
    out
}
