'use strict';
// The RocketMQ 5.x Node.js client (rocketmq-client-nodejs, gRPC) as a test
// driver: `produce` sends messages and prints their ids, `consume` receives
// with a SimpleConsumer and prints what it got. The last stdout line is a
// JSON result ({"ok": true|false, ...}); see scripts/node5-client.sh.
//
//   node client.js produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
//   node client.js consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3 --timeout 20

const { Producer, SimpleConsumer, FilterExpression } = require('rocketmq-client-nodejs');

function parseArgs(argv) {
  const opts = { count: 1, prefix: 'msg', timeout: 20, invisible: 15000, tag: 'TagA', ack: true, filter: '*' };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) throw new Error(`unexpected argument ${a}`);
    const key = a.slice(2);
    if (key === 'no-ack') { opts.ack = false; continue; }
    const v = argv[++i];
    if (v === undefined) throw new Error(`${a} needs a value`);
    opts[key] = [ 'count', 'timeout', 'invisible', 'delay' ].includes(key) ? Number(v) : v;
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

async function main() {
  const [ mode, ...rest ] = process.argv.slice(2);
  if (mode !== 'produce' && mode !== 'consume') {
    console.error('usage: client.js produce|consume --endpoint HOST:PORT --topic T [--group G] [--count N] [--prefix P] [--tag T] [--delay MS] [--timeout S] [--invisible MS] [--no-ack] [--filter EXPR]');
    process.exit(2);
  }
  let res;
  try {
    const o = parseArgs(rest);
    res = mode === 'produce' ? await produce(o) : await consume(o);
  } catch (e) {
    res = { ok: false, error: String(e && e.stack || e) };
  }
  console.log(JSON.stringify(res));
  process.exit(res.ok ? 0 : 1);
}

main();
