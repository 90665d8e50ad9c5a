package io.kcd.javahost;

import com.google.protobuf.ByteString;
import io.kcd.javahost.proto.Ack;
import io.kcd.javahost.proto.Header;
import io.kcd.javahost.proto.PollResponse;
import io.kcd.javahost.proto.TaskStartRequest;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;
import org.apache.kafka.connect.source.SourceTaskContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/**
 * One source task, as Kafka Connect's WorkerSourceTask drives it: poll,
 * transforms, converters, then commitRecord once kcd acks and commit after
 * kcd stored the offsets. Every method but stop runs on the task's unit thread.
 */
final class SourceRunner {
  /** Records polled and not yet acked by kcd; at this many, Poll stops calling task.poll. */
  static final int MAX_UNACKED = 100_000;
  /** The bytes of records one PollResponse carries; the rest wait for the next Poll. */
  static final int MAX_POLL_BYTES = 32 << 20;

  /** Kafka's "no timestamp" (RecordBatch.NO_TIMESTAMP). */
  private static final long NO_TIMESTAMP = -1L;

  final String task;
  private final SourceTask sourceTask;
  private final Stages<SourceRecord> stages;
  private final ClassLoader loader;
  private final Map<String, String> taskConfig;
  /** Pre-transform records by seq until acked, as commitRecord needs them. */
  private final LinkedHashMap<Long, SourceRecord> unacked = new LinkedHashMap<>();
  /** Converted records polled but not yet sent (a poll larger than one response). */
  private final ArrayDeque<io.kcd.javahost.proto.SourceRecord> unsent = new ArrayDeque<>();
  private long nextSeq = 1;
  /** The last source partition encoded, a copy, and its JSON: records of one partition come in runs. */
  private Map<String, ?> lastPartition;
  private com.google.protobuf.ByteString lastPartitionJson;

