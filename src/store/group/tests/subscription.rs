use super::*;

#[test]
fn reads_consumer_subscription_topics() {
    let mut m = vec![0, 1, 0, 0, 0, 2];
    for t in ["a", "bc"] {
        m.extend_from_slice(&(t.len() as i16).to_be_bytes());
        m.extend_from_slice(t.as_bytes());
    }
    m.extend_from_slice(&[0xff, 0xff, 0xff, 0xff]);
    assert_eq!(subscribed_topics(&m), Some(vec!["a".to_string(), "bc".to_string()]));
    assert_eq!(subscribed_topics(&[0, 1, 0x7f, 0, 0, 0]), None);
}
