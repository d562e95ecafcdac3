//! The RocketMQ 5.x Rust client (crate `rocketmq` 5.0.0 of
//! apache/rocketmq-clients, gRPC) as a test driver, with the command line of
//! scripts/python5/client.py and scripts/node5/client.js:
//!
//!   produce  sends --count messages (tag --tag, key key-I, property
//!            color=red, body PREFIX-I) and prints their ids; --group G
//!            makes them FIFO (message group G), --delay MS DELAY (the
//!            crate's delivery timestamp is whole seconds: rounded up);
//!   transaction  with a transaction producer (its TransactionChecker
//!            commits what it is asked about and records it), sends one
//!            TRANSACTION message per comma-separated --tx resolution,
//!            commit, rollback or check (left open for the broker's
//!            check-back through the Telemetry stream), and waits up to
//!            --timeout s until every open one was checked;
//!   consume  receives with a SimpleConsumer until --count messages or
//!            --timeout s, acking each (unless --no-ack), and prints them;
//!   restart  sends (message property seq, one per 20 ms for --secs s) and
//!            receives and acks with a SimpleConsumer while the test
//!            restarts or kills the broker, printing "acked N" every
//!            200 ms; passes when every acknowledged send was received and
//!            no message whose ack succeeded came again (the check of
//!            scripts/python5's restart mode).
//!
//! The last stdout line is the JSON result ({"ok": true|false, ...}); the
//! crate logs to stderr. Exit status 0 when ok, 1 otherwise, 2 on usage.
//!
//!   rust5-driver produce --endpoint 127.0.0.1:8081 --topic T --count 3 --prefix p
//!   rust5-driver consume --endpoint 127.0.0.1:8081 --topic T --group G --count 3 --timeout 20

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rocketmq::conf::{ClientOption, ProducerOption, SimpleConsumerOption};
use rocketmq::model::common::{FilterExpression, FilterType};
use rocketmq::model::message::{MessageBuilder, MessageView};
use rocketmq::model::transaction::{Transaction, TransactionResolution};
use rocketmq::{Producer, SimpleConsumer};
use serde_json::{Value, json};

type Res = Result<Value, String>;

struct Opts {
    s: HashMap<String, String>,
    ack: bool,
}

impl Opts {
    fn parse(args: &[String]) -> Result<Opts, String> {
        let mut s = HashMap::new();
        let mut ack = true;
        let mut i = 0;
        while i < args.len() {
            let a = &args[i];
            let Some(key) = a.strip_prefix("--") else {
                return Err(format!("unexpected argument {a}"));
            };
            if key == "no-ack" {
                ack = false;
                i += 1;
                continue;
            }
            let Some(v) = args.get(i + 1) else {
                return Err(format!("{a} needs a value"));
            };
            s.insert(key.to_string(), v.clone());
            i += 2;
        }
        for k in ["endpoint", "topic"] {
            if !s.contains_key(k) {
                return Err("--endpoint and --topic are required".into());
            }
        }
        Ok(Opts { s, ack })
    }

    fn str(&self, k: &str, def: &str) -> String {
        self.s.get(k).cloned().unwrap_or_else(|| def.to_string())
    }

    fn need(&self, k: &str) -> Result<String, String> {
        self.s
            .get(k)
            .cloned()
            .ok_or_else(|| format!("--{k} is required"))
    }

    fn num(&self, k: &str, def: f64) -> Result<f64, String> {
        match self.s.get(k) {
            None => Ok(def),
            Some(v) => v.parse().map_err(|e| format!("--{k} {v}: {e}")),
        }
    }

    fn client(&self) -> Result<ClientOption, String> {
        let mut c = ClientOption::default();
        c.set_access_url(self.need("endpoint")?);
        c.set_enable_tls(false);
        c.set_timeout(Duration::from_secs(3));
        // The await of a receive's long polling (the crate's default is 40 s).
        c.set_long_polling_timeout(Duration::from_millis(self.num("await", 2000.0)? as u64));
        Ok(c)
    }

    fn producer_option(&self) -> ProducerOption {
        let mut p = ProducerOption::default();
        p.set_topics(vec![self.str("topic", "")]);
        p
    }

    fn consumer(&self) -> Result<SimpleConsumer, String> {
        let mut o = SimpleConsumerOption::default();
        o.set_topics(vec![self.str("topic", "")]);
        o.set_consumer_group(self.need("group")?);
        SimpleConsumer::new(o, self.client()?).map_err(|e| format!("new simple consumer: {e:?}"))
    }

    fn filter(&self) -> FilterExpression {
        FilterExpression::new(FilterType::Tag, self.str("filter", "*"))
    }
}

