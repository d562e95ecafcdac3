#!/usr/bin/env node
// Node.js real-client check for any RocketMQ cluster, with ali-ons (a pure
// JavaScript port of the Java remoting client; with the nameSrv option it
// talks to a plain open-source nameserver, no Aliyun address server).
//
//   node client-check.js produce|consume|roundtrip -n 127.0.0.1:9876 [-t topic] [-count 1000] ...
//
// The message format is shared with rmqgo.ClientCheck (Java) and
// tests/cmd/gocheck (Go): see tests/interop/checkmsg and docs/interop.md.
// The last line on stdout is one JSON object (the result); the exit code is
// 0 when the check passed, 1 when it failed, 2 on bad usage. Run it through
// scripts/node-client-check.sh, which installs the pinned dependencies.
'use strict';

const crypto = require('crypto');
const zlib = require('zlib');

const UTF8_VALUE = 'h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c';
const DEFAULT_SIZES = '16,128,1000,4095,4096,4097,20000,65536';
const MAX_ERRORS = 10;
// ali-ons puts this "version" in every request (lib/protocol/command/remoting_command.js).
const ALI_ONS_VERSION_CODE = 121; // V3_4_9

const USAGE = `usage: client-check.js produce|consume|roundtrip [options]
  -n ADDR          nameserver address (default 127.0.0.1:9876)
  -endpoint ADDR   a broker's gRPC endpoint (scripts/node5/check.js, the 5.x client)
  -t TOPIC         topic (default RmqgoCheck)
  -g GROUP         consumer group (default rmqgo_check_node_RUN)
  -pg GROUP        producer group (default rmqgo_check_producer_node)
  -count N         messages to send; distinct messages to expect (default 1000)
  -size N          fixed body size (shortcut for -sizes N)
  -sizes A,B,..    body sizes, cycled by sequence (default ${DEFAULT_SIZES})
  -tags A,B        tags, cycled by sequence (default TagA,TagB)
  -expr EXPR       consumer tag expression, e.g. '*' or 'TagA || TagB' (default *)
  -send-mode M     sync | async (ali-ons has no oneway or batch send) (default sync)
  -run ID          run id (default random; consume: only this run's messages count,
                   empty = any run)
  -timeout SEC     consume deadline in seconds (default 120)
  -linger MS       keep consuming this long after the last expected message to
                   catch duplicates (default 1000)
  -concurrency N   async sends in flight (default 64)
  -send-timeout MS producer send timeout (default 10000)
  -retries N       producer retries when a send fails (default 2)
  -threads N       messages consumed in parallel per queue (default 4)
  -allow-dups      duplicates do not fail the check
  -fail-first      the consumer fails each message's first delivery (the
                   broker redelivers it from %RETRY%<group>); only the
                   redeliveries, reconsumeTimes 1, are counted
  -create-topic=false  do not create a missing topic: ali-ons cannot send to a
                   topic the nameserver does not know (no TBW102 auto-creation),
                   so by default produce creates it on the TBW102 route's
                   master brokers (UPDATE_AND_CREATE_TOPIC, 4 queues)
  -verbose         client logs (info) on stderr
  -ak KEY -sk KEY  sign every request with ali-ons' accessKey / secretKey (ACL users)`;

function usage(err) {
  if (err) {
    process.stderr.write(`client-check: ${err}\n`);
  }
  process.stderr.write(USAGE + '\n');
  process.exit(err ? 2 : 0);
}

