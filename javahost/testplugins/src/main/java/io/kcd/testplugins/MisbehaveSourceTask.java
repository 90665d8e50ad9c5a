package io.kcd.testplugins;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

/**
 * Emits "t&lt;task&gt;-&lt;n&gt;" with partition {task: i} and offset {seq: n}; in mode
 * bench, the same batch of pre-built records on every poll.
 */
public class MisbehaveSourceTask extends SourceTask {
  private String topic;
  private String mode;
  private int after;
  private int intervalMs;
  private int task;
  private long next;
  private int emitted;
  private volatile boolean stopping;
  /** Mode bench: what every poll returns. */
  private List<SourceRecord> bench;

  @Override
  public String version() {
    return MisbehaveSourceConnector.VERSION;
  }

  @Override
  public void start(Map<String, String> props) {
    AbstractConfig c = new AbstractConfig(MisbehaveSourceConnector.CONFIG, props);
    topic = c.getString("topic");
    mode = c.getString("mode");
    after = c.getInt("after");
    intervalMs = c.getInt("interval.ms");
    task = Integer.parseInt(props.getOrDefault("task.index", "0"));
    if ("bench".equals(mode)) {
      bench = benchBatch(c.getInt("batch"));
      return;
    }
    Map<String, Object> off = context.offsetStorageReader().offset(Map.of("task", task));
    if (off != null && off.get("seq") instanceof Number) {
      next = ((Number) off.get("seq")).longValue() + 1;
    }
  }

  private Thread filler;

  @Override
  public List<SourceRecord> poll() throws InterruptedException {
    if (bench != null) {
      return bench;
    }
    if (emitted >= after) {
      misbehave();
    }
    if ("ok".equals(mode) && intervalMs > 0) {
      Thread.sleep(intervalMs);
    }
    List<SourceRecord> out = new ArrayList<>();
    int n = Math.min(5, "ok".equals(mode) ? 5 : after - emitted);
    for (int i = 0; i < n; i++) {
      long seq = next++;
      out.add(new SourceRecord(Map.of("task", task), Map.of("seq", seq), topic, null,
          null, null, Schema.STRING_SCHEMA, "t" + task + "-" + seq));
      emitted++;
    }
    return out;
  }

  /** n records with a String value of 100 bytes, each its own offset in one source partition. */
  private List<SourceRecord> benchBatch(int n) {
    String pad = "x".repeat(100);
    List<SourceRecord> out = new ArrayList<>(n);
    for (int i = 0; i < n; i++) {
      String v = ("t" + task + "-" + i + "-" + pad).substring(0, 100);
      out.add(new SourceRecord(Map.of("task", task), Map.of("seq", (long) i), topic, null,
          null, null, Schema.STRING_SCHEMA, v));
    }
    return List.copyOf(out);
  }

  private void misbehave() throws InterruptedException {
    switch (mode) {
      case "throw":
        throw new ConnectException("misbehave: poll throws after " + after + " records");
      case "hang":
        while (!stopping) {
          Thread.sleep(60_000);
        }
        return;
      case "leak":
        Thread t = new Thread(() -> {
          try {
            Thread.sleep(Long.MAX_VALUE);
          } catch (InterruptedException e) {
            // leaked: ignores its end
          }
        }, "misbehave-leak");
        t.setDaemon(true);
        t.start();
        return;
      case "heap":
        Leak.more();
        return;
      case "heap-thread":
        // A thread of the plugin's own fills the heap; poll goes on.
        if (filler == null) {
          filler = new Thread(() -> {
            while (true) {
              Leak.more();
            }
          }, "misbehave-heap");
          filler.setDaemon(true);
          filler.start();
        }
        Thread.sleep(50);
        return;
      case "exit":
        System.exit(3);
        return;
      default:
        return;
    }
  }

  @Override
  public void stop() {
    stopping = true;
  }
}
