'use strict';
// The RocketMQ 5.x Node.js client (rocketmq-client-nodejs, gRPC) as a test
// driver: `produce` sends messages and prints their ids, `consume` receives
// with a SimpleConsumer and prints what it got, `lite` binds a LitePushConsumer
// to the parent topic --topic, subscribes the comma-separated --lites, prints
// {"ready":true,"lites":N} and consumes (each message SUCCESS) until --count
// distinct messages or --timeout s, then --quiet s more. The last stdout line
// is a JSON result ({"ok": true|false, ...}); see scripts/node5-client.sh.
// `restart` sends (message seq property, one per 20 ms for --secs s) and
// receives and acks with a SimpleConsumer while the test restarts or kills
// the broker, printing "acked N" (acknowledged sends) every 200 ms; after
// the sends the consumer gets --timeout s to receive every acknowledged
// send. It passes when each was received at least once and no message whose
// ack succeeded came again (scripts/java5's GrpcRestartCheck, the same check).
//
//   node client.js produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
//   node client.js consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3 --timeout 20
//   node client.js lite --endpoint 127.0.0.1:8081 --topic P --group G --lites a,b --count 4 --quiet 1

const { Producer, SimpleConsumer, FilterExpression, LitePushConsumerImpl, ConsumeResult } = require('rocketmq-client-nodejs');

function parseArgs(argv) {
  const opts = { count: 1, prefix: 'msg', timeout: 20, invisible: 15000, tag: 'TagA', ack: true, filter: '*', quiet: 0 };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2);
    if (key === 'no-ack') { opts.ack = false; continue; }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    opts[key] = [ 'count', 'timeout', 'invisible', 'delay', 'quiet', 'secs' ].includes(key) ? Number(v) : v;
  }
  if (!opts.endpoint || !opts.topic) throw new Error('--endpoint and --topic are required');
  return opts;
}

// A quiet logger: the client logs every rpc at info.
const logger = { info() {}, debug() {}, warn() {}, error(...a) { console.error(...a); } };

async function produce(o) {
  const producer = new Producer({ endpoints: o.endpoint, logger, topics: [ o.topic ] });
  await producer.startup();
  const ids = [];
  try {
    for (let i = 0; i < o.count; i++) {
      const msg = {
        topic: o.topic,
        tag: o.tag,
        keys: [ `key-${i}` ],
        properties: new Map([ [ 'color', 'red' ] ]),
        body: Buffer.from(`${o.prefix}-${i}`),
      };
      if (o.group) msg.messageGroup = o.group;
      if (o.delay) msg.delay = o.delay;
      const receipt = await producer.send(msg);
      ids.push(receipt.messageId);
    }
  } finally {
    await producer.shutdown();
  }
  return { ok: true, ids };
}

