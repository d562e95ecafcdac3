"""Drives the C++ RocketMQ client (rocketmq-client-cpp, remoting protocol)
through Apache's Python wrapper, for the end-to-end tests in tests/e2e.

    client.py produce --namesrv NS --topic T --group G --count N --prefix P
              [--mode sync|oneway|orderly] [--shard KEY] [--delay-level L]
    client.py transaction --namesrv NS --topic T --group G --count N --prefix P
    client.py consume --namesrv NS --topic T --group G --count N
              [--expression E] [--orderly] [--broadcast] [--fail-first] [--timeout S]

produce and consume sign their requests with --access-key and --secret-key
when given.

Message i of a run has the body "<prefix>-<i>", the keys "key-<i>", the
tag TagA and the user property color=red. The last line on stdout is the
JSON result, with "ok": true; a failure is {"ok": false, "error": ...} and
exit 1.
"""
import argparse
import json
import sys
import threading
import time

from rocketmq.client import (ConsumeStatus, Message, MessageModel, Producer,
                             PushConsumer, TransactionMQProducer,
                             TransactionStatus)


def text(v):
    if isinstance(v, bytes):
        return v.decode('utf-8')
    return v


def message(args, i):
    m = Message(args.topic)
    m.set_body(('%s-%d' % (args.prefix, i)).encode('utf-8'))
    m.set_keys('key-%d' % i)
    m.set_tags('TagA')
    m.set_property('color', 'red')
    if args.delay_level:
        m.set_delay_time_level(args.delay_level)
    return m


def produce(args):
    p = Producer(args.group, orderly=args.mode == 'orderly')
    p.set_namesrv_addr(args.namesrv)
    if args.access_key:
        p.set_session_credentials(args.access_key, args.secret_key, '')
    p.start()
    ids, offsets = [], []
    try:
        for i in range(args.count):
            m = message(args, i)
            if args.mode == 'oneway':
                p.send_oneway(m)
                continue
            if args.mode == 'orderly':
                r = p.send_orderly_with_sharding_key(m, args.shard)
            else:
                r = p.send_sync(m)
            if int(r.status) != 0:
                raise RuntimeError('send %d: status %s' % (i, r.status))
            ids.append(r.msg_id)
            offsets.append(r.offset)
    finally:
        p.shutdown()
    return {'ids': ids, 'offsets': offsets}


def transaction(args):
    # Message i: committed at once (i % 3 == 0), rolled back (1), or
    # left unknown (2) and committed when the broker checks back.
    checked = []
    lock = threading.Lock()

    def check(msg):
        with lock:
            checked.append(text(msg.keys))
        return TransactionStatus.COMMIT

    def local(msg, _):
        i = int(text(msg.keys).split('-')[1])
        return [TransactionStatus.COMMIT, TransactionStatus.ROLLBACK, TransactionStatus.UNKNOWN][i % 3]

    p = TransactionMQProducer(args.group, check)
    p.set_namesrv_addr(args.namesrv)
    p.start()
    ids = []
    try:
        for i in range(args.count):
            r = p.send_message_in_transaction(message(args, i), local)
            ids.append(r.msg_id)
        # The producer must stay up to answer the broker's check-back.
        want = len([i for i in range(args.count) if i % 3 == 2])
        deadline = time.time() + args.timeout
        while time.time() < deadline:
            with lock:
                if len(set(checked)) >= want:
                    break
            time.sleep(0.2)
        with lock:
            got = sorted(set(checked))
    finally:
        p.shutdown()
    return {'ids': ids, 'checked': got}


def consume(args):
    seen = {}
    attempts = {}
    order = []
    lock = threading.Lock()

    def on_message(msg):
        mid = text(msg.id)
        with lock:
            attempts[mid] = attempts.get(mid, 0) + 1
            if args.fail_first and attempts[mid] == 1:
                return ConsumeStatus.RECONSUME_LATER
            if mid not in seen:
                order.append(mid)
                seen[mid] = {
                    'id': mid,
                    'topic': text(msg.topic),
                    'body': text(msg.body),
                    'tags': text(msg.tags),
                    'keys': text(msg.keys),
                    'color': text(msg.get_property('color')),
                    'queueId': msg.queue_id,
                    'queueOffset': msg.queue_offset,
                    'reconsumeTimes': msg.reconsume_times,
                    'bornTimestamp': msg.born_timestamp,
                    'storeTimestamp': msg.store_timestamp,
                    'consumedAt': int(time.time() * 1000),
                }
        return ConsumeStatus.CONSUME_SUCCESS

    model = MessageModel.BROADCASTING if args.broadcast else MessageModel.CLUSTERING
    c = PushConsumer(args.group, orderly=args.orderly, message_model=model)
    c.set_namesrv_addr(args.namesrv)
    if args.access_key:
        c.set_session_credentials(args.access_key, args.secret_key, '')
    c.subscribe(args.topic, on_message, args.expression)
    c.start()
    try:
        deadline = time.time() + args.timeout
        while time.time() < deadline:
            with lock:
                if len(seen) >= args.count:
                    break
            time.sleep(0.1)
        # Anything more than count arriving meanwhile is reported too.
        time.sleep(args.linger)
    finally:
        c.shutdown()
    with lock:
        return {'messages': [seen[m] for m in order], 'attempts': attempts}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('command', choices=['produce', 'transaction', 'consume'])
    ap.add_argument('--namesrv', required=True)
    ap.add_argument('--topic', required=True)
    ap.add_argument('--group', required=True)
    ap.add_argument('--count', type=int, default=1)
    ap.add_argument('--prefix', default='cpp')
    ap.add_argument('--mode', choices=['sync', 'oneway', 'orderly'], default='sync')
    ap.add_argument('--shard', default='order-1')
    ap.add_argument('--delay-level', type=int, default=0)
    ap.add_argument('--expression', default='*')
    ap.add_argument('--orderly', action='store_true')
    ap.add_argument('--broadcast', action='store_true')
    ap.add_argument('--fail-first', action='store_true')
    ap.add_argument('--timeout', type=float, default=30)
    ap.add_argument('--linger', type=float, default=1)
    ap.add_argument('--access-key', default='')
    ap.add_argument('--secret-key', default='')
    args = ap.parse_args()
    try:
        res = {'produce': produce, 'transaction': transaction, 'consume': consume}[args.command](args)
    except Exception as e:  # reported, not a traceback in the test log
        print(json.dumps({'ok': False, 'error': '%s: %s' % (args.command, e)}))
        sys.exit(1)
    res['ok'] = True
    print(json.dumps(res))


if __name__ == '__main__':
    main()
