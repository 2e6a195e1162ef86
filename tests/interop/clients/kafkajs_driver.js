// kafkajs peer driver: the same command line and JSON-lines output as driver_common.py.
//   node kafkajs_driver.js BOOTSTRAP STEPS [--topic T] [--count N] [--timeout-s S]
'use strict';

const { Kafka, logLevel } = require('kafkajs');

const CLIENT = 'kafkajs';
const STEPS = ['metadata', 'create', 'produce', 'consume'];

function parseArgs(argv) {
  const positional = [];
  const opts = { topic: 'interop', count: 3, timeoutS: 10 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--topic') opts.topic = argv[++i];
    else if (a === '--count') opts.count = Number(argv[++i]);
    else if (a === '--timeout-s') opts.timeoutS = Number(argv[++i]);
    else positional.push(a);
  }
  if (positional.length !== 2) throw new Error('usage: BOOTSTRAP STEPS [--topic T] [--count N] [--timeout-s S]');
  const steps = positional[1].split(',');
  for (const s of steps) if (!STEPS.includes(s)) throw new Error(`unknown step ${s}`);
  return { bootstrap: positional[0], steps, ...opts, deadline: Date.now() + opts.timeoutS * 1000 };
}

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

const remainingMs = (args) => Math.max(100, args.deadline - Date.now());
const values = (args) => Array.from({ length: args.count }, (_, i) => `${CLIENT}-${i}`);

function client(args) {
  return new Kafka({
    clientId: `kw-interop-${CLIENT}`,
    brokers: [args.bootstrap],
    connectionTimeout: 3000,
    requestTimeout: remainingMs(args),
    retry: { retries: 3, initialRetryTime: 100, maxRetryTime: 1000 },
    logLevel: logLevel.NOTHING,
  });
}

async function metadata(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    const cluster = await admin.describeCluster();
    const topics = await admin.listTopics();
    emit('metadata', {
      brokers: cluster.brokers.map((b) => [b.nodeId, b.host, b.port]).sort(),
      topics: topics.sort(),
    });
  } finally {
    await admin.disconnect();
  }
}

async function create(args) {
  const admin = client(args).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      topics: [{ topic: args.topic, numPartitions: 1, replicationFactor: 1 }],
      timeout: remainingMs(args),
    });
  } finally {
    await admin.disconnect();
  }
  emit('created', { topic: args.topic });
}

async function produce(args) {
  const producer = client(args).producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const meta = await producer.send({
      topic: args.topic,
      messages: values(args).map((value, i) => ({ key: `k${i}`, value })),
      timeout: remainingMs(args),
    });
    // One batch: kafkajs reports the base offset of each partition's batch.
    const offsets = [];
    for (const m of meta) {
      for (let i = 0; i < args.count; i++) offsets.push(Number(m.baseOffset) + i);
    }
    emit('produced', {
      topic: args.topic,
      partition: [...new Set(meta.map((m) => m.partition))].sort(),
      offsets,
    });
  } finally {
    await producer.disconnect();
  }
}

async function consume(args) {
  const consumer = client(args).consumer({
    groupId: `kw-interop-${CLIENT}-${args.topic}`,
    sessionTimeout: 6000,
    heartbeatInterval: 1000,
    rebalanceTimeout: 6000,
  });
  await consumer.connect();
  const got = [];
  try {
    await consumer.subscribe({ topics: [args.topic], fromBeginning: true });
    await new Promise((resolve) => {
      const timer = setTimeout(resolve, remainingMs(args));
      consumer.run({
        autoCommit: false,
        eachMessage: async ({ message }) => {
          got.push(message.value.toString());
          if (got.length >= args.count) {
            clearTimeout(timer);
            resolve();
          }
        },
      }).catch((err) => {
        clearTimeout(timer);
        resolve(err);
      });
    });
  } finally {
    await consumer.disconnect();
  }
  emit('consumed', { topic: args.topic, values: got });
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const functions = { metadata, create, produce, consume };
  // A client stuck past its own timeouts must not hold the test up.
  setTimeout(() => {
    emit('error', { step: 'watchdog', message: `gave up after ${args.timeoutS} s` });
    process.exit(1);
  }, args.timeoutS * 1000 + 1000).unref();
  for (const step of args.steps) {
    try {
      await functions[step](args);
    } catch (err) {
      emit('error', { step, message: `${err.name}: ${err.message}` });
      process.stderr.write(`${err.stack}\n`);
      process.exit(1);
    }
  }
  emit('done');
  process.exit(0);
}

main();
