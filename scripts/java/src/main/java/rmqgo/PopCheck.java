package rmqgo;

import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

import org.apache.rocketmq.client.consumer.DefaultMQPushConsumer;
import org.apache.rocketmq.client.consumer.listener.ConsumeConcurrentlyStatus;
import org.apache.rocketmq.client.consumer.listener.MessageListenerConcurrently;
import org.apache.rocketmq.client.producer.DefaultMQProducer;
import org.apache.rocketmq.client.producer.SendResult;
import org.apache.rocketmq.client.producer.SendStatus;
import org.apache.rocketmq.common.consumer.ConsumeFromWhere;
import org.apache.rocketmq.common.message.MessageConst;
import org.apache.rocketmq.common.message.Message;
import org.apache.rocketmq.common.message.MessageExt;
import org.apache.rocketmq.common.message.MessageRequestMode;
import org.apache.rocketmq.remoting.protocol.route.BrokerData;
import org.apache.rocketmq.remoting.protocol.route.TopicRouteData;
import org.apache.rocketmq.tools.admin.DefaultMQAdminExt;

/**
 * POP consumption with the Java client's DefaultMQPushConsumer
 * ({@code ClientCheck pop -n NS -t TOPIC -g GROUP -count N -timeout S}):
 * DefaultMQAdminExt.setMessageRequestMode switches the group to POP on
 * every broker of the topic (SET_MESSAGE_REQUEST_MODE), the consumer runs
 * with clientRebalance=false (QUERY_ASSIGNMENT answers POP, queue -1), pops,
 * acks (ACK_MESSAGE) and, for every fifth message, answers RECONSUME_LATER
 * once: the client then moves its invisible time
 * (CHANGE_MESSAGE_INVISIBLETIME, 10 s) and the broker's revive service
 * redelivers it through the pop retry topic with reconsumeTimes 1.
 * Passes when every message was consumed, the failed ones came back with
 * reconsumeTimes ≥ 1, and no acknowledged message came back.
 */
final class PopCheck {
    private PopCheck() {
    }

    static final class Opts {
        String ns = "127.0.0.1:9876", topic = "PopJavaTopic", group = "pop_java_cg";
        int count = 40;
        long timeoutMs = 60_000;

        boolean set(String name, String v) {
            switch (name) {
                case "n": ns = v; break;
                case "t": topic = v; break;
                case "g": group = v; break;
                case "count": count = Integer.parseInt(v); break;
                case "timeout": timeoutMs = ClientCheck.secondsMs(v); break;
                default: return false;
            }
            return true;
        }
    }

    static int run(String[] args) {
        Opts o = new Opts();
        ClientCheck.parseOptions(args, o::set);
        ClientCheck.Result r = new ClientCheck.Result("pop", o.ns);
        r.f.put("topic", o.topic);
        r.f.put("group", o.group);
        return r.run(() -> check(o.ns, o.topic, o.group, o.count, o.timeoutMs, r));
    }

