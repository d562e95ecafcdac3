#!/usr/bin/env node
// The interop check (docs/interop.md: the message format shared with
// ali-ons, the Java 4.x client and client-go, and the JSON result line)
// with the RocketMQ 5.x Node.js client (rocketmq-client-nodejs) on a
// broker's gRPC endpoint:
//
//   node check.js produce|consume|roundtrip -endpoint 127.0.0.1:8081 -t topic [-count N] [-run ID] ...
//
// Options as scripts/node/client-check.js (whose message format, parsing
// and tally it uses), except -n (a 5.x client needs no nameserver) and the
// remoting-only ones; consume receives with a SimpleConsumer and acks every
// message. Run it through scripts/node5-check.sh.
'use strict';

const check = require('../node/client-check.js');
const { Producer, SimpleConsumer, FilterExpression } = require('rocketmq-client-nodejs');

const quiet = { info() {}, debug() {}, warn() {}, error() {} };

function message(o, seq) {
  const len = o.sizes[seq % o.sizes.length];
  const b = check.body(seq, len);
  const tag = o.tags[seq % o.tags.length];
  return {
    topic: o.topic,
    tag,
    keys: [ `chk-${o.run}-${seq}`, `seq-${seq}` ],
    body: b,
    properties: new Map(Object.entries({
      check_run: o.run,
      check_seq: String(seq),
      check_len: String(len),
      check_crc: String(check.crc32(b)),
      check_tag: tag,
      check_client: 'node5',
      check_utf8: check.UTF8_VALUE,
    })),
  };
}

async function produce(o, r) {
  let sent = 0;
  let failed = 0;
  const producer = new Producer({ endpoints: o.endpoint, logger: quiet, topics: [ o.topic ] });
  await producer.startup();
  const t0 = Date.now();
  try {
    for (let seq = 0; seq < o.count; seq++) {
      try {
        await producer.send(message(o, seq));
        sent++;
      } catch (err) {
        failed++;
        r.error(`seq ${seq}: ${check.describe(err)}`);
      }
    }
  } finally {
    const ms = Date.now() - t0;
    await producer.shutdown().catch(err => r.error(`producer shutdown: ${check.describe(err)}`));
    Object.assign(r.f, { send_mode: 'sync', sent, failed, send_ms: ms, send_per_sec: ms > 0 ? Math.round(sent * 1000 / ms) : sent });
  }
  if (failed > 0 || sent !== o.count) r.fail(`produce: sent ${sent} of ${o.count}, failed ${failed}`);
}

async function consume(o, r, expected) {
  const tally = new check.Tally(o, r, expected);
  const expr = (o.expr || '*').trim() || '*';
  const consumer = new SimpleConsumer({
    endpoints: o.endpoint, logger: quiet, consumerGroup: o.group,
    subscriptions: new Map([ [ o.topic, new FilterExpression(expr) ] ]),
    awaitDuration: 2000,
  });
  await consumer.startup();
  const t0 = Date.now();
  let ms = 0;
  let lingerUntil = 0;
  try {
    for (;;) {
      const now = Date.now();
      if (lingerUntil === 0 && (tally.done() || now - t0 >= o.timeoutMs)) {
        ms = now - t0;
        lingerUntil = now + o.lingerMs;
      }
      if (lingerUntil !== 0 && now >= lingerUntil) break;
      let views = [];
      try {
        views = await consumer.receive(16, 20000);
      } catch (err) {
        // MESSAGE_NOT_FOUND: nothing within the long poll.
        if (!/not.?found/i.test(String(err && err.message))) r.error(`receive: ${check.describe(err)}`);
      }
      for (const v of views) {
        tally.add({
          topic: v.topic, body: v.body, tags: v.tag, keys: (v.keys || []).join(' '),
          properties: Object.fromEntries(v.properties), msgId: v.messageId, reconsumeTimes: (v.deliveryAttempt || 1) - 1,
        });
        await consumer.ack(v).catch(err => r.error(`ack ${v.messageId}: ${check.describe(err)}`));
      }
    }
  } finally {
    await consumer.shutdown().catch(err => r.error(`consumer shutdown: ${check.describe(err)}`));
  }
  tally.finish(ms);
}

async function main() {
  const o = check.parse(process.argv.slice(2));
  const r = new check.Result();
  if (!o.endpoint) {
    process.stderr.write('check.js: -endpoint HOST:PORT is required\n');
    process.exit(2);
  }
  if (o.group.startsWith('rmqgo_check_node_')) o.group = o.group.replace('rmqgo_check_node_', 'rmqgo_check_node5_');
  let version = 'unknown';
  try {
    version = require('rocketmq-client-nodejs/package.json').version;
  } catch (_) { /* reported as unknown */ }
  Object.assign(r.f, {
    client: 'node5', client_version: `rocketmq-client-nodejs@${version}`, client_version_code: 0,
    mode: o.mode, endpoint: o.endpoint, topic: o.topic, group: o.group, run: o.run,
  });
  const t0 = Date.now();
  try {
    if (o.mode !== 'consume') await produce(o, r);
    if (o.mode !== 'produce' && (r.ok || o.mode === 'consume')) {
      await consume(o, r, o.mode === 'roundtrip' ? check.expectedFor(o) : o.count);
    }
  } catch (err) {
    r.fail(check.describe(err));
  }
  r.f.total_ms = Date.now() - t0;
  process.stdout.write(r.json() + '\n', () => process.exit(r.ok ? 0 : 1));
}

main();
