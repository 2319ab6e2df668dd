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
