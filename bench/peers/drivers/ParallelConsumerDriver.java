// Confluent Parallel Consumer driver, run as a single-file source program:
//   java -cp '<cache>/peers/java/lib/*' bench/peers/drivers/ParallelConsumerDriver.java
// ProcessingOrder.KEY, maxConcurrency = spec.concurrency, the handler on PC's thread pool (sleeping with
// Thread.sleep for the 5 ms workloads), periodic async commits. Same spec, bookkeeping and result as
// drivers/common.mjs (PEER_SPEC in the environment, one JSON line on stdout).
import io.confluent.parallelconsumer.ParallelConsumerOptions;
import io.confluent.parallelconsumer.ParallelConsumerOptions.CommitMode;
import io.confluent.parallelconsumer.ParallelConsumerOptions.ProcessingOrder;
import io.confluent.parallelconsumer.ParallelStreamProcessor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ParallelConsumerDriver {
  static String spec;
  static String str(String name) {
    Matcher m = Pattern.compile("\"" + name + "\":\"([^\"]*)\"").matcher(spec);
    return m.find() ? m.group(1) : null;
  }
  static long num(String name, long dflt) {
    Matcher m = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(spec);
    return m.find() ? Long.parseLong(m.group(1)) : dflt;
  }
  static boolean bool(String name) { return spec.contains("\"" + name + "\":true"); }
  static long field(String json, String name) { // values are {"id":1,"seq":0,"ts":1700000000000}
    int i = json.indexOf("\"" + name + "\":") + name.length() + 3;
    int j = i;
    while (j < json.length() && (Character.isDigit(json.charAt(j)) || json.charAt(j) == '-')) j++;
    return Long.parseLong(json.substring(i, j));
  }

  // Bookkeeping; handlers run on PC's pool, so every update is under the tracker's lock.
  static int n, total, stopAt, keys;
  static long idleMs;
  static String mode;
  static final Map<Long, Long> lastSeq = new HashMap<>();
  static byte[] seen;
  static final List<Long> ids = new ArrayList<>();
  static long[] lat = new long[1024];
  static int latCount, handled, distinct, violations, backlog;
  static long first, last, lastHandledAt = System.nanoTime();
  static final CountDownLatch done = new CountDownLatch(1);

  static synchronized void begin(long id, long seq, long ts) {
    if (id >= n) {
      if (latCount == lat.length) lat = Arrays.copyOf(lat, lat.length * 2);
      lat[latCount++] = System.currentTimeMillis() - ts;
    }
    Long key = id % keys;
    Long prev = lastSeq.get(key);
    if (prev != null && seq <= prev) violations++;
    lastSeq.put(key, seq);
  }
  static synchronized void end(long id) {
    long now = System.nanoTime();
    lastHandledAt = now;
    handled++;
    if (seen[(int) id] == 0) { seen[(int) id] = 1; distinct++; }
    if (id < n) {
      if (backlog == 0) first = now;
      last = now;
      if (++backlog == n && mode.equals("measure")) { System.out.println("{\"backlog\":true}"); System.out.flush(); }
    }
    if (!mode.equals("measure")) ids.add(id);
    if (mode.equals("measure") && handled == total) done.countDown();
    if (mode.equals("stopAt") && handled == stopAt) done.countDown();
  }
  static long peakRssKb() throws Exception {
    for (String line : Files.readAllLines(Path.of("/proc/self/status")))
      if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", ""));
    return 0;
  }

  public static void main(String[] args) throws Exception {
    spec = System.getenv("PEER_SPEC");
    n = (int) num("n", 0); stopAt = (int) num("stopAt", 0); keys = (int) num("keys", 1000);
    idleMs = num("idleMs", 3000); mode = str("mode");
    total = n + (int) num("tail", 0); seen = new byte[total];
    long sleepMs = num("sleepMs", 0);
    Matcher b = Pattern.compile("\"brokers\":\\[\"([^\"]+)\"").matcher(spec);
    b.find();

    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, b.group(1));
    props.put(ConsumerConfig.GROUP_ID_CONFIG, str("group"));
    props.put(ConsumerConfig.CLIENT_ID_CONFIG, "peer-parallel-consumer");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "100");
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props);

    ParallelConsumerOptions<String, String> options = ParallelConsumerOptions.<String, String>builder()
        .ordering(ProcessingOrder.KEY)
        .maxConcurrency((int) num("concurrency", 16))
        .commitMode(CommitMode.PERIODIC_CONSUMER_ASYNCHRONOUS)
        .consumer(consumer)
        // kafka-clients 3.7+ hides the consumer's config behind a delegate, which PC's reflective check of
        // enable.auto.commit cannot read; auto-commit is off above.
        .ignoreReflectiveAccessExceptionsForAutoCommitDisabledCheck(true)
        .build();
    ParallelStreamProcessor<String, String> pc = ParallelStreamProcessor.createEosStreamProcessor(options);
    pc.subscribe(List.of(str("topic")));
    pc.poll(ctx -> {
      String value = ctx.getSingleConsumerRecord().value();
      long id = field(value, "id");
      begin(id, field(value, "seq"), field(value, "ts"));
      if (sleepMs > 0) {
        try { Thread.sleep(sleepMs); } catch (InterruptedException e) { Thread.currentThread().interrupt(); throw new RuntimeException(e); }
      }
      end(id);
    });
    System.out.println("{\"ready\":true}");
    System.out.flush();

    if (mode.equals("drain")) {
      long firstWaitNs = TimeUnit.MILLISECONDS.toNanos(num("firstWaitMs", 60000));
      long start = System.nanoTime();
      for (;;) {
        Thread.sleep(50);
        synchronized (ParallelConsumerDriver.class) {
          long now = System.nanoTime();
          if (handled == 0 ? now - start > firstWaitNs : now - lastHandledAt > TimeUnit.MILLISECONDS.toNanos(idleMs)) break;
        }
      }
    } else {
      done.await();
    }
    pc.close(); // stop polling, finish or abandon in-flight work as PC's default close does, commit, close
    long[] sorted;
    StringBuilder out = new StringBuilder();
    synchronized (ParallelConsumerDriver.class) {
      sorted = Arrays.copyOf(lat, latCount);
      Arrays.sort(sorted);
      double rate = backlog > 1 ? (backlog - 1) / ((last - first) / 1e9) : 0;
      out.append("{\"system\":\"parallel-consumer\",\"handled\":").append(handled)
          .append(",\"distinct\":").append(distinct).append(",\"violations\":").append(violations)
          .append(",\"rate\":").append(rate)
          .append(",\"p50Ms\":").append(sorted.length > 0 ? sorted[Math.min(sorted.length - 1, sorted.length / 2)] : -1)
          .append(",\"p99Ms\":").append(sorted.length > 0 ? sorted[Math.min(sorted.length - 1, (int) (sorted.length * 0.99))] : -1)
          .append(",\"peakRssKb\":").append(peakRssKb());
      if (!mode.equals("measure")) {
        out.append(",\"ids\":[");
        for (int i = 0; i < ids.size(); i++) { if (i > 0) out.append(','); out.append(ids.get(i)); }
        out.append(']');
      }
      out.append('}');
    }
    System.out.println(out);
    System.out.flush();
    System.exit(0);
  }
}
