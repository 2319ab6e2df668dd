// kafkajs 2.2.4 against kaas: admin (createTopics, fetchTopicMetadata, describeGroups,
// fetchOffsets), an idempotent producer, a consume-transform-produce loop with a transactional
// producer (send + sendOffsets + commit, one transaction aborted on purpose), and a
// read_committed consumer group that must see every transformed record exactly once and none
// of the aborted ones. Prints one JSON summary line; exits 1 when a check fails.
//
// Usage: node eos.js BOOTSTRAP PREFIX RECORDS
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const [bootstrap, prefix, recordsArg] = process.argv.slice(2);
const RECORDS = Number(recordsArg || 300);
const IN = `${prefix}-in`;
const OUT = `${prefix}-out`;
const GROUP = `${prefix}-ctp`;
const PARTITIONS = 3;

const kafka = new Kafka({
  clientId: 'kaas-kafkajs',
  brokers: [bootstrap],
  logLevel: logLevel.WARN,
  retry: { retries: 10 },
});

function withTimeout(promise, ms, what) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function main() {
  const errors = [];
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [IN, OUT].map((topic) => ({ topic, numPartitions: PARTITIONS, replicationFactor: 1 })),
  });
  const meta = await admin.fetchTopicMetadata({ topics: [IN, OUT] });
  for (const t of meta.topics) {
    if (t.partitions.length !== PARTITIONS) errors.push(`${t.name} has ${t.partitions.length} partitions`);
  }

  // Input through the idempotent producer.
  const input = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  await input.connect();
  const messages = [];
  for (let i = 0; i < RECORDS; i++) messages.push({ key: `k${i}`, value: `v${i}` });
  for (let i = 0; i < messages.length; i += 50) {
    await input.send({ topic: IN, acks: -1, messages: messages.slice(i, i + 50) });
  }
  await input.disconnect();

  // Consume-transform-produce: every input record becomes one output record, in a transaction
  // that also commits the group's offsets; the first batch is also written in an aborted
  // transaction before the committed one.
  const txProducer = kafka.producer({
    transactionalId: `${prefix}-tx`,
    idempotent: true,
    maxInFlightRequests: 1,
  });
  await txProducer.connect();
  const consumer = kafka.consumer({ groupId: GROUP, readUncommitted: false, sessionTimeout: 10000 });
  await consumer.connect();
  await consumer.subscribe({ topic: IN, fromBeginning: true });
  let transformed = 0;
  let aborted = 0;
  let done;
  const finished = new Promise((resolve) => { done = resolve; });
  await consumer.run({
    autoCommit: false,
    eachBatch: async ({ batch, heartbeat }) => {
      if (batch.messages.length === 0) return;
      const out = batch.messages.map((m) => ({ key: m.key, value: `t-${m.value.toString()}` }));
      if (aborted === 0) {
        const junk = await txProducer.transaction();
        await junk.send({ topic: OUT, messages: out.map((m) => ({ key: m.key, value: 'aborted' })) });
        await junk.abort();
        aborted += out.length;
      }
      const txn = await txProducer.transaction();
      try {
        await txn.send({ topic: OUT, messages: out });
        const next = (BigInt(batch.lastOffset()) + 1n).toString();
        await txn.sendOffsets({
          consumerGroupId: GROUP,
          topics: [{ topic: batch.topic, partitions: [{ partition: batch.partition, offset: next }] }],
        });
        await txn.commit();
      } catch (e) {
        await txn.abort();
        throw e;
      }
      transformed += out.length;
      await heartbeat();
      if (transformed >= RECORDS) done();
    },
  });
  await withTimeout(finished, 60000, 'consume-transform-produce');
  await consumer.disconnect();
  await txProducer.disconnect();

  const offsets = await admin.fetchOffsets({ groupId: GROUP, topics: [IN] });
  const committed = offsets[0].partitions.reduce((sum, p) => sum + Number(p.offset), 0);
  if (committed !== RECORDS) errors.push(`committed offsets add up to ${committed}, not ${RECORDS}`);
  const described = await admin.describeGroups([GROUP]);
  const groupState = described.groups[0].state;

  // read_committed: every transformed record once, no aborted one.
  const reader = kafka.consumer({ groupId: `${prefix}-reader`, readUncommitted: false });
  await reader.connect();
  await reader.subscribe({ topic: OUT, fromBeginning: true });
  const seen = new Map();
  let abortedSeen = 0;
  let readAll;
  const readDone = new Promise((resolve) => { readAll = resolve; });
  await reader.run({
    eachMessage: async ({ message }) => {
      const v = message.value.toString();
      if (v === 'aborted') abortedSeen++;
      else seen.set(v, (seen.get(v) || 0) + 1);
      if (seen.size >= RECORDS) readAll();
    },
  });
  try {
    await withTimeout(readDone, 60000, 'read_committed read');
  } catch (e) {
    errors.push(e.message);
  }
  // A little longer: anything after the last expected record would be a duplicate.
  await new Promise((r) => setTimeout(r, 1000));
  await reader.disconnect();
  await admin.disconnect();

  const duplicates = [...seen.values()].filter((n) => n > 1).length;
  if (seen.size !== RECORDS) errors.push(`read ${seen.size} distinct records, not ${RECORDS}`);
  if (duplicates) errors.push(`${duplicates} records read more than once`);
  if (abortedSeen) errors.push(`${abortedSeen} aborted records read with read_committed`);
  const summary = {
    ok: errors.length === 0, transformed, aborted, committed, distinct: seen.size, duplicates,
    aborted_seen: abortedSeen, group_state: groupState, errors,
  };
  console.log(JSON.stringify(summary));
  process.exit(summary.ok ? 0 : 1);
}

main().catch((e) => {
  console.log(JSON.stringify({ ok: false, errors: [String(e && e.stack || e)] }));
  process.exit(1);
});
