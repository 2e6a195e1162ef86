// kafkajs peer driver: the same command line and JSON-lines output as driver_common.py (no `group`
// step).
//   node kafkajs_driver.js BOOTSTRAP STEPS [--topic T] [--count N] [--timeout-s S] [--partitions P]
//        [--compression none|gzip|snappy|lz4|zstd] [--headers] [--value-size B] [--golden] [--group G]
//        [--security JSON]   (TLS and SASL: see driver_common.py)
// kafkajs compresses with gzip itself; snappy and lz4 come from the codec packages in package.json
// (kafkajs-snappy: pure JS; kafkajs-lz4: on the native `lz4` addon, built by `npm ci`), and zstd
// from a five-line codec below on the native `zstd-napi` addon (the published kafkajs zstd plugins
// do not load: @kafkajs/zstd's addon no longer compiles against Node 20 headers, and
// @sensejs/kafkajs-zstd-support's CommonJS build references a missing `__importDefault`).
'use strict';

const { Kafka, logLevel, CompressionTypes, CompressionCodecs } = require('kafkajs');

const CLIENT = 'kafkajs';
const STEPS = ['metadata', 'create', 'produce', 'consume', 'group'];
const COMPRESSION = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};

// Register a codec plugin only when it is asked for: a missing or broken plugin then fails just
// that codec's step (as an error event naming it), not every run of the driver.
function registerCodec(name) {
  if (name === 'snappy') CompressionCodecs[CompressionTypes.Snappy] = require('kafkajs-snappy');
  else if (name === 'lz4') {
    const LZ4Codec = require('kafkajs-lz4');
    CompressionCodecs[CompressionTypes.LZ4] = new LZ4Codec().codec;
  } else if (name === 'zstd') CompressionCodecs[CompressionTypes.ZSTD] = zstdCodec;
}

function zstdCodec() {
  const zstd = require('zstd-napi');
  const compressor = new zstd.Compressor();
  const decompressor = new zstd.Decompressor();
  return {
    compress: async (encoder) => compressor.compress(encoder.buffer),
    decompress: async (buffer) => decompressor.decompress(buffer),
  };
}

function parseArgs(argv) {
  const positional = [];
  const opts = {
    topic: 'interop', count: 3, timeoutS: 10, partitions: 1, compression: 'none', headers: false,
    valueSize: 0, group: null, golden: false, security: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--topic') opts.topic = argv[++i];
    else if (a === '--count') opts.count = Number(argv[++i]);
    else if (a === '--timeout-s') opts.timeoutS = Number(argv[++i]);
    else if (a === '--partitions') opts.partitions = Number(argv[++i]);
    else if (a === '--compression') opts.compression = argv[++i];
    else if (a === '--headers') opts.headers = true;
    else if (a === '--value-size') opts.valueSize = Number(argv[++i]);
    else if (a === '--group') opts.group = argv[++i];
    else if (a === '--golden') opts.golden = true;
    else if (a === '--security') opts.security = JSON.parse(argv[++i]);
    else if (a === '--batch') ++i; // only the group step uses it
    else positional.push(a);
  }
  if (positional.length !== 2) throw new Error('usage: BOOTSTRAP STEPS [OPTIONS]');
  if (!(opts.compression in COMPRESSION)) throw new Error(`unknown compression ${opts.compression}`);
  const steps = positional[1].split(',');
  for (const s of steps) if (!STEPS.includes(s)) throw new Error(`unknown step ${s}`);
  return { bootstrap: positional[0], steps, ...opts, deadline: Date.now() + opts.timeoutS * 1000 };
}

function pad(value, size) {
  if (value.length >= size) return value;
  const filler = '-abcdefghijklmnopqrstuvwxyz0123456789'.repeat(Math.floor(size / 37) + 1);
  return value + filler.slice(0, size - value.length);
}

const text = (buf) => (buf === null || buf === undefined ? null : buf.toString());
const groupId = (args) => args.group || `kw-interop-${CLIENT}-${args.topic}`;

function emit(event, fields = {}) {
  process.stdout.write(JSON.stringify({ event, ...fields }) + '\n');
}

