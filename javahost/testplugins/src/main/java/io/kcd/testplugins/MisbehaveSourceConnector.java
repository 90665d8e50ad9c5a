package io.kcd.testplugins;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * A source connector whose tasks emit "t&lt;task&gt;-&lt;n&gt;" records and then
 * misbehave as {@code mode} says: ok (keep going), throw (poll throws), hang
 * (poll never returns), leak (threads that never end), heap (each poll keeps 4 MiB
 * more of the heap, until the host runs out of it), heap-thread (a thread of the
 * task's own fills the heap while poll returns nothing every 50 ms), exit (System.exit); or, in
 * mode bench, returns the same {@code batch} pre-built records on every poll at
 * once, so a benchmark measures the runtime around poll rather than the plugin.
 */
public class MisbehaveSourceConnector extends SourceConnector {
  static final String VERSION = "1.0.0";
  static final ConfigDef CONFIG = new ConfigDef()
      .define("topic", ConfigDef.Type.STRING, ConfigDef.NO_DEFAULT_VALUE,
          ConfigDef.Importance.HIGH, "Topic to write to.")
      .define("mode", ConfigDef.Type.STRING, "ok",
          ConfigDef.ValidString.in("ok", "throw", "hang", "leak", "heap", "heap-thread", "exit",
              "bench"),
          ConfigDef.Importance.HIGH, "How the tasks misbehave after 'after' records; bench: "
              + "every poll returns 'batch' pre-built records of about 100 bytes.")
      .define("after", ConfigDef.Type.INT, 10, ConfigDef.Range.atLeast(0),
          ConfigDef.Importance.MEDIUM, "Records each task emits before misbehaving.")
      .define("interval.ms", ConfigDef.Type.INT, 0, ConfigDef.Range.atLeast(0),
          ConfigDef.Importance.LOW, "Pause of each poll of mode ok, so a healthy task runs at a "
              + "steady pace.")
      .define("batch", ConfigDef.Type.INT, 1, ConfigDef.Range.atLeast(1),
          ConfigDef.Importance.LOW, "Records each poll of mode bench returns.");

  private Map<String, String> props;

  @Override
  public void start(Map<String, String> props) {
    this.props = new HashMap<>(props);
    CONFIG.parse(props);
  }

  @Override
  public Class<? extends Task> taskClass() {
    return MisbehaveSourceTask.class;
  }

  @Override
  public List<Map<String, String>> taskConfigs(int maxTasks) {
    List<Map<String, String>> out = new ArrayList<>();
    for (int i = 0; i < maxTasks; i++) {
      Map<String, String> c = new HashMap<>(props);
      c.put("task.index", Integer.toString(i));
      out.add(c);
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
    return VERSION;
  }
}
