"""The RocketMQ 5.x Python client (rocketmq-python-client, gRPC) as a test
driver, with the command line of scripts/node5/client.js:

  produce  sends --count messages (tag --tag, key key-I, property color=red,
           body PREFIX-I; --group makes them FIFO, --delay MS delayed, --lite
           L lite messages of lite topic L) and prints their ids;
  consume  receives with a SimpleConsumer until --count messages or
           --timeout s, acking each (unless --no-ack), and prints them;
  lite     binds a LitePushConsumer to the parent topic --topic, subscribes
           the comma-separated --lites, prints {"ready":true,"lites":N} and
           consumes (each message SUCCESS) until --count distinct messages
           or --timeout s, then --quiet s more;
  lite-simple  the same with a LiteSimpleConsumer (client type
           LITE_SIMPLE_CONSUMER), receiving and acking itself;
  restart  sends (message property seq, one per 20 ms for --secs s) and
           receives and acks with a SimpleConsumer while the test restarts
           or kills the broker, printing "acked N" (acknowledged sends)
           every 200 ms; after the sends the consumer gets --timeout s to
           receive every acknowledged send. It passes when each was
           received at least once and no message whose ack succeeded came
           again (scripts/java5's GrpcRestartCheck, the same check).

The last stdout line is the JSON result ({"ok": true|false, ...}); see
scripts/python5-client.sh.

  python client.py produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
  python client.py consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3 --timeout 20
  python client.py lite --endpoint 127.0.0.1:8081 --topic P --group G --lites a,b --count 4 --quiet 1
"""

import json
import logging
import math
import os
import sys
import threading
import time
import traceback

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials,
                      FilterExpression, LitePushConsumer, LiteSimpleConsumer,
                      Message, MessageListener, Producer, SimpleConsumer)

NUMERIC = ("count", "timeout", "invisible", "delay", "quiet", "secs")


def parse_args(argv):
    opts = {"count": 1, "prefix": "msg", "timeout": 20, "invisible": 15000, "tag": "TagA",
            "ack": True, "filter": "*", "quiet": 0}
    i = 0
    while i < len(argv):
        a = argv[i]
        if not a.startswith("--"):
            raise ValueError("unexpected argument " + a)
        key = a[2:]
        if key == "no-ack":
            opts["ack"] = False
            i += 1
            continue
        if i + 1 >= len(argv):
            raise ValueError(a + " needs a value")
        v = argv[i + 1]
        opts[key] = float(v) if key in NUMERIC else v
        i += 2
    if "endpoint" not in opts or "topic" not in opts:
        raise ValueError("--endpoint and --topic are required")
    return opts


def config(o):
    return ClientConfiguration(o["endpoint"], Credentials(), request_timeout=3)


def produce(o):
    producer = Producer(config(o), (o["topic"],))
    producer.startup()
    ids = []
    try:
        for i in range(int(o["count"])):
            m = Message()
            m.topic = o["topic"]
            m.tag = o["tag"]
            m.keys = "key-%d" % i
            m.add_property("color", "red")
            m.body = ("%s-%d" % (o["prefix"], i)).encode()
            if o.get("group"):
                m.message_group = o["group"]
            if o.get("lite"):
                m.lite_topic = o["lite"]
            if o.get("delay"):
                # 5.1.2 documents milliseconds but puts the value in the
                # protobuf Timestamp's seconds: whole seconds, rounded up
                # so that the message is not due before --delay.
                m.delivery_timestamp = math.ceil(time.time() + o["delay"] / 1000)
            ids.append(producer.send(m).message_id)
    finally:
        producer.shutdown()
    return {"ok": True, "ids": ids}


def view(m):
    return {"id": m.message_id, "body": m.body.decode(errors="replace"), "tag": m.tag or "",
            "keys": sorted(m.keys), "color": m.properties.get("color", ""),
            "deliveryAttempt": m.delivery_attempt, "attempt": m.delivery_attempt, "messageGroup": m.message_group or "",
            "lite": m.lite_topic or ""}


