// Kafka Streams driver for bench/peers/streams.ts: one instance of a Streams app (processing.guarantee
// exactly_once_v2, one stream thread, internal topics with replication factor 1), compiled once by the harness
// and run as java -cp '<classes>:<cache>/peers/java/lib/*' KafkaStreamsDriver. The spec is STREAMS_SPEC in
// the environment (the same JSON drivers/sluice-pace.mjs reads):
//   { brokers, input, output, app, mode: "debounce" | "batch", gapMs, batchSize, stateDir, sessionTimeoutMs,
//     tickPrefix }
// Input: key k, value {"seq":n,"ts":ms} with the record's timestamp ts. Keys starting with tickPrefix are the
// trailing events the harness sends to every partition to move stream time on; they never make a result.
//  debounce: groupByKey, session windows (inactivity gap gapMs, grace 0), aggregate count and highest seq,
//            suppress(untilWindowCloses(unbounded())): one result per key-session once stream time passes
//            the session's end + gap.
//  batch:    a processor with a persistent key-value store collecting each key's seqs; at batchSize it
//            forwards the batch and deletes the key.
// Output (to `output`, key k): {"key","id","count","lastSeq","lastTs","seqs"?}; id is k@<session start> or
// k@<first seq>, what a duplicate would repeat. Lines on stdout, flushed at once:
//   state <STATE> <ms>          each state change; after RUNNING also:
//   assigned <p,p,...> <ms>     the input partitions of this instance's active tasks
//   first <ms>                  the first input record (not a tick) this instance read
import java.time.Duration;
import java.util.Properties;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;
import org.apache.kafka.streams.TaskMetadata;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.SessionWindows;
import org.apache.kafka.streams.kstream.Suppressed;
import org.apache.kafka.streams.kstream.Windowed;
import org.apache.kafka.streams.processor.api.Processor;
import org.apache.kafka.streams.processor.api.ProcessorContext;
import org.apache.kafka.streams.processor.api.Record;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.Stores;

