package io.kcd.testplugins;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.sink.SinkConnector;

/**
 * A sink connector whose put misbehaves as {@code mode} says; mode ok appends values to file;
 * mode bench only counts the records, so a benchmark measures the runtime around put.
 */
public class MisbehaveSinkConnector extends SinkConnector {
  static final ConfigDef CONFIG = new ConfigDef()
      .define("mode", ConfigDef.Type.STRING, "ok",
          ConfigDef.ValidString.in("ok", "throw", "retry", "hang", "leak", "heap", "exit", "bench"),
          ConfigDef.Importance.HIGH, "How put misbehaves (retry: a RetriableException; heap: each put keeps 4 MiB "
              + "more of the heap; bench: put only counts the records).")
      .define("ask", ConfigDef.Type.LIST, "", ConfigDef.Importance.LOW,
          "What put asks of its SinkTaskContext in mode ok: commit, pause, timeout, reset.")
      .define("file", ConfigDef.Type.STRING, null, ConfigDef.Importance.MEDIUM,
          "File that mode ok appends each value to, one a line.");

  private Map<String, String> props;

  @Override
  public void start(Map<String, String> props) {
    this.props = new HashMap<>(props);
    CONFIG.parse(props);
  }

  @Override
  public Class<? extends Task> taskClass() {
    return MisbehaveSinkTask.class;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    List<Map<String, String>> out = new ArrayList<>();
    for (int i = 0; i < maxTasks; i++) {
      out.add(new HashMap<>(props));
    }
    return out;
  }

  @Override
  public void stop() {}

  @Override
  public ConfigDef config() {
    return CONFIG;
  }

  @Override
  public String version() {
    return MisbehaveSourceConnector.VERSION;
  }
}