async function consume(o) {
  if (!o.group) throw new Error('consume needs --group');
  const consumer = new SimpleConsumer({
    endpoints: o.endpoint, logger, consumerGroup: o.group,
    subscriptions: new Map([ [ o.topic, new FilterExpression(o.filter) ] ]),
    awaitDuration: 2000,
  });
  await consumer.startup();
  const got = [];
  const deadline = Date.now() + o.timeout * 1000;
  try {
    while (got.length < o.count && Date.now() < deadline) {
      let views = [];
      try {
        views = await consumer.receive(16, o.invisible);
      } catch (e) {
        // MESSAGE_NOT_FOUND: nothing to receive within the long poll.
        if (!/not.?found/i.test(String(e && e.message))) throw e;
      }
      for (const v of views) {
        got.push({
          id: v.messageId, body: v.body.toString(), tag: v.tag || '', keys: v.keys,
          color: v.properties.get('color') || '', deliveryAttempt: v.deliveryAttempt,
          messageGroup: v.messageGroup || '',
        });
        if (o.ack) await consumer.ack(v);
      }
    }
  } finally {
    await consumer.shutdown();
  }
  return { ok: got.length >= o.count, messages: got };
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

async function lite(o) {
  if (!o.group || !o.lites) throw new Error('lite needs --group and --lites');
  const got = [];
  const consumer = new LitePushConsumerImpl({
    endpoints: o.endpoint, logger, consumerGroup: o.group, bindTopic: o.topic,
    messageListener: {
      consume(v) {
        got.push({ id: v.messageId, body: v.body.toString(), lite: v.liteTopic || '', attempt: v.deliveryAttempt });
        return ConsumeResult.SUCCESS;
      },
    },
  });
  await consumer.startup();
  try {
    for (const l of o.lites.split(',')) await consumer.subscribeLite(l);
    console.log(JSON.stringify({ ready: true, lites: consumer.getLiteTopicSet().size }));
    const deadline = Date.now() + o.timeout * 1000;
    while (new Set(got.map(m => m.id)).size < o.count && Date.now() < deadline) await sleep(50);
    await sleep(o.quiet * 1000);
  } finally {
    await consumer.shutdown();
  }
  return { ok: true, got };
}

async function restart(o) {
  if (!o.group || !o.secs) throw new Error('restart needs --group and --secs');
  const producer = new Producer({ endpoints: o.endpoint, logger, topics: [ o.topic ], requestTimeout: 3000 });
  await producer.startup();
  const consumer = new SimpleConsumer({
    endpoints: o.endpoint, logger, consumerGroup: o.group, requestTimeout: 3000,
    subscriptions: new Map([ [ o.topic, new FilterExpression('*') ] ]), awaitDuration: 1000,
  });
  await consumer.startup();
  // A message whose ack failed counts as received: an ack cut off by a kill
  // may have been recorded before the broker died (then it rightly never
  // comes again) or not (then it does). ackUnknown holds those that did not.
  const sent = new Set(), received = new Set(), acked = new Set(), ackUnknown = new Set(), redelivered = new Set(), errors = [];
  const counts = { sendFailed: 0, receiveFailed: 0, ackFailed: 0 };
  const note = e => { if (errors.length < 60) errors.push(String(e && e.message || e)); };
  let sendEnd = 0;
  const receiver = (async () => {
    for (;;) {
      if (sendEnd && (Date.now() > sendEnd + o.timeout * 1000 || [ ...sent ].every(x => received.has(x)))) return;
      let views = [];
      try {
        views = await consumer.receive(16, o.invisible);
      } catch (e) {
        if (!/not.?found/i.test(String(e && e.message))) { counts.receiveFailed++; note(`receive: ${e && e.message || e}`); await sleep(200); }
        continue;
      }
      for (const v of views) {
        const seq = Number(v.properties.get('seq'));
        if (acked.has(seq)) redelivered.add(seq);
        received.add(seq);
        ackUnknown.delete(seq);
        try {
          await consumer.ack(v);
          acked.add(seq);
        } catch (e) {
          counts.ackFailed++; ackUnknown.add(seq); note(`ack ${seq}: ${e && e.message || e}`);
        }
      }
    }
  })();
  const t0 = Date.now();
  let seq = 0, last = 0;
  while (Date.now() - t0 < o.secs * 1000) {
    try {
      await producer.send({ topic: o.topic, tag: 'R', keys: [ `r-${seq}` ], properties: new Map([ [ 'seq', String(seq) ] ]), body: Buffer.from(`r-${seq}`) });
      sent.add(seq);
    } catch (e) {
      counts.sendFailed++; note(`send ${seq}: ${e && e.message || e}`); await sleep(100);
    }
    seq++;
    if (Date.now() - last >= 200) { console.log(`acked ${sent.size}`); last = Date.now(); }
    await sleep(20);
  }
  sendEnd = Date.now();
  await receiver;
  const drainMs = Date.now() - sendEnd;
  await consumer.shutdown().catch(note);
  await producer.shutdown().catch(note);
  const lost = [ ...sent ].filter(x => !received.has(x)).sort((a, b) => a - b);
  const ok = lost.length === 0 && redelivered.size === 0 && sent.size > 0;
  const res = { ok, sent: seq, acked_sends: sent.size, send_failed: counts.sendFailed, consumed: acked.size,
    receive_failed: counts.receiveFailed, ack_failed: counts.ackFailed, drain_ms: drainMs,
    received: received.size, ack_unknown: [ ...ackUnknown ].sort((a, b) => a - b).slice(0, 20),
    lost: lost.slice(0, 20), redelivered: [ ...redelivered ].slice(0, 20), errors };
  if (!ok) res.error = `${lost.length} acknowledged sends never received, ${redelivered.size} acked messages delivered again`;
  return res;
}

async function main() {
  const [ mode, ...rest ] = process.argv.slice(2);
  if (![ 'produce', 'consume', 'lite', 'restart' ].includes(mode)) {
    console.error('usage: client.js produce|consume|lite|restart --endpoint HOST:PORT --topic T [--group G] [--count N] [--prefix P] [--tag T] [--delay MS] [--timeout S] [--invisible MS] [--no-ack] [--filter EXPR] [--lites A,B] [--quiet S] [--secs S]');
    process.exit(2);
  }
  let res;
  try {
    const o = parseArgs(rest);
    res = await { produce, consume, lite, restart }[mode](o);
  } catch (e) {
    res = { ok: false, error: String(e && e.stack || e) };
  }
  console.log(JSON.stringify(res));
  process.exit(res.ok ? 0 : 1);
}

main();
