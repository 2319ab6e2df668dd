//! One request frame (the bytes after the 4-byte length) through what the Connection actor does
//! before dispatch: `protocol::decode` (header, version gate, body, the hand-written
//! WriteTxnMarkers v1/v2 decoder), then the produce handler's batch check and the encoding of
//! the header an error answer would carry. No input may panic, hang or allocate beyond
//! `-rss_limit_mb` / `-malloc_limit_mb` (the vendored kafka-protocol caps array capacity by the
//! bytes left; this target is what confirms it).
#![no_main]

use bytes::Bytes;
use kaas::protocol::frame::{encode_response, MIN_REQUEST_LEN};
use kaas::protocol::handlers::cluster::api_versions;
use kaas::protocol::{decode, Request};
use kaas::store::batch;
use kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // FrameReader refuses shorter frames before decode sees them.
    if data.len() < MIN_REQUEST_LEN {
        return;
    }
    match decode(Bytes::copy_from_slice(data)) {
        Ok(d) => {
            if let Request::Kafka(r) = &d.request {
                if let RequestKind::Produce(p) = r.as_ref() {
                    for records in
                        p.topic_data.iter().flat_map(|t| &t.partition_data).filter_map(|p| p.records.as_ref())
                    {
                        if let Ok(h) = batch::validate_single(records) {
                            // What the produce handler derives from a valid header.
                            let _ = (h.is_transactional(), h.total_size());
                        }
                    }
                }
            }
            // The answer to an unsupported ApiVersions is encoded with whatever header came in.
            let resp = ResponseKind::ApiVersions(api_versions::unsupported());
            let mut header = d.header;
            header.request_api_version = 0;
            let _ = encode_response(&header, ApiKey::ApiVersions, &resp);
        }
        Err((Some(mut header), _)) => {
            header.request_api_version = 0;
            let resp = ResponseKind::ApiVersions(api_versions::unsupported());
            let _ = encode_response(&header, ApiKey::ApiVersions, &resp);
        }
        Err((None, _)) => {}
    }
});
