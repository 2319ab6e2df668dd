//! One test per rule of the fetch session cache (Kafka's FetchSession.scala semantics).

use super::*;

const T: Duration = Duration::from_secs(1);

fn key(topic: &str, partition: i32) -> PartitionKey {
    PartitionKey { topic: Arc::from(topic), partition }
}

fn part(topic: &str, partition: i32, offset: i64) -> FetchPartition {
    FetchPartition {
        key: key(topic, partition),
        fetch_offset: offset,
        log_start_offset: -1,
        max_bytes: 1024,
        current_leader_epoch: -1,
    }
}

fn req(session_id: i32, epoch: i32, partitions: Vec<FetchPartition>, forgotten: Vec<PartitionKey>) -> SessionRequest {
    SessionRequest { session_id, epoch, partitions, forgotten }
}

fn quiet(hw: i64) -> Answered {
    Answered { error_code: 0, has_records: false, high_watermark: hw, last_stable_offset: hw, log_start_offset: 0 }
}

fn data(hw: i64) -> Answered {
    Answered { has_records: true, ..quiet(hw) }
}

fn cache(slots: usize) -> FetchSessionCache {
    FetchSessionCache::new(slots, 1000, EVICTION)
}

/// A session of `n` partitions of topic `t` created at `now`; returns its id.
fn create(c: &mut FetchSessionCache, t: &str, n: i32, now: Instant) -> i32 {
    let parts = (0..n).map(|p| part(t, p, 0)).collect();
    let plan = c.begin(req(0, INITIAL_EPOCH, parts, vec![]), now).unwrap();
    let answered = vec![quiet(5); plan.partitions.len()];
    c.finish(&plan, &answered, now).unwrap().session_id
}

fn names(plan: &Plan) -> Vec<(String, i32)> {
    plan.partitions.iter().map(|p| (p.key.topic.to_string(), p.key.partition)).collect()
}

#[test]
fn final_epoch_without_session_is_a_sessionless_full_fetch() {
    let mut c = cache(10);
    let now = Instant::now();
    let plan = c.begin(req(0, FINAL_EPOCH, vec![part("a", 0, 3)], vec![]), now).unwrap();
    assert!(!plan.is_incremental());
    assert_eq!(plan.partitions, vec![part("a", 0, 3)]);
    let reply = c.finish(&plan, &[quiet(5)], now).unwrap();
    assert_eq!(reply, Reply { session_id: INVALID_SESSION_ID, include: vec![true] });
    assert!(c.is_empty());
}

#[test]
fn initial_epoch_creates_a_session_whose_next_epoch_is_one() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 2, now);
    assert!(id > 0);
    assert_eq!(c.cached_partitions(), 2);
    assert!(c.begin(req(id, 1, vec![], vec![]), now).unwrap().is_incremental());
}

#[test]
fn incremental_reads_the_whole_session_and_answers_only_what_changed() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 4, now);
    let plan = c.begin(req(id, 1, vec![], vec![]), now).unwrap();
    assert_eq!(plan.partitions.len(), 4);
    let error = Answered { error_code: 6, ..quiet(5) };
    let moved_start = Answered { log_start_offset: 2, ..quiet(5) };
    let reply = c.finish(&plan, &[quiet(5), data(6), error, moved_start], now).unwrap();
    assert_eq!(reply, Reply { session_id: id, include: vec![false, true, true, true] });
}

#[test]
fn incremental_includes_a_changed_high_watermark_or_last_stable_offset() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 2, now);
    let plan = c.begin(req(id, 1, vec![], vec![]), now).unwrap();
    let lso_moved = Answered { last_stable_offset: 4, ..quiet(5) };
    let reply = c.finish(&plan, &[quiet(7), lso_moved], now).unwrap();
    assert_eq!(reply.include, vec![true, true]);
    // What was answered is remembered: the same values again are left out.
    let plan = c.begin(req(id, 2, vec![], vec![]), now).unwrap();
    assert_eq!(c.finish(&plan, &[quiet(7), lso_moved], now).unwrap().include, vec![false, false]);
}

