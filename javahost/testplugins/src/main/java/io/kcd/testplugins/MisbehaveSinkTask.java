package io.kcd.testplugins;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.AbstractConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.errors.RetriableException;
import org.apache.kafka.connect.sink.SinkRecord;
import org.apache.kafka.connect.sink.SinkTask;

/**
 * put misbehaves as mode says; mode ok asks of its context what ask says and
 * appends each value and a newline to file; mode bench only counts the records.
 */
public class MisbehaveSinkTask extends SinkTask {
  private String mode;
  private String file;
  private List<String> ask;
  private volatile boolean stopping;
  /** Mode bench: the records put got. */
  private long count;

  @Override
  public String version() {
    return MisbehaveSourceConnector.VERSION;
  }

  @Override
  public void start(Map<String, String> props) {
    AbstractConfig c = new AbstractConfig(MisbehaveSinkConnector.CONFIG, props);
    mode = c.getString("mode");
    file = c.getString("file");
    ask = c.getList("ask");
  }

  @Override
  public void put(Collection<SinkRecord> records) {
    switch (mode) {
      case "bench":
        count += records.size();
        return;
      case "throw":
        throw new ConnectException("misbehave: put throws");
      case "retry":
        throw new RetriableException("misbehave: put asks for a retry");
      case "hang":
        while (!stopping) {
          try {
            Thread.sleep(60_000);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return;
          }
        }
        return;
      case "exit":
        System.exit(3);
        return;
      case "heap":
        Leak.more();
        return;
      case "leak":
        Thread t = new Thread(() -> {
          try {
            Thread.sleep(Long.MAX_VALUE);
          } catch (InterruptedException e) {
            // leaked: ignores its end
          }
        }, "misbehave-sink-leak");
        t.setDaemon(true);
        t.start();
        return;
      default:
        break;
    }
    for (String a : ask) {
      switch (a) {
        case "commit":
          context.requestCommit();
          break;
        case "pause":
          context.pause(context.assignment().toArray(new TopicPartition[0]));
          break;
        case "timeout":
          context.timeout(1234);
          break;
        case "reset":
          for (TopicPartition tp : context.assignment()) {
            context.offset(tp, 0);
          }
          break;
        default:
          throw new ConnectException("unknown ask " + a);
      }
    }
    if (file == null || records.isEmpty()) {
      return;
    }
    StringBuilder sb = new StringBuilder();
    for (SinkRecord r : records) {
      sb.append(r.value()).append('\n');
    }
    try {
      Files.writeString(Path.of(file), sb.toString(), StandardCharsets.UTF_8,
          StandardOpenOption.CREATE, StandardOpenOption.APPEND);
    } catch (IOException e) {
      throw new ConnectException("append to " + file, e);
    }
  }

  /** The records put got, for a benchmark to check that they arrived. */
  public long count() {
    return count;
  }

  @Override
  public void stop() {
    stopping = true;
  }
}