def consume(o):
    if not o.get("group"):
        raise ValueError("consume needs --group")
    consumer = SimpleConsumer(config(o), o["group"], {o["topic"]: FilterExpression(o["filter"])}, await_duration=2)
    consumer.startup()
    got = []
    deadline = time.time() + o["timeout"]
    try:
        while len(got) < o["count"] and time.time() < deadline:
            for m in consumer.receive(16, int(o["invisible"] / 1000)) or []:
                got.append(view(m))
                if o["ack"]:
                    consumer.ack(m)
    finally:
        consumer.shutdown()
    return {"ok": len(got) >= o["count"], "messages": got}


class Collect(MessageListener):
    def __init__(self):
        self.lock = threading.Lock()
        self.got = []

    def consume(self, message):
        with self.lock:
            self.got.append(view(message))
        return ConsumeResult.SUCCESS

    def distinct(self):
        with self.lock:
            return len({m["id"] for m in self.got})


def lite(o):
    if not o.get("group") or not o.get("lites"):
        raise ValueError("lite needs --group and --lites")
    listener = Collect()
    consumer = LitePushConsumer(config(o), o["group"], o["topic"], listener)
    consumer.startup()
    try:
        lites = o["lites"].split(",")
        for name in lites:
            consumer.subscribe_lite(name)
        sync_lites(consumer._LitePushConsumer__subscription_manager)
        print(json.dumps({"ready": True, "lites": len(lites)}, separators=(",", ":")), flush=True)
        deadline = time.time() + o["timeout"]
        while listener.distinct() < o["count"] and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(o["quiet"])
    finally:
        consumer.shutdown()
    with listener.lock:
        got = list(listener.got)
    return {"ok": True, "got": got}


def sync_lites(manager):
    """rocketmq-python-client 5.1.2's subscribe_lite sends the name's
    characters as the lite topics (it extends the request's repeated field
    with the string); its own sync of the whole set (COMPLETE_ADD) runs
    only every 30 s. Run that sync now."""
    manager.sync_all_lite_subscription()


def lite_simple(o):
    if not o.get("group") or not o.get("lites"):
        raise ValueError("lite-simple needs --group and --lites")
    consumer = LiteSimpleConsumer(o["topic"], config(o), o["group"], await_duration=2)
    consumer.startup()
    manager = consumer._LiteSimpleConsumer__subscription_manager
    got = []
    try:
        # Its start does not wait for the server's settings, which carry the
        # lite subscription quota (0 until then: subscribe_lite refuses).
        deadline = time.time() + 10
        while not manager.lite_subscription_quota and time.time() < deadline:
            time.sleep(0.05)
        lites = o["lites"].split(",")
        for name in lites:
            consumer.subscribe_lite(name)
        sync_lites(manager)
        print(json.dumps({"ready": True, "lites": len(lites)}, separators=(",", ":")), flush=True)
        deadline = time.time() + o["timeout"]
        quiet_until = None
        while time.time() < (quiet_until or deadline):
            for m in consumer.receive(16, int(o["invisible"] / 1000)) or []:
                got.append(view(m))
                consumer.ack(m)
            if quiet_until is None and len({m["id"] for m in got}) >= o["count"]:
                quiet_until = time.time() + o["quiet"]
    finally:
        consumer.shutdown()
    return {"ok": True, "got": got}