#[test]
fn an_error_forgets_the_high_watermark_so_the_recovered_partition_is_sent() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let plan = c.begin(req(id, 1, vec![], vec![]), now).unwrap();
    c.finish(&plan, &[Answered { error_code: 6, ..quiet(5) }], now).unwrap();
    let plan = c.begin(req(id, 2, vec![], vec![]), now).unwrap();
    assert_eq!(c.finish(&plan, &[quiet(5)], now).unwrap().include, vec![true]);
}

#[test]
fn unknown_session_id_is_fetch_session_id_not_found() {
    let mut c = cache(10);
    let err = c.begin(req(42, 1, vec![], vec![]), Instant::now()).unwrap_err();
    assert_eq!(err, FetchSessionError::NotFound(42));
    assert_eq!(err.code(), 70);
}

#[test]
fn wrong_epoch_is_invalid_fetch_session_epoch_and_keeps_the_session() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let err = c.begin(req(id, 2, vec![], vec![]), now).unwrap_err();
    assert_eq!(err, FetchSessionError::InvalidEpoch { id, expected: 1, got: 2 });
    assert_eq!(err.code(), 71);
    assert!(c.begin(req(id, 1, vec![], vec![]), now).is_ok());
}

#[test]
fn a_duplicate_request_between_begin_and_finish_is_invalid_fetch_session_epoch() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let first = c.begin(req(id, 1, vec![], vec![]), now).unwrap();
    let second = c.begin(req(id, 2, vec![], vec![]), now).unwrap();
    assert_eq!(c.finish(&first, &[quiet(5)], now).unwrap_err().code(), 71);
    assert!(c.finish(&second, &[quiet(5)], now).is_ok());
}

#[test]
fn final_epoch_with_a_session_id_closes_it_and_is_sessionless() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let plan = c.begin(req(id, FINAL_EPOCH, vec![part("b", 0, 0)], vec![]), now).unwrap();
    assert!(!c.contains(id));
    assert_eq!(c.cached_partitions(), 0);
    assert_eq!(c.finish(&plan, &[quiet(1)], now).unwrap().session_id, INVALID_SESSION_ID);
}

#[test]
fn initial_epoch_with_a_session_id_closes_it_and_creates_another() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let plan = c.begin(req(id, INITIAL_EPOCH, vec![part("b", 0, 0)], vec![]), now).unwrap();
    assert!(!c.contains(id));
    let new = c.finish(&plan, &[quiet(1)], now).unwrap().session_id;
    assert!(new > 0 && new != id);
    assert_eq!((c.len(), c.cached_partitions()), (1, 1));
}

#[test]
fn incremental_request_partitions_are_added_or_update_the_cached_fetch_offset() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let plan = c.begin(req(id, 1, vec![part("a", 0, 9), part("b", 0, 0)], vec![]), now).unwrap();
    assert_eq!(names(&plan), vec![("a".into(), 0), ("b".into(), 0)]);
    assert_eq!(plan.partitions[0].fetch_offset, 9);
    assert_eq!(c.cached_partitions(), 2);
    // A new partition was never answered: it is in the response whatever it says.
    assert_eq!(c.finish(&plan, &[quiet(5), quiet(5)], now).unwrap().include, vec![false, true]);
}

#[test]
fn forgotten_topics_leave_the_session() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 3, now);
    let plan = c.begin(req(id, 1, vec![], vec![key("a", 1)]), now).unwrap();
    assert_eq!(names(&plan), vec![("a".into(), 0), ("a".into(), 2)]);
    assert_eq!(c.cached_partitions(), 2);
}

#[test]
fn a_session_emptied_by_forgotten_topics_closes_and_the_fetch_is_sessionless() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    let plan = c.begin(req(id, 1, vec![], vec![key("a", 0)]), now).unwrap();
    assert!(!plan.is_incremental() && plan.partitions.is_empty());
    assert!(c.is_empty());
    assert_eq!(c.cached_partitions(), 0);
    assert_eq!(c.finish(&plan, &[], now).unwrap().session_id, INVALID_SESSION_ID);
}