const remainingMs = (args) => Math.max(100, args.deadline - Date.now());
// The golden-capture workload (--golden, see driver_common.py): fixed values, one header, timestamps.
const GOLDEN_TIMESTAMP_MS = 1700000000000;
const GOLDEN_REQUEST_TIMEOUT_MS = 10000; // fixed, so that re-recorded Produce frames are the same bytes
const values = (args) => Array.from({ length: args.count },
  (_, i) => (args.golden ? `value-${i}-`.repeat(20) : pad(`${CLIENT}-${i}`, args.valueSize)));

// --security as kafkajs takes it: `ssl` (the authority, and the client's certificate when given)
// and `sasl` (the mechanism in lower case).
function security(args) {
  const s = args.security;
  if (!s) return {};
  const out = {};
  if (s.protocol === 'SSL' || s.protocol === 'SASL_SSL') {
    const fs = require('fs');
    out.ssl = { ca: [fs.readFileSync(s.ca, 'utf-8')] };
    if (s.cert) Object.assign(out.ssl, { cert: fs.readFileSync(s.cert, 'utf-8'), key: fs.readFileSync(s.key, 'utf-8') });
  }
  if (s.protocol.startsWith('SASL_')) {
    out.sasl = { mechanism: s.mechanism.toLowerCase(), username: s.username, password: s.password };
  }
  return out;
}

function client(args) {
  return new Kafka({
    clientId: `kw-interop-${CLIENT}`,
    brokers: [args.bootstrap],
    ...security(args),
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
      topics: [{ topic: args.topic, numPartitions: args.partitions, replicationFactor: 1 }],
      timeout: remainingMs(args),
    });
  } finally {
    await admin.disconnect();
  }
  emit('created', { topic: args.topic });
}

async function produce(args) {
  registerCodec(args.compression);
  const producer = client(args).producer({ allowAutoTopicCreation: false });
  await producer.connect();
  try {
    const messages = values(args).map((value, i) => {
      const message = { key: `k${i}`, value };
      if (args.partitions > 1) message.partition = i % args.partitions;
      if (args.golden) {
        message.headers = { h: `x${i}` };
        message.timestamp = String(GOLDEN_TIMESTAMP_MS + i);
      } else if (args.headers) message.headers = { i: String(i), client: CLIENT };
      return message;
    });
    const meta = await producer.send({
      topic: args.topic,
      messages,
      compression: COMPRESSION[args.compression],
      timeout: args.golden ? GOLDEN_REQUEST_TIMEOUT_MS : remainingMs(args),
    });
    // One send: kafkajs reports the base offset of each partition's batch, whose records are
    // that partition's messages in the order given.
    if (args.partitions === 1 && meta.length !== 1) throw new Error(`records went to ${meta.length} partitions`);
    const next = new Map(meta.map((m) => [m.partition, Number(m.baseOffset)]));
    const records = messages.map((message) => {
      const partition = message.partition === undefined ? meta[0].partition : message.partition;
      const offset = next.get(partition);
      next.set(partition, offset + 1);
      return [partition, offset];
    });
    emit('produced', {
      topic: args.topic,
      partition: [...new Set(meta.map((m) => m.partition))].sort(),
      offsets: records.map((r) => r[1]),
      records,
    });
  } finally {
    await producer.disconnect();
  }
}

async function consume(args) {
  const consumer = client(args).consumer({
    groupId: groupId(args),
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
        eachMessage: async ({ partition, message }) => {
          const headers = Object.entries(message.headers || {}).map(([k, v]) => [k, text(v)]);
          got.push([partition, Number(message.offset), text(message.key), text(message.value), headers]);
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
  emit('consumed', { topic: args.topic, values: got.map((r) => r[3]), records: got });
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
      if (!(step in functions)) throw new Error(`this driver has no '${step}' step`);
      // A consume must read every codec the records might be in; one that will not load leaves
      // kafkajs's own "not implemented" error for records in that codec.
      if (step === 'consume') {
        for (const name of ['snappy', 'lz4', 'zstd']) {
          try {
            registerCodec(name);
          } catch (err) {
            process.stderr.write(`codec ${name} unavailable: ${err.message}\n`);
          }
        }
      }
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
