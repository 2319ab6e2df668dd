//! A blocking connection that reports a closed or broken connection as a value (a broker that
//! drops the connection where the other answers is a divergence, not a harness crash), and
//! the setup requests: ApiVersions, FindCoordinator, CreateTopics with a wait for leadership,
//! DeleteTopics.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

pub struct Conn {
    port: u16,
    stream: Option<TcpStream>,
    correlation: i32,
    /// (user, password) a SASL_PLAINTEXT listener is logged in to with PLAIN on every
    /// (re)connection (the authz mode); None: a PLAINTEXT listener.
    login: Option<(String, String)>,
}

pub type WireResult<T> = Result<T, String>;

impl Conn {
    pub fn new(port: u16) -> Conn {
        Conn { port, stream: None, correlation: 0, login: None }
    }

    /// A connection that logs in as `user` (SaslHandshake v1 PLAIN, SaslAuthenticate v2) each
    /// time it connects.
    pub fn with_login(port: u16, user: &str, password: &str) -> Conn {
        Conn { login: Some((user.to_string(), password.to_string())), ..Conn::new(port) }
    }

    /// The user it logs in as, if any.
    pub fn user(&self) -> Option<&str> {
        self.login.as_ref().map(|(u, _)| u.as_str())
    }

    fn stream(&mut self) -> WireResult<&mut TcpStream> {
        if self.stream.is_none() {
            let s = TcpStream::connect(("127.0.0.1", self.port)).map_err(|e| format!("connect: {e}"))?;
            s.set_read_timeout(Some(Duration::from_secs(60))).map_err(|e| e.to_string())?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            self.stream = Some(s);
            if let Some((user, password)) = self.login.clone() {
                if let Err(e) = self.authenticate(&user, &password) {
                    self.stream = None;
                    return Err(format!("login: {e}"));
                }
            }
        }
        self.stream.as_mut().ok_or_else(|| "no stream".to_string())
    }

    /// SASL/PLAIN on a fresh connection: SaslHandshake v1 naming PLAIN, then SaslAuthenticate
    /// v2 with `\0user\0password`.
    fn authenticate(&mut self, user: &str, password: &str) -> WireResult<()> {
        let mut hs = SaslHandshakeRequest::default();
        hs.mechanism = str_bytes("PLAIN");
        let r: SaslHandshakeResponse = self.call(ApiKey::SaslHandshake, 1, hs)?;
        if r.error_code != 0 {
            return Err(format!("SaslHandshake error {}", r.error_code));
        }
        let mut auth = SaslAuthenticateRequest::default();
        auth.auth_bytes = Bytes::from(format!("\0{user}\0{password}").into_bytes());
        let r: SaslAuthenticateResponse = self.call(ApiKey::SaslAuthenticate, 2, auth)?;
        if r.error_code != 0 {
            return Err(format!("SaslAuthenticate error {} ({:?})", r.error_code, r.error_message));
        }
        Ok(())
    }

    /// Sends an encoded body and returns the response body; on any I/O problem the connection
    /// is dropped (the next call reconnects) and the problem returned.
    pub fn call_raw(&mut self, key: ApiKey, version: i16, body: &[u8]) -> WireResult<Bytes> {
        let r = self.exchange(key, version, body);
        if r.is_err() {
            self.stream = None;
        }
        r
    }

    fn exchange(&mut self, key: ApiKey, version: i16, body: &[u8]) -> WireResult<Bytes> {
        self.correlation += 1;
        let correlation = self.correlation;
        let header = RequestHeader::default()
            .with_request_api_key(key as i16)
            .with_request_api_version(version)
            .with_correlation_id(correlation)
            .with_client_id(Some(StrBytes::from_static_str("kaas-conformance")));
        let mut msg = BytesMut::new();
        header.encode(&mut msg, key.request_header_version(version)).map_err(|e| e.to_string())?;
        msg.extend_from_slice(body);
        let mut frame = BytesMut::new();
        frame.put_i32(msg.len() as i32);
        frame.extend_from_slice(&msg);
        let s = self.stream()?;
        s.write_all(&frame).map_err(|e| format!("write: {e}"))?;
        let mut len = [0u8; 4];
        s.read_exact(&mut len).map_err(|e| format!("connection closed: {e}"))?;
        let len = i32::from_be_bytes(len);
        if !(0..=64 << 20).contains(&len) {
            return Err(format!("response length {len}"));
        }
        let mut buf = vec![0u8; len as usize];
        s.read_exact(&mut buf).map_err(|e| format!("response body: {e}"))?;
        let mut buf = Bytes::from(buf);
        let rh = ResponseHeader::decode(&mut buf, key.response_header_version(version)).map_err(|e| e.to_string())?;
        if rh.correlation_id != correlation {
            return Err(format!("correlation id {} for {correlation}", rh.correlation_id));
        }
        Ok(buf)
    }

