package rmqgo;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.apache.rocketmq.client.apis.ClientConfiguration;
import org.apache.rocketmq.client.apis.ClientConfigurationBuilder;
import org.apache.rocketmq.client.apis.ClientServiceProvider;
import org.apache.rocketmq.client.apis.StaticSessionCredentialsProvider;
import org.apache.rocketmq.client.apis.message.Message;
import org.apache.rocketmq.client.apis.producer.Producer;
import org.apache.rocketmq.client.apis.producer.SendReceipt;

/**
 * Sends NORMAL messages with the RocketMQ 5.x Java client (gRPC) to one
 * endpoint. Message i has tag TagA, key "key-i", property color=red and
 * body "&lt;prefix&gt;-i". The last stdout line is JSON:
 * {"ok":true,"ids":["..."]} (or {"ok":false,"error":"..."}, exit 1).
 *
 * Usage: GrpcProducer &lt;endpoint host:port&gt; &lt;topic&gt; &lt;count&gt; &lt;tls true|false&gt; &lt;body prefix&gt;
 * [&lt;access key&gt; &lt;secret key&gt;]: with the keys the client signs its requests
 * (StaticSessionCredentialsProvider, ACL 2.0).
 */
public final class GrpcProducer {
    public static void main(String[] args) {
        if (args.length != 5 && args.length != 7) {
            System.err.println("usage: GrpcProducer <endpoint> <topic> <count> <tls> <body prefix> [<access key> <secret key>]");
            System.exit(2);
        }
        String endpoint = args[0], topic = args[1], prefix = args[4];
        int count = Integer.parseInt(args[2]);
        boolean tls = Boolean.parseBoolean(args[3]);
        List<String> ids = new ArrayList<>();
        try {
            ClientServiceProvider provider = ClientServiceProvider.loadService();
            ClientConfigurationBuilder b = ClientConfiguration.newBuilder().setEndpoints(endpoint)
                .enableSsl(tls).setRequestTimeout(Duration.ofSeconds(5));
            if (args.length == 7) {
                b.setCredentialProvider(new StaticSessionCredentialsProvider(args[5], args[6]));
            }
            ClientConfiguration cfg = b.build();
            try (Producer producer = provider.newProducerBuilder().setClientConfiguration(cfg).setTopics(topic).build()) {
                for (int i = 0; i < count; i++) {
                    Message m = provider.newMessageBuilder().setTopic(topic).setTag("TagA").setKeys("key-" + i)
                        .addProperty("color", "red").setBody((prefix + "-" + i).getBytes(StandardCharsets.UTF_8)).build();
                    SendReceipt r = producer.send(m);
                    ids.add(r.getMessageId().toString());
                }
            }
        } catch (Throwable e) {
            System.out.println("{\"ok\":false,\"error\":\"" + String.valueOf(e).replace("\\", "\\\\").replace("\"", "'").replace("\n", " ") + "\"}");
            System.exit(1);
        }
        StringBuilder sb = new StringBuilder("{\"ok\":true,\"ids\":[");
        for (int i = 0; i < ids.size(); i++) {
            sb.append(i == 0 ? "" : ",").append('"').append(ids.get(i)).append('"');
        }
        System.out.println(sb.append("]}"));
        System.exit(0);
    }
}
