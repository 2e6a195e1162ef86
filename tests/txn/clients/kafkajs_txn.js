// kafkajs in the transactions scenario of common.py: the same command line and JSON-lines output.
//   node kafkajs_txn.js BOOTSTRAP --topic T --source S --group G --txn-id X [--count N]
//        [--partitions P] [--timeout-s S]
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const CLIENT = 'kafkajs';
const OFFSET_A = 5;
const OFFSET_C = 9;
const SETTLE_MS = 500;

function parseArgs(argv) {
  const opts = { count: 10, partitions: 2, timeoutS: 60 };
  const positional = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--topic') opts.topic = argv[++i];
    else if (a === '--source') opts.source = argv[++i];
    else if (a === '--group') opts.group = argv[++i];
    else if (a === '--txn-id') opts.txnId = argv[++i];
    else if (a === '--count') opts.count = Number(argv[++i]);
    else if (a === '--partitions') opts.partitions = Number(argv[++i]);
    else if (a === '--timeout-s') opts.timeoutS = Number(argv[++i]);
    else positional.push(a);
  }
  opts.bootstrap = positional[0];
  opts.deadline = Date.now() + opts.timeoutS * 1000;
  return opts;
}

function emit(event, fields) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

function records(opts, phase) {
  const out = [];
  for (let i = 0; i < opts.count; i++) out.push([i % opts.partitions, `k${i}`, `${CLIENT}-${phase}-${i}`]);
  return out;
}

async function consume(kafka, opts, isolation, expected) {
  const consumer = kafka.consumer({
    groupId: `${opts.group}-${isolation}`,
    readUncommitted: isolation === 'read_uncommitted',
  });
  const got = [];
  await consumer.connect();
  await consumer.subscribe({ topic: opts.topic, fromBeginning: true });
  let settleAt = null;
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      got.push([partition, Number(message.offset), message.value.toString()]);
    },
  });
  while (Date.now() < opts.deadline && (settleAt === null || Date.now() < settleAt)) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (settleAt === null && got.length >= expected) settleAt = Date.now() + SETTLE_MS;
  }
  await consumer.disconnect();
  return got;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  const kafka = new Kafka({ clientId: `kw-txn-${CLIENT}`, brokers: opts.bootstrap.split(','), logLevel: logLevel.NOTHING });
  const producer = kafka.producer({ transactionalId: opts.txnId, idempotent: true, maxInFlightRequests: 1 });
  await producer.connect();
  const committed = [];
  const aborted = [];
  for (const [phase, offset] of [['A', OFFSET_A], ['B', null], ['C', OFFSET_C]]) {
    const txn = await producer.transaction();
    const batch = records(opts, phase);
    for (const [partition, key, value] of batch) {
      await txn.send({ topic: opts.topic, messages: [{ key, value, partition }] });
    }
    if (offset !== null) {
      await txn.sendOffsets({
        consumerGroupId: opts.group,
        topics: [{ topic: opts.source, partitions: [{ partition: 0, offset: String(offset) }] }],
      });
      await txn.commit();
      for (const [p, , v] of batch) committed.push([p, v]);
    } else {
      await txn.abort();
      for (const [p, , v] of batch) aborted.push([p, v]);
    }
  }
  await producer.disconnect();
  emit('transacted', { committed, aborted });
  emit('consumed', { isolation: 'read_committed', records: await consume(kafka, opts, 'read_committed', committed.length) });
  emit('consumed', { isolation: 'read_uncommitted', records: await consume(kafka, opts, 'read_uncommitted', 3 * opts.count) });
  const admin = kafka.admin();
  await admin.connect();
  const [topic] = await admin.fetchOffsets({ groupId: opts.group, topics: [opts.source] });
  await admin.disconnect();
  const zero = topic.partitions.find((p) => p.partition === 0);
  emit('committed', { offset: Number(zero.offset) });
  emit('done', {});
}

main().then(() => process.exit(0), (err) => {
  emit('error', { step: 'scenario', message: String(err && err.stack ? err.stack : err) });
  process.exit(1);
});
