//! The one error-code type of kaas: Kafka's own (`kafka-protocol`'s `ResponseError`, which knows
//! each code's number and whether clients retry it). Module errors (`TxnError`, `GroupError`,
//! `ProducerStateError`, ...) convert into it; only the wire sees the `i16`.

pub use kafka_protocol::error::ResponseError;

/// Kafka's NONE: the code of every success.
pub const NONE: i16 = 0;

/// The wire code of an outcome: NONE for `None`, the error's code otherwise.
pub fn code(error: Option<ResponseError>) -> i16 {
    error.map_or(NONE, |e| e.code())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_kafkas() {
        assert_eq!(code(None), 0);
        assert_eq!(code(Some(ResponseError::InvalidRecord)), 87);
        assert_eq!(ResponseError::KafkaStorageError.code(), 56);
        assert!(ResponseError::NotCoordinator.is_retriable());
    }
}