function parse(argv) {
  const o = {
    namesrv: '127.0.0.1:9876',
    topic: 'RmqgoCheck',
    group: '',
    producerGroup: 'rmqgo_check_producer_node',
    count: 1000,
    sizes: DEFAULT_SIZES,
    tags: [ 'TagA', 'TagB' ],
    expr: '*',
    sendMode: 'sync',
    run: '',
    timeoutMs: 120000,
    lingerMs: 1000,
    concurrency: 64,
    sendTimeoutMs: 10000,
    retries: 2,
    threads: 4,
    allowDups: false,
    verbose: false,
    createTopic: true,
    accessKey: '',
    secretKey: '',
  };
  if (argv.length === 0) {
    usage('missing mode');
  }
  o.mode = argv[0];
  if ([ '-h', '--help', 'help' ].includes(o.mode)) {
    usage();
  }
  if (![ 'produce', 'consume', 'roundtrip' ].includes(o.mode)) {
    usage(`unknown mode ${o.mode}`);
  }
  const int = (name, v) => {
    if (!/^-?\d+$/.test(v)) {
      usage(`bad value for -${name}: ${v}`);
    }
    return parseInt(v, 10);
  };
  for (let i = 1; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('-')) {
      usage(`unexpected argument ${a}`);
    }
    let name = a.replace(/^--?/, '');
    let val;
    const eq = name.indexOf('=');
    if (eq >= 0) {
      val = name.slice(eq + 1);
      name = name.slice(0, eq);
    }
    if (name === 'allow-dups' || name === 'verbose' || name === 'create-topic' || name === 'fail-first') {
      const b = val === undefined || val === 'true';
      if (name === 'allow-dups') o.allowDups = b;
      else if (name === 'verbose') o.verbose = b;
      else if (name === 'fail-first') o.failFirst = b;
      else o.createTopic = b;
      continue;
    }
    if (name === 'h' || name === 'help') {
      usage();
    }
    if (val === undefined) {
      if (i + 1 >= argv.length) {
        usage(`missing value for ${a}`);
      }
      val = argv[++i];
    }
    switch (name) {
      case 'n': o.namesrv = val; break;
      case 'endpoint': o.endpoint = val; break;
      case 't': o.topic = val; break;
      case 'g': o.group = val; break;
      case 'pg': o.producerGroup = val; break;
      case 'count': o.count = int(name, val); break;
      case 'size': o.sizes = String(int(name, val)); break;
      case 'sizes': o.sizes = val; break;
      case 'tags': o.tags = val.split(','); break;
      case 'expr': o.expr = val; break;
      case 'send-mode': o.sendMode = val; break;
      case 'run': o.run = val; break;
      case 'timeout': o.timeoutMs = Math.round(parseFloat(val) * 1000); break;
      case 'linger': o.lingerMs = int(name, val); break;
      case 'concurrency': o.concurrency = int(name, val); break;
      case 'batch': usage('ali-ons has no batch send'); break;
      case 'send-timeout': o.sendTimeoutMs = int(name, val); break;
      case 'retries': o.retries = int(name, val); break;
      case 'threads': o.threads = int(name, val); break;
      case 'ak': o.accessKey = val; break;
      case 'sk': o.secretKey = val; break;
      default: usage(`unknown option ${a}`);
    }
  }
  o.sizes = o.sizes.split(',').map(s => int('sizes', s.trim()));
  if (o.sizes.some(n => n < 0)) {
    usage('negative size');
  }
  if (o.sendMode === 'oneway' || o.sendMode === 'batch') {
    usage(`send mode ${o.sendMode}: ali-ons has no oneway or batch send`);
  }
  if (![ 'sync', 'async' ].includes(o.sendMode)) {
    usage(`unknown send mode ${o.sendMode}`);
  }
  if (o.count < 0 || o.concurrency < 1 || o.threads < 1) {
    usage('count must be >= 0; concurrency, threads >= 1');
  }
  if (!o.run && o.mode !== 'consume') {
    o.run = crypto.randomBytes(6).toString('hex');
  }
  if (!o.group) {
    o.group = 'rmqgo_check_node_' + (o.run || Date.now().toString(16));
  }
  return o;
}

// ------------------------------------------------------------ message format

const HEX = Buffer.from('0123456789abcdef');

/** Body of message seq: n hex characters of an LCG stream seeded by seq. */
function body(seq, n) {
  const b = Buffer.alloc(n);
  let x = (Math.imul(seq, 0x9E3779B1) + 0x7F4A7C15) >>> 0;
  for (let i = 0; i < n; i++) {
    x = (Math.imul(x, 1664525) + 1013904223) >>> 0;
    b[i] = HEX[x >>> 28];
  }
  return b;
}

