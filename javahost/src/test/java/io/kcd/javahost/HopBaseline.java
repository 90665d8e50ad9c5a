package io.kcd.javahost;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/**
 * The in-JVM baseline of the host's socket hop (issue 17, Measure): the test
 * plugins in mode bench driven as Kafka Connect's WorkerSourceTask and
 * WorkerSinkTask drive a task in their own JVM, with the host's own plugin
 * isolation (Catalog) and converter chain (Stages), but no socket and no
 * protobuf. Per source batch: poll, transforms, header/key/value converters,
 * a ProducerRecord each, and commitRecord with metadata (what the worker does
 * once Kafka acks). Per sink batch: the consumer's raw records through the
 * converters to SinkRecords, transforms, put. Kafka itself is left out on
 * both sides, as in the Go benchmarks (BenchmarkHostSourcePoll, BenchmarkHostSinkPut).
 *
 * <p>Run from the built outputs:
 * <pre>
 * java -cp 'javahost/target/test-classes:javahost/target/classes:javahost/target/javahost/lib/*' \
 *   io.kcd.javahost.HopBaseline javahost/testplugins/target/plugin [seconds-per-size]
 * </pre>
 * It prints one line per measurement:
 * {@code hop-baseline source batch=100 ns/batch=... ns/record=... cpu-ns/record=... iterations=...}.
 */
public final class HopBaseline {
  static final String SOURCE_TASK = "io.kcd.testplugins.MisbehaveSourceTask";
  static final String SINK_TASK = "io.kcd.testplugins.MisbehaveSinkTask";
  static final String SOURCE_CONNECTOR = "io.kcd.testplugins.MisbehaveSourceConnector";
  static final String TOPIC = "bench";
  static final int[] BATCHES = {1, 100, 1000};

  private HopBaseline() {}

  public static void main(String[] args) throws Exception {
    if (args.length < 1) {
      System.err.println("usage: HopBaseline PLUGIN_PATH [seconds-per-size]");
      System.exit(2);
    }
    double seconds = args.length > 1 ? Double.parseDouble(args[1]) : 2;
    Catalog catalog = new Catalog(args[0]);
    ClassLoader loader = catalog.plugins.connectorClass(SOURCE_CONNECTOR).getClassLoader();
    for (int batch : BATCHES) {
      report("source", batch, new Source(catalog, loader, batch), seconds);
    }
    for (int batch : BATCHES) {
      report("sink", batch, new Sink(catalog, loader, batch), seconds);
    }
  }

  /** The connector config of both sides: the converters the Go benchmarks name too. */
  static Map<String, String> connectorConfig(int batch) {
    Map<String, String> c = new HashMap<>();
    c.put("name", "hop-baseline");
    c.put("topic", TOPIC);
    c.put("topics", TOPIC);
    c.put("mode", "bench");
    c.put("batch", Integer.toString(batch));
    c.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    c.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    return c;
  }

  /** One batch through the task, in-process; returns the records it handled. */
  interface Batch {
    int run() throws Exception;
  }

  /**
   * Warms up for seconds/2, then times whole batches for seconds and prints the elapsed time
   * and the CPU time of this thread (GC and JIT threads not counted) per batch and per record.
   */
  static void report(String kind, int batch, Batch b, double seconds) throws Exception {
    java.lang.management.ThreadMXBean threads = java.lang.management.ManagementFactory.getThreadMXBean();
    long sink = 0;
    long warm = System.nanoTime() + (long) (seconds / 2 * 1e9);
    while (System.nanoTime() < warm) {
      sink += b.run();
    }
    long iterations = 0;
    long records = 0;
    long cpu0 = threads.getCurrentThreadCpuTime();
    long start = System.nanoTime();
    long end = start + (long) (seconds * 1e9);
    long now;
    do {
      for (int i = 0; i < 64; i++) { // check the clock every 64 batches only
        records += b.run();
      }
      iterations += 64;
      now = System.nanoTime();
    } while (now < end);
    long ns = now - start;
    long cpu = threads.getCurrentThreadCpuTime() - cpu0;
    if (records != iterations * batch || sink < 0) {
      throw new IllegalStateException(kind + " batch=" + batch + ": " + records + " records in "
          + iterations + " batches");
    }
    System.out.printf("hop-baseline %s batch=%d ns/batch=%.0f ns/record=%.1f cpu-ns/record=%.1f"
        + " iterations=%d%n", kind, batch, (double) ns / iterations, (double) ns / records,
        (double) cpu / records, iterations);
  }

  /** A source task as WorkerSourceTask runs it, minus the producer. */
  static final class Source implements Batch {
    private final SourceTask task;
    private final Stages<SourceRecord> stages;
    private final ClassLoader loader;
    private long offset;

    Source(Catalog catalog, ClassLoader loader, int batch) throws Exception {
      this.loader = loader;
      Map<String, String> config = connectorConfig(batch);
      config.put("task.class", SOURCE_TASK);
      config.put("task.index", "0");
      try (LoaderSwap ignored = Tccl.swap(loader)) {
        task = Catalog.instantiate(catalog.loadClass(loader, SOURCE_TASK), SourceTask.class);
        stages = new Stages<>(catalog, loader, config, Map.of());
        task.initialize(new SourceTaskContext() {
          @Override
          public Map<String, String> configs() {
            return config;
          }

          @Override
          public OffsetStorageReader offsetStorageReader() {
            return new NoOffsets();
          }

          @Override
          public PluginMetrics pluginMetrics() {
            return null;
          }
        });
        task.start(config);
      }
    }