#[test]
fn epoch_increments_per_request_and_wraps_to_one() {
    assert_eq!(next_epoch(INITIAL_EPOCH), 1);
    assert_eq!(next_epoch(41), 42);
    assert_eq!(next_epoch(i32::MAX), 1);
    assert_eq!(next_epoch(FINAL_EPOCH), FINAL_EPOCH);
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 1, now);
    for epoch in 1..5 {
        let plan = c.begin(req(id, epoch, vec![], vec![]), now).unwrap();
        c.finish(&plan, &[quiet(5)], now).unwrap();
    }
    assert_eq!(c.begin(req(id, 4, vec![], vec![]), now).unwrap_err().code(), 71);
}

#[test]
fn partitions_that_returned_data_move_to_the_end() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 3, now);
    let plan = c.begin(req(id, 1, vec![], vec![]), now).unwrap();
    c.finish(&plan, &[data(6), quiet(5), quiet(5)], now).unwrap();
    let plan = c.begin(req(id, 2, vec![], vec![]), now).unwrap();
    assert_eq!(names(&plan), vec![("a".into(), 1), ("a".into(), 2), ("a".into(), 0)]);
}

#[test]
fn a_full_cache_without_an_evictable_session_creates_no_session() {
    let mut c = cache(1);
    let now = Instant::now();
    create(&mut c, "a", 1, now);
    // The first session is recently created, so not evictable even by a bigger one.
    assert_eq!(create(&mut c, "b", 5, now + T), INVALID_SESSION_ID);
    assert_eq!(c.len(), 1);
}

#[test]
fn a_stale_session_is_evicted_for_a_new_one() {
    let mut c = cache(1);
    let now = Instant::now();
    let old = create(&mut c, "a", 5, now);
    // Finished long after it began: the cache is full of a session unused for over EVICTION.
    let plan = c.begin(req(0, INITIAL_EPOCH, vec![part("b", 0, 0)], vec![]), now).unwrap();
    let new = c.finish(&plan, &[quiet(1)], now + EVICTION + T).unwrap().session_id;
    assert!(new > 0 && !c.contains(old));
}

#[test]
fn a_bigger_session_evicts_the_smallest_session_not_recently_created() {
    let mut c = cache(2);
    let t0 = Instant::now();
    let small = create(&mut c, "a", 1, t0);
    let big = create(&mut c, "b", 3, t0);
    // Used within EVICTION of each other (never stale); at the last use both are older than
    // EVICTION, so evictable.
    let later = t0 + EVICTION + T;
    for (epoch, at) in [(1, t0 + EVICTION / 2), (2, later)] {
        for id in [small, big] {
            let plan = c.begin(req(id, epoch, vec![], vec![]), at).unwrap();
            let answered = vec![quiet(5); plan.partitions.len()];
            c.finish(&plan, &answered, at).unwrap();
        }
    }
    // Not bigger than the smallest: nothing is evicted.
    assert_eq!(create(&mut c, "c", 1, later + T), INVALID_SESSION_ID);
    let new = create(&mut c, "c", 2, later + T);
    assert!(new > 0 && !c.contains(small) && c.contains(big));
}

#[test]
fn sessions_idle_longer_than_the_eviction_time_expire() {
    let mut c = cache(10);
    let now = Instant::now();
    let id = create(&mut c, "a", 2, now);
    let later = now + EVICTION + T;
    assert_eq!(c.begin(req(id, 1, vec![], vec![]), later).unwrap_err().code(), 70);
    assert_eq!((c.len(), c.cached_partitions()), (0, 0));
}

#[test]
fn cached_partitions_are_bounded() {
    let mut c = FetchSessionCache::new(10, 4, EVICTION);
    let now = Instant::now();
    assert_eq!(create(&mut c, "a", 5, now), INVALID_SESSION_ID);
    let id = create(&mut c, "a", 3, now);
    assert_eq!(create(&mut c, "b", 2, now), INVALID_SESSION_ID);
    // Growing past the bound closes the session; the client starts over with a full fetch.
    let grow = vec![part("b", 0, 0), part("b", 1, 0)];
    assert_eq!(c.begin(req(id, 1, grow, vec![]), now).unwrap_err().code(), 70);
    assert_eq!((c.len(), c.cached_partitions()), (0, 0));
}