def restart(o):
    if not o.get("group") or not o.get("secs"):
        raise ValueError("restart needs --group and --secs")
    producer = Producer(config(o), (o["topic"],))
    producer.startup()
    consumer = SimpleConsumer(config(o), o["group"], {o["topic"]: FilterExpression("*")}, await_duration=1)
    consumer.startup()
    lock = threading.Lock()
    # A message whose ack failed counts as received: an ack cut off by a kill
    # may have been recorded before the broker died (then it rightly never
    # comes again) or not (then it does); ack_unknown holds those that did not.
    sent, received, acked, ack_unknown, redelivered, errors = set(), set(), set(), set(), set(), []
    counts = {"send_failed": 0, "receive_failed": 0, "ack_failed": 0}
    send_end = [0.0]

    def note(kind, e):
        with lock:
            counts[kind] += 1
            if len(errors) < 20:
                errors.append("%s: %s" % (kind, e))

    def receive():
        while True:
            end = send_end[0]
            with lock:
                done = sent <= received
            if end and (time.time() > end + o["timeout"] or done):
                return
            try:
                msgs = consumer.receive(16, int(o["invisible"] / 1000)) or []
            except Exception as e:  # noqa: BLE001 - counted and retried
                note("receive_failed", e)
                time.sleep(0.2)
                continue
            for m in msgs:
                seq = int(m.properties.get("seq", "-1"))
                with lock:
                    if seq in acked:
                        redelivered.add(seq)
                    received.add(seq)
                    ack_unknown.discard(seq)
                try:
                    consumer.ack(m)
                    with lock:
                        acked.add(seq)
                except Exception as e:  # noqa: BLE001
                    with lock:
                        ack_unknown.add(seq)
                    note("ack_failed", e)

    receiver = threading.Thread(target=receive, daemon=True)
    receiver.start()
    t0, seq, last = time.time(), 0, 0.0
    while time.time() - t0 < o["secs"]:
        m = Message()
        m.topic, m.tag, m.keys = o["topic"], "R", "r-%d" % seq
        m.add_property("seq", str(seq))
        m.body = ("r-%d" % seq).encode()
        try:
            producer.send(m)
            with lock:
                sent.add(seq)
        except Exception as e:  # noqa: BLE001
            note("send_failed", e)
            time.sleep(0.1)
        seq += 1
        if time.time() - last >= 0.2:
            with lock:
                n = len(sent)
            print("acked %d" % n, flush=True)
            last = time.time()
        time.sleep(0.02)
    send_end[0] = time.time()
    receiver.join()
    drain_ms = int((time.time() - send_end[0]) * 1000)
    for c in (consumer, producer):
        try:
            c.shutdown()
        except Exception as e:  # noqa: BLE001
            errors.append("shutdown: %s" % e)
    lost = sorted(sent - received)
    ok = not lost and not redelivered and bool(sent)
    res = {"ok": ok, "sent": seq, "acked_sends": len(sent), "consumed": len(acked), "drain_ms": drain_ms,
           "received": len(received), "ack_unknown": sorted(ack_unknown)[:20],
           "lost": lost[:20], "redelivered": sorted(redelivered)[:20], "errors": errors, **counts}
    if not ok:
        res["error"] = "%d acknowledged sends never received, %d acked messages delivered again" % (len(lost), len(redelivered))
    return res


def main():
    modes = {"produce": produce, "consume": consume, "lite": lite, "lite-simple": lite_simple, "restart": restart}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        print("usage: client.py produce|consume|lite|lite-simple|restart --endpoint HOST:PORT --topic T [--group G] [--count N] "
              "[--prefix P] [--tag T] [--delay MS] [--lite L] [--timeout S] [--invisible MS] [--no-ack] [--filter EXPR] "
              "[--lites A,B] [--quiet S] [--secs S]", file=sys.stderr)
        sys.exit(2)
    # The client logs every rpc; only errors go to stderr.
    logging.getLogger().setLevel(logging.ERROR)
    if os.environ.get("RMQ_PY_DEBUG"):
        logging.getLogger("rocketmq-python-client").setLevel(logging.DEBUG)
    try:
        res = modes[sys.argv[1]](parse_args(sys.argv[2:]))
    except Exception:  # noqa: BLE001 - the result line reports any failure
        res = {"ok": False, "error": traceback.format_exc()}
    print(json.dumps(res, separators=(",", ":")), flush=True)
    sys.exit(0 if res.get("ok") else 1)


if __name__ == "__main__":
    main()