    @Override
    public int run() throws Exception {
      try (LoaderSwap ignored = Tccl.swap(loader)) {
        List<SourceRecord> polled = task.poll();
        List<ProducerRecord<byte[], byte[]>> sent = new ArrayList<>(polled.size());
        for (SourceRecord pre : polled) {
          SourceRecord r = stages.apply(pre);
          RecordHeaders headers = new RecordHeaders();
          for (org.apache.kafka.connect.header.Header h : r.headers()) {
            headers.add(h.key(), stages.headerConverter.fromConnectHeader(r.topic(), h.key(),
                h.schema(), h.value()));
          }
          byte[] key = stages.keyConverter.fromConnectData(r.topic(), headers, r.keySchema(),
              r.key());
          byte[] value = stages.valueConverter.fromConnectData(r.topic(), headers,
              r.valueSchema(), r.value());
          sent.add(new ProducerRecord<>(r.topic(), r.kafkaPartition(), r.timestamp(), key, value,
              headers));
        }
        // What the producer's callback does once Kafka has the records.
        TopicPartition tp = new TopicPartition(TOPIC, 0);
        for (SourceRecord pre : polled) {
          task.commitRecord(pre, new RecordMetadata(tp, offset++, 0, -1L, -1, -1));
        }
        return sent.size();
      }
    }
  }

  /** A sink task as WorkerSinkTask runs it, minus the consumer: raw records to put. */
  static final class Sink implements Batch {
    private final SinkTask task;
    private final Stages<SinkRecord> stages;
    private final ClassLoader loader;
    private final List<ConsumerRecord<byte[], byte[]>> raw;

    Sink(Catalog catalog, ClassLoader loader, int batch) throws Exception {
      this.loader = loader;
      Map<String, String> config = connectorConfig(batch);
      config.put("task.class", SINK_TASK);
      raw = new ArrayList<>(batch);
      byte[] value = "x".repeat(100).getBytes(java.nio.charset.StandardCharsets.UTF_8);
      for (int i = 0; i < batch; i++) {
        raw.add(new ConsumerRecord<>(TOPIC, 0, i, 1_700_000_000_000L, TimestampType.CREATE_TIME,
            -1, value.length, null, value, new RecordHeaders(), Optional.empty()));
      }
      try (LoaderSwap ignored = Tccl.swap(loader)) {
        task = Catalog.instantiate(catalog.loadClass(loader, SINK_TASK), SinkTask.class);
        stages = new Stages<>(catalog, loader, config, Map.of());
        task.initialize(new BaselineSinkContext(config));
        task.start(config);
      }
    }

    @Override
    public int run() {
      try (LoaderSwap ignored = Tccl.swap(loader)) {
        List<SinkRecord> batch = new ArrayList<>(raw.size());
        for (ConsumerRecord<byte[], byte[]> r : raw) {
          ConnectHeaders headers = new ConnectHeaders();
          for (org.apache.kafka.common.header.Header h : r.headers()) {
            headers.add(h.key(), stages.headerConverter.toConnectHeader(r.topic(), h.key(), h.value()));
          }
          SchemaAndValue key = stages.keyConverter.toConnectData(r.topic(), r.headers(), r.key());
          SchemaAndValue value = stages.valueConverter.toConnectData(r.topic(), r.headers(),
              r.value());
          SinkRecord sr = stages.apply(new SinkRecord(r.topic(), r.partition(), key.schema(),
              key.value(), value.schema(), value.value(), r.offset(), r.timestamp(),
              r.timestampType(), headers));
          if (sr != null) {
            batch.add(sr);
          }
        }
        task.put(batch);
        return batch.size();
      }
    }
  }

  private static final class NoOffsets implements OffsetStorageReader {
    @Override
    public <T> Map<String, Object> offset(Map<String, T> partition) {
      return null;
    }

    @Override
    public <T> Map<Map<String, T>, Map<String, Object>> offsets(
        java.util.Collection<Map<String, T>> partitions) {
      return Map.of();
    }
  }

  private static final class BaselineSinkContext implements SinkTaskContext {
    private final Map<String, String> config;

    BaselineSinkContext(Map<String, String> config) {
      this.config = config;
    }

    @Override
    public Map<String, String> configs() {
      return config;
    }

    @Override
    public void offset(Map<TopicPartition, Long> offsets) {}

    @Override
    public void offset(TopicPartition tp, long offset) {}

    @Override
    public void timeout(long timeoutMs) {}

    @Override
    public java.util.Set<TopicPartition> assignment() {
      return java.util.Set.of(new TopicPartition(TOPIC, 0));
    }

    @Override
    public void pause(TopicPartition... partitions) {}

    @Override
    public void resume(TopicPartition... partitions) {}

    @Override
    public void requestCommit() {}

    @Override
    public PluginMetrics pluginMetrics() {
      return null;
    }
  }
}
