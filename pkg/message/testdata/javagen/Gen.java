// Gen prints golden vectors from Apache RocketMQ's own MessageDecoder
// (rocketmq-common 5.5.0) for pkg/message's tests. Run:
//   CP=$(cat ../../../../scripts/java/target/classpath-5.5.0.txt)
//   javac -cp "$CP" -d /tmp/gen Gen.java && java -cp "/tmp/gen:$CP" Gen v2=<hex> > ../java_golden.tsv
// where <hex> is a Go-encoded record (the goinput line, appended by hand).
// Output: one "kind<TAB>name<TAB>field..." line per vector.
import java.net.*;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.*;
import org.apache.rocketmq.common.message.*;
import org.apache.rocketmq.common.sysflag.MessageSysFlag;

public class Gen {
    static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder();
        for (byte x : b) sb.append(String.format("%02x", x));
        return sb.toString();
    }
    static byte[] unhex(String s) {
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }
    static String sortedProps(Map<String, String> m) {
        StringBuilder sb = new StringBuilder();
        if (m == null) return sb.toString();
        for (String k : new TreeMap<>(m).keySet()) sb.append(hex(k.getBytes(StandardCharsets.UTF_8))).append('=').append(hex(m.get(k).getBytes(StandardCharsets.UTF_8))).append(',');
        return sb.toString();
    }
    static MessageExt ext(String topic, String body, boolean v6, Map<String, String> props) throws Exception {
        MessageExt m = new MessageExt();
        m.setTopic(topic);
        m.setFlag(7);
        m.setBody(body.getBytes(StandardCharsets.UTF_8));
        m.setQueueId(3);
        m.setQueueOffset(123456789L);
        m.setCommitLogOffset(1073741824L + 42);
        m.setBornTimestamp(1700000000123L);
        m.setStoreTimestamp(1700000000456L);
        m.setReconsumeTimes(2);
        m.setPreparedTransactionOffset(99);
        int sys = MessageSysFlag.TRANSACTION_COMMIT_TYPE;
        if (v6) {
            m.setBornHost(new InetSocketAddress(InetAddress.getByName("2001:db8::1"), 50001));
            m.setStoreHost(new InetSocketAddress(InetAddress.getByName("fe80::abcd"), 10911));
            sys |= MessageSysFlag.BORNHOST_V6_FLAG | MessageSysFlag.STOREHOSTADDRESS_V6_FLAG;
        } else {
            m.setBornHost(new InetSocketAddress(InetAddress.getByName("10.1.2.3"), 50001));
            m.setStoreHost(new InetSocketAddress(InetAddress.getByName("192.168.0.10"), 10911));
        }
        m.setSysFlag(sys);
        for (Map.Entry<String, String> e : props.entrySet()) MessageAccessor.putProperty(m, e.getKey(), e.getValue());
        m.setBodyCRC(org.apache.rocketmq.common.UtilAll.crc32(m.getBody()));
        return m;
    }
    public static void main(String[] args) throws Exception {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("TAGS", "TagA");
        p.put("KEYS", "k1 k2");
        p.put("UNIQ_KEY", "0A0102030000000000000000000000AB");
        String[][] stored = {{"v4", "TopicTest", "Hello RocketMQ", "0"}, {"v6", "TopicTest", "Hello v6", "1"}, {"v4_empty", "T", "", "0"}};
        for (String[] c : stored) {
            Map<String, String> props = c[0].equals("v4_empty") ? new HashMap<>() : p;
            MessageExt m = ext(c[1], c[2], c[3].equals("1"), props);
            byte[] b = MessageDecoder.encode(m, false);
            // Decode it back to prove the vector is what Java reads.
            MessageExt d = MessageDecoder.decode(ByteBuffer.wrap(b), true, false, false);
            System.out.println("stored\t" + c[0] + "\t" + hex(b) + "\t" + d.getTopic() + "\t" + d.getMsgId() + "\t" + sortedProps(d.getProperties()));
        }
        // Records produced by Go (args: name=hex) decoded by Java.
        for (String a : args) {
            String[] kv = a.split("=", 2);
            ByteBuffer bb = ByteBuffer.wrap(unhex(kv[1]));
            MessageExt d = MessageDecoder.decode(bb, true, false, false);
            System.out.println("javadecode\t" + kv[0] + "\t" + (d == null ? "null" : d.getTopic() + "\t" + d.getMsgId() + "\t" + d.getQueueOffset() + "\t" + d.getCommitLogOffset() + "\t" + d.getStoreTimestamp() + "\t" + new String(d.getBody(), StandardCharsets.UTF_8) + "\t" + sortedProps(d.getProperties()) + "\t" + d.getBornHost() + "\t" + d.getStoreHost()));
        }
        String[] propInputs = {"a\u0001b\u0002", "a\u0001b", "\u0001b\u0002a\u0001\u0002", "k\u0001v\u0001w\u0002", "x\u0002\u0002y\u0001z\u0002", "k\u0001v1\u0002k\u0001v2\u0002", "ab\u0002cd\u0001", "", "\u0002\u0002\u0002", "\u00e9\u0001v\u0002", "k\u0001\u0002v\u0001k\u0002"};
        for (String s : propInputs) {
            System.out.println("props\t" + hex(s.getBytes(StandardCharsets.UTF_8)) + "\t" + sortedProps(MessageDecoder.string2messageProperties(s)));
        }
        String[] tags = {"", "TagA", "tag-with-longer-text-0123456789", "\u4e2d\u6587", "\ud83d\ude00emoji", "\u00ff\u00fe", "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"};
        for (String t : tags) {
            System.out.println("tag\t" + hex(t.getBytes(StandardCharsets.UTF_8)) + "\t" + t.hashCode());
        }
        System.out.println("msgid\tv4\t" + MessageDecoder.createMessageId(new InetSocketAddress(InetAddress.getByName("192.168.0.10"), 10911), 1073741866L));
        System.out.println("msgid\tv6\t" + MessageDecoder.createMessageId(new InetSocketAddress(InetAddress.getByName("fe80::abcd"), 10911), 1073741866L));
        List<Message> batch = new ArrayList<>();
        Message b1 = new Message("TopicTest", "TagA", "key1", "body-one".getBytes(StandardCharsets.UTF_8));
        b1.setFlag(5);
        Message b2 = new Message("TopicTest", "body-two".getBytes(StandardCharsets.UTF_8));
        batch.add(b1);
        batch.add(b2);
        byte[] bb = MessageDecoder.encodeMessages(batch);
        List<Message> back = MessageDecoder.decodeMessages(ByteBuffer.wrap(bb));
        StringBuilder sb = new StringBuilder();
        for (Message m : back) sb.append(m.getFlag()).append('|').append(new String(m.getBody(), StandardCharsets.UTF_8)).append('|').append(sortedProps(m.getProperties())).append(';');
        System.out.println("batch\tjava\t" + hex(bb) + "\t" + sb);
    }
}