/// One line of at most 300 characters of an error (the crate's errors
/// carry their sources over many lines).
fn brief(e: &rocketmq::error::ClientError) -> String {
    let s = format!("{e}").replace('\n', " ");
    s.chars().take(300).collect()
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

async fn produce(o: &Opts) -> Res {
    let topic = o.str("topic", "");
    let mut producer = Producer::new(o.producer_option(), o.client()?)
        .map_err(|e| format!("new producer: {e:?}"))?;
    producer
        .start()
        .await
        .map_err(|e| format!("start producer: {e:?}"))?;
    let group = o.s.get("group").cloned();
    let delay = o.num("delay", 0.0)?;
    let mut ids = Vec::new();
    let mut deliver_at = Vec::new();
    let mut failure = None;
    for i in 0..o.num("count", 1.0)? as usize {
        let body = format!("{}-{}", o.str("prefix", "msg"), i).into_bytes();
        let mut b = if let Some(g) = &group {
            MessageBuilder::fifo_message_builder(topic.clone(), body, g.clone())
        } else if delay > 0.0 {
            let at = (now_secs() + delay / 1000.0).ceil() as i64;
            deliver_at.push(at * 1000);
            MessageBuilder::delay_message_builder(topic.clone(), body, at)
        } else {
            MessageBuilder::builder()
                .set_topic(topic.clone())
                .set_body(body)
        };
        b = b
            .set_tag(o.str("tag", "TagA"))
            .set_keys(vec![format!("key-{i}")])
            .set_properties(HashMap::from([("color", "red")]));
        let m = b.build().map_err(|e| format!("build message: {e:?}"))?;
        match producer.send(m).await {
            Ok(r) => ids.push(r.message_id().to_string()),
            Err(e) => {
                failure = Some(format!("send {i}: {e:?}"));
                break;
            }
        }
    }
    let _ = producer.shutdown().await;
    if let Some(e) = failure {
        return Ok(json!({"ok": false, "ids": ids, "error": e}));
    }
    Ok(json!({"ok": true, "ids": ids, "deliverAt": deliver_at}))
}

async fn transaction(o: &Opts) -> Res {
    let topic = o.str("topic", "");
    let plan: Vec<String> = o
        .str("tx", "commit")
        .split(',')
        .map(str::to_string)
        .collect();
    // Ids the checker may commit (the open ones) and the ids it was asked about.
    let open: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let checked: Arc<Mutex<Vec<String>>> = Arc::default();
    let (open2, checked2) = (open.clone(), checked.clone());
    let checker = Box::new(move |_tx: String, m: MessageView| {
        checked2.lock().unwrap().push(m.message_id().to_string());
        if open2.lock().unwrap().contains(m.message_id()) {
            TransactionResolution::COMMIT
        } else {
            TransactionResolution::ROLLBACK
        }
    });
    let mut producer =
        Producer::new_transaction_producer(o.producer_option(), o.client()?, checker)
            .map_err(|e| format!("new transaction producer: {e:?}"))?;
    producer
        .start()
        .await
        .map_err(|e| format!("start producer: {e:?}"))?;
    let mut ids = Vec::new();
    let mut result = serde_json::Map::new();
    let mut failure = None;
    for (i, how) in plan.iter().enumerate() {
        let body = format!("{}-{}", o.str("prefix", "tx"), i).into_bytes();
        let m = MessageBuilder::transaction_message_builder(topic.clone(), body)
            .set_tag(o.str("tag", "TagA"))
            .set_keys(vec![format!("key-{i}")])
            .set_properties(HashMap::from([("color", "red")]))
            .build()
            .map_err(|e| format!("build message: {e:?}"))?;
        let tx = match producer.send_transaction_message(m).await {
            Ok(tx) => tx,
            Err(e) => {
                failure = Some(format!("send {i}: {e:?}"));
                break;
            }
        };
        let id = tx.message_id().to_string();
        ids.push(id.clone());
        result.insert(how.clone(), json!(id));
        let end = match how.as_str() {
            "commit" => tx.commit().await,
            "rollback" => tx.rollback().await,
            "check" => {
                open.lock().unwrap().insert(id);
                Ok(())
            }
            other => {
                failure = Some(format!("--tx {other}: want commit, rollback or check"));
                break;
            }
        };
        if let Err(e) = end {
            failure = Some(format!("{how} {i}: {e:?}"));
            break;
        }
    }
    let deadline = Instant::now() + Duration::from_secs_f64(o.num("timeout", 20.0)?);
    while failure.is_none() && Instant::now() < deadline {
        let seen: BTreeSet<String> = checked.lock().unwrap().iter().cloned().collect();
        if open.lock().unwrap().is_subset(&seen) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // An answer sent just now reaches the broker before the shutdown.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = producer.shutdown().await;
    let checked = checked.lock().unwrap().clone();
    let unchecked: Vec<String> = open
        .lock()
        .unwrap()
        .iter()
        .filter(|id| !checked.contains(id))
        .cloned()
        .collect();
    if failure.is_none() && !unchecked.is_empty() {
        failure = Some(format!("open transactions never checked: {unchecked:?}"));
    }
    let mut res = json!({"ok": failure.is_none(), "ids": ids, "tx": result, "checked": checked});
    if let Some(e) = failure {
        res["error"] = json!(e);
    }
    Ok(res)
}

fn view(m: &MessageView) -> Value {
    let mut keys = m.keys().to_vec();
    keys.sort();
    json!({
        "id": m.message_id(),
        "topic": m.topic(),
        "body": String::from_utf8_lossy(m.body()),
        "tag": m.tag().unwrap_or(""),
        "keys": keys,
        "color": m.properties().get("color").cloned().unwrap_or_default(),
        "properties": m.properties(),
        "deliveryAttempt": m.delivery_attempt(),
        "messageGroup": m.message_group().unwrap_or(""),
        "deliveryTimestamp": m.delivery_timestamp().unwrap_or(0),
        "bornHost": m.born_host(),
        "bornTimestamp": m.born_timestamp(),
        "receivedAt": (now_secs() * 1000.0) as i64,
    })
}

async fn consume(o: &Opts) -> Res {
    let mut consumer = o.consumer()?;
    consumer
        .start()
        .await
        .map_err(|e| format!("start simple consumer: {e:?}"))?;
    let (topic, filter) = (o.str("topic", ""), o.filter());
    let count = o.num("count", 1.0)? as usize;
    let invisible = Duration::from_millis(o.num("invisible", 15000.0)? as u64);
    let deadline = Instant::now() + Duration::from_secs_f64(o.num("timeout", 20.0)?);
    let mut got = Vec::new();
    let mut errors = Vec::new();
    while got.len() < count && Instant::now() < deadline {
        match consumer.receive_with(&topic, &filter, 16, invisible).await {
            Ok(ms) => {
                for m in ms {
                    got.push(view(&m));
                    if o.ack {
                        if let Err(e) = consumer.ack(&m).await {
                            errors.push(format!("ack {}: {}", m.message_id(), brief(&e)));
                        }
                    }
                }
            }
            Err(e) => {
                if errors.len() < 20 {
                    errors.push(format!("receive: {}", brief(&e)));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
    let _ = consumer.shutdown().await;
    let ok = got.len() >= count;
    let mut res = json!({"ok": ok, "messages": got, "errors": errors});
    if !ok {
        res["error"] = json!(format!(
            "received {} of {count} messages; errors {errors:?}",
            got.len()
        ));
    }
    Ok(res)
}

#[derive(Default)]
struct RestartState {
    sent: BTreeSet<i64>,
    // A message whose ack failed counts as received: an ack cut off by a
    // kill may have been recorded before the broker died (then it rightly
    // never comes again) or not (then it does); ack_unknown holds those
    // that did not.
    received: BTreeSet<i64>,
    acked: BTreeSet<i64>,
    ack_unknown: BTreeSet<i64>,
    redelivered: BTreeSet<i64>,
    errors: Vec<String>,
    send_failed: u64,
    receive_failed: u64,
    ack_failed: u64,
    send_end: Option<Instant>,
}

impl RestartState {
    fn note(&mut self, what: &str, e: String) {
        match what {
            "send" => self.send_failed += 1,
            "receive" => self.receive_failed += 1,
            _ => self.ack_failed += 1,
        }
        if self.errors.len() < 20 {
            self.errors.push(format!("{what}: {e}"));
        }
    }
}

async fn restart(o: &Opts) -> Res {
    let secs = o.num("secs", 0.0)?;
    if secs <= 0.0 {
        return Err("restart needs --group and --secs".into());
    }
    let topic = o.str("topic", "");
    let timeout = Duration::from_secs_f64(o.num("timeout", 20.0)?);
    let invisible = Duration::from_millis(o.num("invisible", 15000.0)? as u64);
    let mut producer = Producer::new(o.producer_option(), o.client()?)
        .map_err(|e| format!("new producer: {e:?}"))?;
    producer
        .start()
        .await
        .map_err(|e| format!("start producer: {e:?}"))?;
    let mut consumer = o.consumer()?;
    consumer
        .start()
        .await
        .map_err(|e| format!("start simple consumer: {e:?}"))?;
    let consumer = Arc::new(consumer);
    let st: Arc<Mutex<RestartState>> = Arc::default();

    let receiver = {
        let (consumer, st, topic) = (consumer.clone(), st.clone(), topic.clone());
        let filter = FilterExpression::new(FilterType::Tag, "*");
        tokio::spawn(async move {
            loop {
                {
                    let s = st.lock().unwrap();
                    if let Some(end) = s.send_end {
                        if end.elapsed() > timeout || s.sent.is_subset(&s.received) {
                            return;
                        }
                    }
                }
                let ms = match consumer.receive_with(&topic, &filter, 16, invisible).await {
                    Ok(ms) => ms,
                    Err(e) => {
                        st.lock().unwrap().note("receive", brief(&e));
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        continue;
                    }
                };
                for m in ms {
                    let seq: i64 = m
                        .properties()
                        .get("seq")
                        .and_then(|v| v.parse().ok())
                        .unwrap_or(-1);
                    {
                        let mut s = st.lock().unwrap();
                        if s.acked.contains(&seq) {
                            s.redelivered.insert(seq);
                        }
                        s.received.insert(seq);
                        s.ack_unknown.remove(&seq);
                    }
                    match consumer.ack(&m).await {
                        Ok(()) => {
                            st.lock().unwrap().acked.insert(seq);
                        }
                        Err(e) => {
                            let mut s = st.lock().unwrap();
                            s.ack_unknown.insert(seq);
                            s.note("ack", brief(&e));
                        }
                    }
                }
            }
        })
    };

    let t0 = Instant::now();
    let mut last = Instant::now() - Duration::from_secs(1);
    let mut seq: i64 = 0;
    while t0.elapsed().as_secs_f64() < secs {
        let m = MessageBuilder::builder()
            .set_topic(topic.clone())
            .set_tag("R")
            .set_keys(vec![format!("r-{seq}")])
            .set_properties(HashMap::from([("seq".to_string(), seq.to_string())]))
            .set_body(format!("r-{seq}").into_bytes())
            .build()
            .map_err(|e| format!("build message: {e:?}"))?;
        match producer.send(m).await {
            Ok(_) => {
                st.lock().unwrap().sent.insert(seq);
            }
            Err(e) => {
                st.lock().unwrap().note("send", brief(&e));
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        seq += 1;
        if last.elapsed() >= Duration::from_millis(200) {
            let n = st.lock().unwrap().sent.len();
            println!("acked {n}");
            last = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let end = Instant::now();
    st.lock().unwrap().send_end = Some(end);
    receiver.await.map_err(|e| format!("receiver task: {e}"))?;
    let drain_ms = end.elapsed().as_millis() as u64;
    let mut shutdown_errors = Vec::new();
    match Arc::try_unwrap(consumer) {
        Ok(c) => {
            if let Err(e) = c.shutdown().await {
                shutdown_errors.push(format!("consumer shutdown: {e:?}"));
            }
        }
        Err(_) => shutdown_errors.push("consumer still shared".into()),
    }
    if let Err(e) = producer.shutdown().await {
        shutdown_errors.push(format!("producer shutdown: {e:?}"));
    }
    let s = st.lock().unwrap();
    let lost: Vec<i64> = s.sent.difference(&s.received).cloned().collect();
    let ok = lost.is_empty() && s.redelivered.is_empty() && !s.sent.is_empty();
    let mut errors = s.errors.clone();
    errors.extend(shutdown_errors);
    let mut res = json!({
        "ok": ok, "sent": seq, "acked_sends": s.sent.len(), "consumed": s.acked.len(), "drain_ms": drain_ms,
        "received": s.received.len(), "ack_unknown": s.ack_unknown.iter().take(20).collect::<Vec<_>>(),
        "lost": lost.iter().take(20).collect::<Vec<_>>(),
        "redelivered": s.redelivered.iter().take(20).collect::<Vec<_>>(),
        "errors": errors, "send_failed": s.send_failed, "receive_failed": s.receive_failed, "ack_failed": s.ack_failed,
    });
    if !ok {
        res["error"] = json!(format!(
            "{} acknowledged sends never received, {} acked messages delivered again",
            lost.len(),
            s.redelivered.len()
        ));
    }
    Ok(res)
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map(String::as_str).unwrap_or("");
    if !["produce", "transaction", "consume", "restart"].contains(&mode) {
        eprintln!(
            "usage: rust5-driver produce|transaction|consume|restart --endpoint HOST:PORT --topic T [--group G] \
             [--count N] [--prefix P] [--tag T] [--delay MS] [--tx commit,rollback,check] [--timeout S] \
             [--invisible MS] [--await MS] [--no-ack] [--filter EXPR] [--secs S]"
        );
        std::process::exit(2);
    }
    let res = match Opts::parse(&args[2..]) {
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
        Ok(o) => match mode {
            "produce" => produce(&o).await,
            "transaction" => transaction(&o).await,
            "consume" => consume(&o).await,
            _ => restart(&o).await,
        },
    };
    let res = res.unwrap_or_else(|e| json!({"ok": false, "error": e}));
    println!("{res}");
    std::process::exit(if res["ok"] == json!(true) { 0 } else { 1 });
}