public class KafkaStreamsDriver {
  static String spec;
  static String str(String name) {
    Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]*)\"").matcher(spec);
    if (!m.find()) throw new IllegalArgumentException("STREAMS_SPEC: " + name + " must be a string");
    return m.group(1);
  }
  static long num(String name) {
    Matcher m = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(spec);
    if (!m.find()) throw new IllegalArgumentException("STREAMS_SPEC: " + name + " must be a number");
    return Long.parseLong(m.group(1));
  }
  static long field(String json, String name) { // {"seq":1,"ts":1700000000000}
    int i = json.indexOf("\"" + name + "\":") + name.length() + 3;
    int j = i;
    while (j < json.length() && (Character.isDigit(json.charAt(j)) || json.charAt(j) == '-')) j++;
    return Long.parseLong(json.substring(i, j));
  }
  static synchronized void out(String line) {
    System.out.println(line);
    System.out.flush();
  }

  static String tick;
  static boolean seenFirst;
  static void first(String key) {
    if (seenFirst || key.startsWith(tick)) return;
    seenFirst = true;
    out("first " + System.currentTimeMillis());
  }

  // Session aggregate "count:highest seq".
  static String add(String agg, long seq) {
    String[] p = agg.split(":");
    return (Long.parseLong(p[0]) + 1) + ":" + Math.max(Long.parseLong(p[1]), seq);
  }
  static String merge(String a, String b) {
    String[] x = a.split(":"), y = b.split(":");
    return (Long.parseLong(x[0]) + Long.parseLong(y[0])) + ":" + Math.max(Long.parseLong(x[1]), Long.parseLong(y[1]));
  }
  static String debounced(Windowed<String> w, String agg) {
    String[] p = agg.split(":");
    return "{\"key\":\"" + w.key() + "\",\"id\":\"" + w.key() + "@" + w.window().start() + "\",\"count\":" + p[0]
        + ",\"lastSeq\":" + p[1] + ",\"lastTs\":" + w.window().end() + "}";
  }

  /** Collects each key's seqs in the store; at batchSize forwards them as one result and deletes the key. */
  static class BatchProcessor implements Processor<String, String, String, String> {
    final int size;
    ProcessorContext<String, String> ctx;
    KeyValueStore<String, String> store;
    BatchProcessor(int size) { this.size = size; }
    @Override public void init(ProcessorContext<String, String> ctx) {
      this.ctx = ctx;
      this.store = ctx.getStateStore("batches");
    }
    @Override public void process(Record<String, String> r) {
      if (r.key().startsWith(tick)) return;
      long seq = field(r.value(), "seq");
      String held = store.get(r.key());
      String seqs = held == null ? Long.toString(seq) : held + "," + seq;
      String[] all = seqs.split(",");
      if (all.length < size) { store.put(r.key(), seqs); return; }
      store.delete(r.key());
      String json = "{\"key\":\"" + r.key() + "\",\"id\":\"" + r.key() + "@" + all[0] + "\",\"count\":" + all.length
          + ",\"lastSeq\":" + seq + ",\"lastTs\":" + field(r.value(), "ts") + ",\"seqs\":[" + seqs + "]}";
      ctx.forward(r.withValue(json));
    }
  }

  static void topology(StreamsBuilder b, String mode, String output) {
    KStream<String, String> in = b.<String, String>stream(str("input")).peek((k, v) -> first(k));
    if (mode.equals("debounce")) {
      in.groupByKey()
          .windowedBy(SessionWindows.ofInactivityGapAndGrace(Duration.ofMillis(num("gapMs")), Duration.ZERO))
          .aggregate(() -> "0:-1", (k, v, agg) -> add(agg, field(v, "seq")), (k, a, c) -> merge(a, c),
              Materialized.with(Serdes.String(), Serdes.String()))
          .suppress(Suppressed.untilWindowCloses(Suppressed.BufferConfig.unbounded()))
          .toStream()
          .filter((w, agg) -> agg != null && !w.key().startsWith(tick))
          .map((w, agg) -> KeyValue.pair(w.key(), debounced(w, agg)))
          .to(output);
    } else {
      b.addStateStore(Stores.keyValueStoreBuilder(Stores.persistentKeyValueStore("batches"), Serdes.String(),
          Serdes.String()));
      int size = (int) num("batchSize");
      in.process(() -> new BatchProcessor(size), "batches").to(output);
    }
  }

  static String assigned(KafkaStreams streams) {
    TreeSet<Integer> parts = new TreeSet<>();
    for (ThreadMetadata t : streams.metadataForLocalThreads())
      for (TaskMetadata task : t.activeTasks())
        for (TopicPartition tp : task.topicPartitions()) parts.add(tp.partition());
    StringBuilder s = new StringBuilder();
    for (int p : parts) s.append(s.length() == 0 ? "" : ",").append(p);
    return s.length() == 0 ? "-" : s.toString();
  }

  public static void main(String[] args) throws Exception {
    spec = System.getenv("STREAMS_SPEC");
    tick = str("tickPrefix");
    Matcher brokers = Pattern.compile("\"brokers\":\\[\"([^\"]+)\"").matcher(spec);
    if (!brokers.find()) throw new IllegalArgumentException("STREAMS_SPEC: brokers must be a list");
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, str("app"));
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, brokers.group(1));
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
    props.put(StreamsConfig.STATE_DIR_CONFIG, str("stateDir"));
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), (int) num("sessionTimeoutMs"));
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 500);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG), 100);
    props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    StreamsBuilder b = new StreamsBuilder();
    topology(b, str("mode"), str("output"));
    KafkaStreams streams = new KafkaStreams(b.build(), props);
    streams.setStateListener((now, before) -> {
      out("state " + now + " " + System.currentTimeMillis());
      if (now == KafkaStreams.State.RUNNING) out("assigned " + assigned(streams) + " " + System.currentTimeMillis());
    });
    streams.setUncaughtExceptionHandler(e -> {
      e.printStackTrace();
      return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
          .SHUTDOWN_CLIENT;
    });
    Runtime.getRuntime().addShutdownHook(new Thread(() -> streams.close(Duration.ofSeconds(10))));
    streams.start();
    Thread.currentThread().join();
  }
}