let crcTable;
function crc32(buf) {
  if (typeof zlib.crc32 === 'function') {
    return zlib.crc32(buf) >>> 0;
  }
  if (!crcTable) {
    crcTable = new Int32Array(256);
    for (let i = 0; i < 256; i++) {
      let c = i;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320 ^ (c >>> 1) : c >>> 1;
      crcTable[i] = c;
    }
  }
  let c = -1;
  for (let i = 0; i < buf.length; i++) c = crcTable[(c ^ buf[i]) & 0xff] ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

function keys(run, seq) {
  return `chk-${run}-${seq} seq-${seq}`;
}

function matches(expr, tag) {
  const e = (expr || '').trim();
  if (e === '' || e === '*') return true;
  return e.split('||').some(t => t.trim() === tag);
}

function expectedFor(o) {
  let n = 0;
  for (let seq = 0; seq < o.count; seq++) {
    if (matches(o.expr, o.tags[seq % o.tags.length])) n++;
  }
  return n;
}

function build(Message, o, seq) {
  const len = o.sizes[seq % o.sizes.length];
  const b = body(seq, len);
  const tag = o.tags[seq % o.tags.length];
  const m = new Message(o.topic, tag, b);
  m.keys = [ `chk-${o.run}-${seq}`, `seq-${seq}` ];
  Object.assign(m.properties, {
    check_run: o.run,
    check_seq: String(seq),
    check_len: String(len),
    check_crc: String(crc32(b)),
    check_tag: tag,
    check_client: 'node',
    check_utf8: UTF8_VALUE,
  });
  return m;
}

/** Verifies a received message; returns null when it is fine, else why not. */
function verify(o, msg) {
  const p = msg.properties || {};
  const run = p.check_run;
  const seq = parseInt(p.check_seq, 10);
  const len = parseInt(p.check_len, 10);
  if (Number.isNaN(seq) || Number.isNaN(len)) {
    return `bad check properties ${JSON.stringify(p)}`;
  }
  if (msg.topic !== o.topic) return `seq ${seq}: topic ${msg.topic}`;
  const b = msg.body || Buffer.alloc(0);
  if (b.length !== len) return `seq ${seq}: body length ${b.length} != ${len}`;
  if (String(crc32(b)) !== p.check_crc) return `seq ${seq}: body crc ${crc32(b)} != ${p.check_crc}`;
  if (!b.equals(body(seq, len))) return `seq ${seq}: body differs from the generated one`;
  const tag = p.check_tag;
  if (!tag || msg.tags !== tag) return `seq ${seq}: tags ${msg.tags} != ${tag}`;
  if (!matches(o.expr, tag)) return `seq ${seq}: tag ${tag} does not match the subscription ${o.expr}`;
  if (msg.keys !== keys(run, seq)) return `seq ${seq}: keys '${msg.keys}' != '${keys(run, seq)}'`;
  if (p.check_utf8 !== UTF8_VALUE) return `seq ${seq}: check_utf8 '${p.check_utf8}'`;
  if (!p.check_client) return `seq ${seq}: no check_client`;
  return null;
}

// ------------------------------------------------------------ result

class Result {
  constructor() {
    this.f = {};
    this.errors = [];
    this.ok = true;
  }
  error(e) {
    if (this.errors.length < MAX_ERRORS) this.errors.push(String(e));
  }
  fail(e) {
    this.ok = false;
    this.error(e);
  }
  json() {
    return JSON.stringify(Object.assign({}, this.f, { ok: this.ok, errors: this.errors }));
  }
}

function describe(err) {
  const s = `${err && err.name || 'Error'}: ${err && err.message || err}`;
  return s.length > 300 ? s.slice(0, 300) + '...' : s;
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

function makeLogger(verbose) {
  const w = (...args) => process.stderr.write(require('util').format(...args) + '\n');
  return {
    info: verbose ? w : () => {},
    debug: () => {},
    warn: verbose ? w : () => {},
    error: w,
  };
}

// ali-ons asserts an httpclient (for the Aliyun address server); with
// nameSrv set it is never used.
const noHttp = {
  request() {
    throw new Error('client-check: no HTTP address server (nameSrv is set)');
  },
};

// ------------------------------------------------------------ produce

/**
 * ali-ons cannot send to a topic the nameserver does not know: its
 * getTopicRouteInfoFromNameServer throws on TOPIC_NOT_EXIST before the
 * producer ever falls back to the TBW102 route (which is how the Java and Go
 * clients get a topic auto-created by the broker). So, like the Java
 * producer's createTopic, create it on every master broker of the TBW102
 * route (UPDATE_AND_CREATE_TOPIC, 4 queues) and wait until the nameserver
 * serves its route.
 */
async function ensureTopic(api, o, r, logger) {
  const routeOf = async topic => {
    try {
      return await api.getTopicRouteInfoFromNameServer(topic, 3000);
    } catch (err) {
      if (/route info|TOPIC_NOT_EXIST|not exist/i.test(err.message)) return null;
      throw err;
    }
  };
  if (await routeOf(o.topic)) {
    r.f.topic_created = false;
    return;
  }
  let tbw;
  try {
    tbw = await api.getDefaultTopicRouteInfoFromNameServer('TBW102', 3000);
  } catch (err) {
    throw new Error(`topic ${o.topic} does not exist and there is no TBW102 route to create it from ` +
      `(create it first, e.g. mqadmin updateTopic): ${describe(err)}`);
  }
  const masters = (tbw && tbw.brokerDatas || []).map(b => b.brokerAddrs && (b.brokerAddrs[0] || b.brokerAddrs['0'])).filter(Boolean);
  if (!masters.length) {
    throw new Error(`topic ${o.topic} does not exist and the TBW102 route names no master broker`);
  }
  for (const addr of masters) {
    logger.info('[client-check] creating topic %s on %s', o.topic, addr);
    await api.createTopic(addr, 'TBW102', {
      topicName: o.topic,
      readQueueNums: 4,
      writeQueueNums: 4,
      perm: 6,
      topicFilterType: 'SINGLE_TAG',
      topicSysFlag: 0,
      order: false,
    }, 5000);
  }
  const deadline = Date.now() + 30000;
  while (!(await routeOf(o.topic))) {
    if (Date.now() > deadline) {
      throw new Error(`created topic ${o.topic} on ${masters.join(', ')} but the nameserver serves no route after 30s`);
    }
    await sleep(200);
  }
  r.f.topic_created = true;
}

// credentials are ali-ons' signing options (channel.js: AccessKey,
// OnsChannel and the header fields, HMAC-SHA1) when -ak/-sk are given.
function credentials(o) {
  return o.accessKey ? { accessKey: o.accessKey, secretKey: o.secretKey } : {};
}

async function produce(ons, o, r, logger) {
  let sent = 0;
  let failed = 0;
  const producer = new ons.Producer({
    ...credentials(o),
    httpclient: noHttp,
    nameSrv: o.namesrv,
    producerGroup: o.producerGroup,
    instanceName: `rmqgo-check-p-${o.run}`,
    sendMsgTimeout: o.sendTimeoutMs,
    retryTimesWhenSendFailed: o.retries,
    logger,
  });
  producer.on('error', err => r.error(`producer: ${describe(err)}`));
  await producer.ready();
  if (o.createTopic) {
    await ensureTopic(producer._mqClient, o, r, logger);
  }
  const t0 = Date.now();
  const sendOne = async seq => {
    try {
      const res = await producer.send(build(ons.Message, o, seq));
      if (res && res.sendStatus === 'SEND_OK') {
        sent++;
      } else {
        failed++;
        r.error(`seq ${seq}: status ${res && res.sendStatus}`);
      }
    } catch (err) {
      failed++;
      r.error(`seq ${seq}: ${describe(err)}`);
    }
  };
  try {
    if (o.sendMode === 'sync') {
      for (let seq = 0; seq < o.count; seq++) {
        await sendOne(seq);
      }
    } else {
      // async: a pool of o.concurrency sends in flight.
      let next = 0;
      const worker = async () => {
        while (next < o.count) {
          await sendOne(next++);
        }
      };
      await Promise.all(Array.from({ length: Math.min(o.concurrency, Math.max(o.count, 1)) }, worker));
    }
  } finally {
    const ms = Date.now() - t0;
    await producer.close().catch(err => r.error(`producer close: ${describe(err)}`));
    Object.assign(r.f, {
      send_mode: o.sendMode,
      sent,
      failed,
      send_ms: ms,
      send_per_sec: ms > 0 ? Math.round(sent * 1000 / ms) : sent,
    });
  }
  if (failed > 0 || sent !== o.count) {
    r.fail(`produce: sent ${sent} of ${o.count}, failed ${failed}`);
  }
}

// ------------------------------------------------------------ consume

/**
 * Tally counts what a consumer received against what a run expects:
 * distinct (run, seq) pairs, duplicates, mismatched and foreign messages.
 * Messages come in ali-ons' shape: properties (an object), topic, body,
 * tags, keys (space-separated), msgId, reconsumeTimes.
 */
class Tally {
  constructor(o, r, expected) {
    Object.assign(this, { o, r, expected, received: 0, duplicates: 0, mismatched: 0, foreign: 0 });
    this.distinct = new Set();
    this.bad = new Set();
  }
  /** Counts msg; true once every expected message has come. */
  add(msg) {
    const { o, r } = this;
    this.received++;
    const p = msg.properties || {};
    if (!p.check_run || (o.run && p.check_run !== o.run)) {
      this.foreign++;
      return this.done();
    }
    const key = `${p.check_run}/${p.check_seq}`;
    const why = verify(o, msg);
    if (why) {
      this.mismatched++;
      r.error(why);
      this.bad.add(key);
    } else if (this.distinct.has(key)) {
      this.duplicates++;
      if (this.duplicates <= 3) {
        r.error(`duplicate ${key} (msgId ${msg.msgId}, reconsumeTimes ${msg.reconsumeTimes})`);
      }
    } else {
      this.distinct.add(key);
    }
    return this.done();
  }
  done() {
    return this.distinct.size + this.bad.size >= this.expected;
  }
  /** Writes the counts into the result and fails it when the run fell short. */
  finish(ms) {
    const { o, r, expected } = this;
    Object.assign(r.f, {
      expected,
      received: this.received,
      distinct: this.distinct.size,
      duplicates: this.duplicates,
      mismatched: this.mismatched,
      foreign: this.foreign,
      consume_ms: ms,
      consume_per_sec: ms > 0 ? Math.round(this.distinct.size * 1000 / ms) : this.distinct.size,
    });
    if (this.distinct.size < expected) {
      r.fail(`consume: got ${this.distinct.size} of ${expected} distinct messages within ${o.timeoutMs / 1000}s`);
    }
    if (this.mismatched > 0) r.fail(`consume: ${this.mismatched} messages failed verification`);
    if (this.duplicates > 0 && !o.allowDups) r.fail(`consume: ${this.duplicates} duplicates`);
  }
}

async function consume(ons, o, r, logger, expected) {
  const tally = new Tally(o, r, expected);
  let done;
  const all = new Promise(resolve => { done = resolve; });
  if (expected === 0) done();

  const consumer = new ons.Consumer({
    ...credentials(o),
    httpclient: noHttp,
    nameSrv: o.namesrv,
    consumerGroup: o.group,
    instanceName: `rmqgo-check-c-${o.run || 'any'}`,
    consumeFromWhere: 'CONSUME_FROM_FIRST_OFFSET',
    parallelConsumeLimit: o.threads,
    logger,
  });
  consumer.on('error', err => {
    // A new group has no stored offset: the broker answers
    // QUERY_CONSUMER_OFFSET with QUERY_NOT_FOUND and ali-ons reports that
    // as an error event before falling back to consumeFromWhere. Expected.
    if (/maybe this group consumer boot first/.test(err && err.message)) return;
    // ali-ons reports each failed delivery too: -fail-first's own.
    if (o.failFirst && /failing the first delivery/.test(err && err.message)) return;
    r.error(`consumer: ${describe(err)}`);
  });
  const t0 = Date.now();
  let failedFirst = 0;
  consumer.subscribe(o.topic, o.expr, async msg => {
    if (o.failFirst && msg.reconsumeTimes === 0) {
      failedFirst++;
      throw new Error('failing the first delivery (-fail-first)');
    }
    if (o.failFirst && msg.reconsumeTimes !== 1) {
      r.error(`${msg.msgId}: redelivered with reconsumeTimes ${msg.reconsumeTimes}, want 1`);
    }
    if (tally.add(msg)) done();
  });
  await consumer.ready();
  let timer;
  const timedOut = new Promise(resolve => { timer = setTimeout(resolve, o.timeoutMs); });
  await Promise.race([ all, timedOut ]);
  clearTimeout(timer);
  const ms = Date.now() - t0;
  if (o.lingerMs > 0) await sleep(o.lingerMs);
  await consumer.close().catch(err => r.error(`consumer close: ${describe(err)}`));
  if (o.failFirst) r.f.failed_first = failedFirst;
  tally.finish(ms);
}

async function main() {
  const o = parse(process.argv.slice(2));
  const r = new Result();
  let version = 'unknown';
  try {
    version = require('ali-ons/package.json').version;
  } catch (_) { /* reported below */ }
  Object.assign(r.f, {
    client: 'node',
    client_version: `ali-ons@${version}`,
    client_version_code: ALI_ONS_VERSION_CODE,
    mode: o.mode,
    namesrv: o.namesrv,
    topic: o.topic,
    group: o.group,
    run: o.run,
  });
  const logger = makeLogger(o.verbose);
  const t0 = Date.now();
  try {
    const ons = require('ali-ons');
    if (o.mode !== 'consume') await produce(ons, o, r, logger);
    if (o.mode !== 'produce' && (r.ok || o.mode === 'consume')) {
      await consume(ons, o, r, logger, o.mode === 'roundtrip' ? expectedFor(o) : o.count);
    }
  } catch (err) {
    r.fail(describe(err));
  }
  r.f.total_ms = Date.now() - t0;
  process.stdout.write(r.json() + '\n', () => process.exit(r.ok ? 0 : 1));
}

if (require.main === module) {
  main();
}

module.exports = { body, crc32, keys, matches, parse, verify, expectedFor, describe, sleep, Result, Tally, UTF8_VALUE };