  SourceRunner(Host host, TaskStartRequest req, ClassLoader connectorLoader) throws Exception {
    this.task = req.getTask();
    this.taskConfig = new HashMap<>(req.getTaskConfigMap());
    this.loader = connectorLoader;
    String taskClass = taskConfig.get("task.class");
    if (taskClass == null) {
      throw new ConnectException("task config has no task.class");
    }
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      this.sourceTask = Catalog.instantiate(host.catalog().loadClass(loader, taskClass), SourceTask.class);
      this.stages = new Stages<>(host.catalog(), loader,
          req.getConnectorConfigMap(), req.getWorkerConfigMap());
      PluginMetrics metrics = host.pluginMetrics(
          Map.of("connector", req.getConnector(), "task", Integer.toString(req.getTaskNumber())));
      OffsetStorageReader reader = new OffsetReader(host.conn, task, req.getConnector());
      sourceTask.initialize(new SourceTaskContext() {
        @Override
        public Map<String, String> configs() {
          return taskConfig;
        }

        @Override
        public OffsetStorageReader offsetStorageReader() {
          return reader;
        }

        @Override
        public PluginMetrics pluginMetrics() {
          return metrics;
        }
      });
    }
  }

  void start() {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sourceTask.start(taskConfig);
    }
  }

  /** commitRecord for each ack: with metadata when it reached Kafka, null when dropped. */
  void ack(List<Ack> acks) {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      for (Ack a : acks) {
        SourceRecord r = unacked.remove(a.getSeq());
        if (r == null) {
          Log.warn("task " + task + ": ack of unknown record " + a.getSeq());
          continue;
        }
        RecordMetadata md = a.getHasMetadata()
            ? new RecordMetadata(new TopicPartition(a.getTopic(), a.getPartition()), a.getOffset(),
                0, NO_TIMESTAMP, -1, -1)
            : null;
        try {
          sourceTask.commitRecord(r, md);
        } catch (Throwable t) {
          // As Kafka Connect: a failing commitRecord is logged, not fatal.
          Log.warn("task " + task + ": commitRecord threw", t);
        }
      }
    }
  }

  PollResponse poll() throws InterruptedException {
    PollResponse.Builder b = PollResponse.newBuilder();
    if (unsent.isEmpty() && unacked.size() < MAX_UNACKED) {
      List<SourceRecord> polled;
      try (LoaderSwap ignored = Tccl.swap(loader)) {
        polled = sourceTask.poll();
        if (polled != null) {
          convertAll(polled);
        }
      }
    }
    long bytes = 0;
    while (!unsent.isEmpty()) {
      io.kcd.javahost.proto.SourceRecord r = unsent.peekFirst();
      int n = r.getSerializedSize();
      if (b.getRecordsCount() > 0 && bytes + n > MAX_POLL_BYTES) {
        break;
      }
      bytes += n;
      b.addRecords(unsent.pollFirst());
    }
    return b.build();
  }

  void commit() throws InterruptedException {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sourceTask.commit();
    }
  }

  /** task.stop(), from another thread than a poll in progress, as Kafka Connect calls it. */
  void stop() {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      sourceTask.stop();
    }
  }

  void close() {
    stages.close();
  }

  private void convertAll(List<SourceRecord> polled) {
    List<io.kcd.javahost.proto.SourceRecord> out = new java.util.ArrayList<>(polled.size());
    long first = nextSeq;
    try {
      for (SourceRecord r : polled) {
        long seq = nextSeq++;
        unacked.put(seq, r);
        out.add(convert(seq, r));
      }
    } catch (RuntimeException e) {
      for (long s = first; s < nextSeq; s++) {
        unacked.remove(s);
      }
      throw e;
    }
    unsent.addAll(out);
  }

  private com.google.protobuf.ByteString partitionJson(Map<String, ?> p) {
    if (p == null) {
      return OffsetJson.encode(null);
    }
    if (!p.equals(lastPartition)) {
      lastPartitionJson = OffsetJson.encode(p);
      lastPartition = new HashMap<>(p);
    }
    return lastPartitionJson;
  }

  /** One record through transforms and converters; dropped when filtered out or tolerated. */
  private io.kcd.javahost.proto.SourceRecord convert(long seq, SourceRecord pre) {
    io.kcd.javahost.proto.SourceRecord.Builder b = io.kcd.javahost.proto.SourceRecord.newBuilder()
        .setSeq(seq)
        .setSourcePartition(partitionJson(pre.sourcePartition()))
        .setSourceOffset(OffsetJson.encode(pre.sourceOffset()));
    try {
      SourceRecord r = stages.apply(pre);
      if (r == null) {
        return b.setTopic(pre.topic() == null ? "" : pre.topic()).setDropped(true).build();
      }
      RecordHeaders headers = new RecordHeaders();
      for (org.apache.kafka.connect.header.Header h : r.headers()) {
        byte[] v = stages.headerConverter.fromConnectHeader(r.topic(), h.key(), h.schema(),
            h.value());
        headers.add(h.key(), v);
        Header.Builder hb = Header.newBuilder().setKey(h.key());
        if (v != null) {
          hb.setValue(ByteString.copyFrom(v));
        }
        b.addHeaders(hb);
      }
      byte[] key = stages.keyConverter.fromConnectData(r.topic(), headers, r.keySchema(), r.key());
      byte[] value =
          stages.valueConverter.fromConnectData(r.topic(), headers, r.valueSchema(), r.value());
      b.setTopic(r.topic());
      if (r.kafkaPartition() != null) {
        b.setPartition(r.kafkaPartition());
      }
      if (key != null) {
        b.setKey(ByteString.copyFrom(key));
      }
      if (value != null) {
        b.setValue(ByteString.copyFrom(value));
      }
      Long ts = r.timestamp();
      if (ts != null && ts != NO_TIMESTAMP) {
        if (ts < 0) {
          throw new org.apache.kafka.common.InvalidRecordException(
              "Invalid record timestamp " + ts);
        }
        b.setTimestampMs(ts);
      }
      return b.build();
    } catch (RuntimeException e) {
      if (!stages.tolerateAll) {
        throw e;
      }
      // errors.tolerance=all: skipped, and its offset still stored, as Kafka Connect does.
      Log.warn("task " + task + ": record skipped (errors.tolerance=all): " + e);
      b.clearHeaders().clearKey().clearValue().clearPartition().clearTimestampMs();
      return b.setTopic(pre.topic() == null ? "" : pre.topic()).setDropped(true).build();
    }
  }
}