    static void check(String ns, String topic, String group, int count, long timeoutMs, ClientCheck.Result r) throws Exception {
        DefaultMQAdminExt admin = new DefaultMQAdminExt();
        admin.setNamesrvAddr(ns);
        admin.setInstanceName("rmqgo-pop-admin-" + System.nanoTime());
        admin.start();
        try {
            TopicRouteData route = admin.examineTopicRouteInfo(topic);
            for (BrokerData bd : route.getBrokerDatas()) {
                admin.setMessageRequestMode(bd.selectBrokerAddr(), topic, group, MessageRequestMode.POP, 0, 5000);
            }
        } finally {
            admin.shutdown();
        }

        DefaultMQProducer p = new DefaultMQProducer("pop_java_pg");
        p.setNamesrvAddr(ns);
        p.setInstanceName("rmqgo-pop-p-" + System.nanoTime());
        p.start();
        int sent = 0;
        try {
            for (int i = 0; i < count; i++) {
                Message m = new Message(topic, "P", "k" + i, ("pop-" + i).getBytes(StandardCharsets.UTF_8));
                SendResult res = p.send(m);
                if (res.getSendStatus() == SendStatus.SEND_OK) {
                    sent++;
                }
            }
        } finally {
            p.shutdown();
        }
        r.f.put("sent", sent);

        Map<String, AtomicInteger> deliveries = new ConcurrentHashMap<>();
        Set<String> done = ConcurrentHashMap.newKeySet();
        Set<String> retried = ConcurrentHashMap.newKeySet();
        AtomicInteger afterAck = new AtomicInteger();
        AtomicInteger badRetry = new AtomicInteger();
        AtomicInteger notPopped = new AtomicInteger();
        DefaultMQPushConsumer c = new DefaultMQPushConsumer(group);
        c.setNamesrvAddr(ns);
        c.setInstanceName("rmqgo-pop-c-" + System.nanoTime());
        c.setClientRebalance(false);
        c.setConsumeFromWhere(ConsumeFromWhere.CONSUME_FROM_FIRST_OFFSET);
        c.setPopInvisibleTime(15_000);
        c.setPopBatchNums(8);
        c.subscribe(topic, "*");
        c.registerMessageListener((MessageListenerConcurrently) (msgs, ctx) -> {
            for (MessageExt m : msgs) {
                String body = new String(m.getBody(), StandardCharsets.UTF_8);
                int n = deliveries.computeIfAbsent(body, k -> new AtomicInteger()).incrementAndGet();
                if (m.getProperty(MessageConst.PROPERTY_POP_CK) == null) {
                    notPopped.incrementAndGet();
                    r.error(body + " was not popped (no POP_CK receipt): the consumer is not in pop mode");
                }
                if (done.contains(body)) {
                    afterAck.incrementAndGet();
                    r.error("acked message " + body + " delivered again (reconsumeTimes " + m.getReconsumeTimes() + ")");
                }
                int idx = Integer.parseInt(body.substring("pop-".length()));
                if (idx % 5 == 0 && n == 1) {
                    return ConsumeConcurrentlyStatus.RECONSUME_LATER;
                }
                if (idx % 5 == 0) {
                    if (m.getReconsumeTimes() < 1 || !topic.equals(m.getTopic())) {
                        badRetry.incrementAndGet();
                        r.error(body + " came back with reconsumeTimes " + m.getReconsumeTimes() + " topic " + m.getTopic());
                    }
                    retried.add(body);
                }
                done.add(body);
            }
            return ConsumeConcurrentlyStatus.CONSUME_SUCCESS;
        });
        c.start();
        long t0 = System.nanoTime();
        try {
            long deadline = System.currentTimeMillis() + timeoutMs;
            while (done.size() < count && System.currentTimeMillis() < deadline) {
                Thread.sleep(100);
            }
            // A little longer: an acked message must not come back.
            Thread.sleep(2000);
        } finally {
            c.shutdown();
        }
        int expectedRetried = (count + 4) / 5;
        r.f.put("consumed", done.size());
        r.f.put("retried", retried.size());
        r.f.put("delivered_after_ack", afterAck.get());
        r.f.put("consume_ms", (System.nanoTime() - t0) / 1_000_000);
        if (sent != count) {
            r.fail("sent " + sent + " of " + count);
        }
        if (done.size() != count) {
            r.fail("consumed " + done.size() + " of " + count);
        }
        if (retried.size() != expectedRetried) {
            r.fail("retried " + retried.size() + " of " + expectedRetried);
        }
        r.f.put("not_popped", notPopped.get());
        if (notPopped.get() > 0) {
            r.fail(notPopped.get() + " deliveries without a pop receipt");
        }
        if (afterAck.get() > 0 || badRetry.get() > 0) {
            r.fail(afterAck.get() + " deliveries after ack, " + badRetry.get() + " bad retries");
        }
    }
}