    pub fn call<Req, Resp>(&mut self, key: ApiKey, version: i16, req: Req) -> WireResult<Resp>
    where
        Req: Into<RequestKind>,
        Resp: Decodable,
    {
        let mut body = BytesMut::new();
        req.into().encode(&mut body, version).map_err(|e| format!("encode: {e}"))?;
        let mut buf = self.call_raw(key, version, &body)?;
        let resp = Resp::decode(&mut buf, version).map_err(|e| format!("decode: {e}"))?;
        if buf.remaining() != 0 {
            return Err("response has trailing bytes".to_string());
        }
        Ok(resp)
    }
}

pub fn topic_name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

pub fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// The broker's advertised (min, max) version per API key.
pub fn api_versions(c: &mut Conn) -> WireResult<HashMap<i16, (i16, i16)>> {
    let mut req = ApiVersionsRequest::default();
    req.client_software_name = str_bytes("kaas-conformance");
    req.client_software_version = str_bytes("1");
    let resp: ApiVersionsResponse = c.call(ApiKey::ApiVersions, 3, req)?;
    if resp.error_code != 0 {
        return Err(format!("ApiVersions error {}", resp.error_code));
    }
    Ok(resp.api_keys.iter().map(|k| (k.api_key, (k.min_version, k.max_version))).collect())
}

/// Asks for a coordinator until one answers NONE (Apache Kafka creates `__consumer_offsets`
/// and `__transaction_state` on the first lookup).
pub fn await_coordinator(c: &mut Conn, key: &str, key_type: i8, within: Duration) -> WireResult<()> {
    let deadline = Instant::now() + within;
    loop {
        let mut req = FindCoordinatorRequest::default();
        req.key = str_bytes(key);
        req.key_type = key_type;
        let last = match c.call::<_, FindCoordinatorResponse>(ApiKey::FindCoordinator, 3, req) {
            Ok(r) if r.error_code == 0 => return Ok(()),
            Ok(r) => format!("error {}", r.error_code),
            Err(e) => e,
        };
        if Instant::now() > deadline {
            return Err(format!("no coordinator for {key} (type {key_type}): {last}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Creates `name` with `partitions` partitions and waits until every partition answers
/// ListOffsets (its leader is ready).
pub fn create_topic(c: &mut Conn, name: &str, partitions: i32) -> WireResult<()> {
    use kafka_protocol::messages::create_topics_request::CreatableTopic;
    let mut t = CreatableTopic::default();
    t.name = topic_name(name);
    t.num_partitions = partitions;
    t.replication_factor = 1;
    let mut req = CreateTopicsRequest::default();
    req.topics = vec![t];
    req.timeout_ms = 30_000;
    let resp: CreateTopicsResponse = c.call(ApiKey::CreateTopics, 5, req)?;
    let code = resp.topics.first().map(|t| t.error_code).unwrap_or(-2);
    if code != 0 {
        return Err(format!("CreateTopics {name}: error {code}"));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let codes = list_offsets_codes(c, name, partitions)?;
        if codes.iter().all(|&e| e == 0) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(format!("topic {name} not ready: {codes:?}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn list_offsets_codes(c: &mut Conn, name: &str, partitions: i32) -> WireResult<Vec<i16>> {
    let req = crate::common::latest_offsets_request(topic_name(name), partitions);
    let resp: ListOffsetsResponse = c.call(ApiKey::ListOffsets, 7, req)?;
    let codes: Vec<i16> = resp.topics.iter().flat_map(|t| t.partitions.iter().map(|p| p.error_code)).collect();
    Ok(if codes.len() == partitions as usize { codes } else { vec![-2] })
}

pub fn delete_topic(c: &mut Conn, name: &str) -> WireResult<()> {
    let mut req = DeleteTopicsRequest::default();
    req.topic_names = vec![topic_name(name)];
    req.timeout_ms = 30_000;
    let _: DeleteTopicsResponse = c.call(ApiKey::DeleteTopics, 4, req)?;
    Ok(())
}
