package io.kcd.javahost;

import io.kcd.javahost.proto.ErrantRecordRequest;
import io.kcd.javahost.proto.PartitionOffset;
import io.kcd.javahost.proto.PreCommitResponse;
import io.kcd.javahost.proto.PutResponse;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.SinkContext;
import io.kcd.javahost.proto.TaskStartRequest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.connect.data.SchemaAndValue;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.header.ConnectHeaders;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.sink.ErrantRecordReporter;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;
import org.apache.kafka.connect.sink.SinkTaskContext;

/**
 * One sink task, as Kafka Connect's WorkerSinkTask drives it: converters,
 * transforms, put; open/close on assignment; preCommit decides what kcd
 * commits. Every method runs on the task's unit thread.
 */
final class SinkRunner {
  /** Raw records kept for ErrantRecordReporter: the last batches' records by position. */
  private static final int MAX_KEPT_RAW = 100_000;

  final String task;
  private final Host host;
  private final SinkTask sinkTask;
  private final Stages<SinkRecord> stages;
  private final ClassLoader loader;
  private final Map<String, String> taskConfig;
  private final Context context;
  private final LinkedHashMap<String, io.kcd.javahost.proto.SinkRecord> raw = new LinkedHashMap<>();

  SinkRunner(Host host, TaskStartRequest req, ClassLoader connectorLoader) throws Exception {
    this.host = host;
    this.task = req.getTask();
    this.taskConfig = new HashMap<>(req.getTaskConfigMap());
    this.loader = connectorLoader;
    String taskClass = taskConfig.get("task.class");
    if (taskClass == null) {
      throw new ConnectException("task config has no task.class");
    }
    Map<String, String> cc = req.getConnectorConfigMap();
    boolean reporter = !cc.getOrDefault("errors.deadletterqueue.topic.name", "").isBlank()
        || "true".equalsIgnoreCase(cc.getOrDefault("errors.log.enable", "false").trim());
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      this.sinkTask = Catalog.instantiate(host.catalog().loadClass(loader, taskClass), SinkTask.class);
      this.stages = new Stages<>(host.catalog(), loader, cc,
          req.getWorkerConfigMap());
      this.context = new Context(host.pluginMetrics(
          Map.of("connector", req.getConnector(), "task", Integer.toString(req.getTaskNumber()))),
          reporter ? this::report : null);
      sinkTask.initialize(context);
    }
  }

  void start() {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sinkTask.start(taskConfig);
    }
  }

  void open(List<io.kcd.javahost.proto.TopicPartition> parts) {
    List<TopicPartition> tps = tps(parts);
    context.assignment.addAll(tps);
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sinkTask.open(tps);
    }
  }

  void close(List<io.kcd.javahost.proto.TopicPartition> parts) {
    List<TopicPartition> tps = tps(parts);
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sinkTask.close(tps);
    } finally {
      tps.forEach(context.assignment::remove);
    }
  }

  PutResponse put(List<io.kcd.javahost.proto.SinkRecord> records) {
    List<SinkRecord> batch = new ArrayList<>(records.size());
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      for (io.kcd.javahost.proto.SinkRecord r : records) {
        keep(r);
        SinkRecord sr;
        try {
          sr = stages.apply(convert(r));
        } catch (RuntimeException e) {
          if (!stages.tolerateAll) {
            throw e;
          }
          // errors.tolerance=all: skipped; kcd sends it to the dead letter queue if any.
          Log.warn("task " + task + ": record skipped (errors.tolerance=all): " + e);
          errant(r, e).join();
          continue;
        }
        if (sr != null) {
          batch.add(sr);
        }
      }
      sinkTask.put(batch);
    }
    return PutResponse.newBuilder().setContext(context.drain()).build();
  }

  PreCommitResponse preCommit(List<PartitionOffset> offsets) {
    Map<TopicPartition, OffsetAndMetadata> current = new HashMap<>();
    for (PartitionOffset o : offsets) {
      current.put(new TopicPartition(o.getTopic(), o.getPartition()),
          new OffsetAndMetadata(o.getOffset()));
    }
    Map<TopicPartition, OffsetAndMetadata> commit;
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      commit = sinkTask.preCommit(current);
    }
    PreCommitResponse.Builder b = PreCommitResponse.newBuilder();
    if (commit != null) {
      commit.forEach((tp, om) -> {
        if (om != null) {
          b.addOffsets(PartitionOffset.newBuilder().setTopic(tp.topic())
              .setPartition(tp.partition()).setOffset(om.offset()));
        }
      });
    }
    return b.setContext(context.drain()).build();
  }

  void stop() {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sinkTask.stop();
    }
  }

  void close() {
    stages.close();
  }

  /** A raw record as WorkerSinkTask converts it: headers, key, value, then a SinkRecord. */
  private SinkRecord convert(io.kcd.javahost.proto.SinkRecord r) {
    String topic = r.getTopic();
    RecordHeaders kafkaHeaders = new RecordHeaders();
    for (io.kcd.javahost.proto.Header h : r.getHeadersList()) {
      kafkaHeaders.add(h.getKey(), h.hasValue() ? h.getValue().toByteArray() : null);
    }
    ConnectHeaders headers = new ConnectHeaders();
    for (org.apache.kafka.common.header.Header h : kafkaHeaders) {
      SchemaAndValue sv = stages.headerConverter.toConnectHeader(topic, h.key(), h.value());
      headers.add(h.key(), sv);
    }
    SchemaAndValue key = stages.keyConverter.toConnectData(topic, kafkaHeaders,
        r.hasKey() ? r.getKey().toByteArray() : null);
    SchemaAndValue value = stages.valueConverter.toConnectData(topic, kafkaHeaders,
        r.hasValue() ? r.getValue().toByteArray() : null);
    // A negative timestamp (Kafka's NO_TIMESTAMP is -1) means none, as ConnectUtils says.
    Long ts = r.getTimestampMs() < 0 ? null : r.getTimestampMs();
    TimestampType type = ts == null ? TimestampType.NO_TIMESTAMP_TYPE
        : r.getLogAppendTime() ? TimestampType.LOG_APPEND_TIME : TimestampType.CREATE_TIME;
    return new SinkRecord(topic, r.getPartition(), key.schema(), key.value(), value.schema(),
        value.value(), r.getOffset(), ts, type, headers);
  }

  private void keep(io.kcd.javahost.proto.SinkRecord r) {
    raw.put(r.getTopic() + "\0" + r.getPartition() + "\0" + r.getOffset(), r);
    while (raw.size() > MAX_KEPT_RAW) {
      raw.remove(raw.keySet().iterator().next());
    }
  }

  /** ErrantRecordReporter.report: the original record to kcd; the future completes on its answer. */
  private Future<Void> report(SinkRecord record, Throwable error) {
    io.kcd.javahost.proto.SinkRecord r = raw.get(record.originalTopic() + "\0"
        + record.originalKafkaPartition() + "\0" + record.originalKafkaOffset());
    if (r == null) {
      r = io.kcd.javahost.proto.SinkRecord.newBuilder().setTopic(record.originalTopic())
          .setPartition(record.originalKafkaPartition() == null ? 0
              : record.originalKafkaPartition())
          .setOffset(record.originalKafkaOffset()).setTimestampMs(-1).build();
    }
    return errant(r, error);
  }

  private CompletableFuture<Void> errant(io.kcd.javahost.proto.SinkRecord r, Throwable error) {
    return host.conn.call(Request.newBuilder().setErrantRecord(ErrantRecordRequest.newBuilder()
        .setTask(task).setRecord(r).setError(Errors.of(error)))).thenApply(resp -> {
          if (resp.hasError()) {
            throw new java.util.concurrent.CompletionException(Errors.toException(resp.getError()));
          }
          return null;
        });
  }

  private static List<TopicPartition> tps(List<io.kcd.javahost.proto.TopicPartition> parts) {
    List<TopicPartition> out = new ArrayList<>(parts.size());
    for (io.kcd.javahost.proto.TopicPartition p : parts) {
      out.add(new TopicPartition(p.getTopic(), p.getPartition()));
    }
    return out;
  }

  /** SinkTaskContext: what the task asks is recorded and handed to kcd with the next answer. */
  private final class Context implements SinkTaskContext {
    final Set<TopicPartition> assignment = java.util.concurrent.ConcurrentHashMap.newKeySet();
    private final PluginMetrics metrics;
    private final ErrantRecordReporter reporter;
    private final Map<TopicPartition, Long> resets = new LinkedHashMap<>();
    private final Set<TopicPartition> pause = new HashSet<>();
    private final Set<TopicPartition> resume = new HashSet<>();
    private long timeoutMs;
    private boolean requestCommit;

    Context(PluginMetrics metrics, ErrantRecordReporter reporter) {
      this.metrics = metrics;
      this.reporter = reporter;
    }

    @Override
    public Map<String, String> configs() {
      return taskConfig;
    }

    @Override
    public synchronized void offset(Map<TopicPartition, Long> offsets) {
      resets.putAll(offsets);
    }

    @Override
    public synchronized void offset(TopicPartition tp, long offset) {
      resets.put(tp, offset);
    }

    @Override
    public synchronized void timeout(long ms) {
      timeoutMs = ms;
    }

    @Override
    public Set<TopicPartition> assignment() {
      return Set.copyOf(assignment);
    }

    @Override
    public synchronized void pause(TopicPartition... parts) {
      for (TopicPartition tp : parts) {
        resume.remove(tp);
        pause.add(tp);
      }
    }

    @Override
    public synchronized void resume(TopicPartition... parts) {
      for (TopicPartition tp : parts) {
        pause.remove(tp);
        resume.add(tp);
      }
    }

    @Override
    public synchronized void requestCommit() {
      requestCommit = true;
    }

    @Override
    public ErrantRecordReporter errantRecordReporter() {
      return reporter;
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return metrics;
    }

    synchronized SinkContext drain() {
      SinkContext.Builder b = SinkContext.newBuilder().setTimeoutMs(timeoutMs)
          .setRequestCommit(requestCommit);
      resets.forEach((tp, off) -> b.addResetOffsets(PartitionOffset.newBuilder()
          .setTopic(tp.topic()).setPartition(tp.partition()).setOffset(off)));
      for (TopicPartition tp : pause) {
        b.addPause(proto(tp));
      }
      for (TopicPartition tp : resume) {
        b.addResume(proto(tp));
      }
      resets.clear();
      pause.clear();
      resume.clear();
      timeoutMs = 0;
      requestCommit = false;
      return b.build();
    }

    private io.kcd.javahost.proto.TopicPartition proto(TopicPartition tp) {
      return io.kcd.javahost.proto.TopicPartition.newBuilder().setTopic(tp.topic())
          .setPartition(tp.partition()).build();
    }
  }

}
