package io.kcd.javahost;

import io.kcd.javahost.proto.ConnectorEvent;
import io.kcd.javahost.proto.Empty;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.TaskConfig;
import io.kcd.javahost.proto.TaskConfigsResponse;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.sink.SinkConnectorContext;
import org.apache.kafka.connect.source.SourceConnectorContext;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/** One running connector; every method runs on the connector's unit thread. */
final class ConnectorRunner {
  final String name;
  private final Connector connector;
  private final Map<String, String> config;
  private final ClassLoader loader;

  ConnectorRunner(Host host, String name, Connector connector, Map<String, String> config) {
    this.name = name;
    this.connector = connector;
    this.config = new HashMap<>(config);
    this.loader = connector.getClass().getClassLoader();
    Context ctx = connector instanceof SinkConnector ? new SinkContext(host) : new SourceContext(host);
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      connector.initialize(ctx);
    }
  }

  void start() {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      connector.start(config);
    }
  }

  /** taskConfigs(max), each with task.class added as Kafka Connect stores it. */
  TaskConfigsResponse taskConfigs(int maxTasks) {
    List<Map<String, String>> configs;
    String taskClass;
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      configs = connector.taskConfigs(maxTasks);
      taskClass = connector.taskClass().getName();
    }
    if (configs == null) {
      configs = List.of();
    }
    boolean enforce = !"false".equalsIgnoreCase(config.getOrDefault("tasks.max.enforce", "true").trim());
    if (configs.size() > maxTasks && enforce) {
      throw new ConnectException("The connector " + name + " has generated " + configs.size()
          + " tasks, which is greater than " + maxTasks
          + ", the maximum number of tasks it is configured to create. ");
    }
    TaskConfigsResponse.Builder b = TaskConfigsResponse.newBuilder();
    for (Map<String, String> c : configs) {
      Map<String, String> m = new HashMap<>(c == null ? Map.of() : c);
      m.put("task.class", taskClass);
      b.addTasks(TaskConfig.newBuilder().putAllConfig(m));
    }
    return b.build();
  }

  void stop() {
    try (LoaderSwap ignored = Tccl.swap(loader)) {
      connector.stop();
    }
  }

  /** ConnectorContext: its calls become ConnectorEvents to kcd, sent without waiting. */
  private class Context implements org.apache.kafka.connect.connector.ConnectorContext {
    final Host host;
    private final PluginMetrics metrics;

    Context(Host host) {
      this.host = host;
      this.metrics = host.pluginMetrics(Map.of("connector", name));
    }

    @Override
    public void requestTaskReconfiguration() {
      send(ConnectorEvent.newBuilder().setConnector(name)
          .setRequestTaskReconfiguration(Empty.getDefaultInstance()));
    }

    @Override
    public void raiseError(Exception e) {
      send(ConnectorEvent.newBuilder().setConnector(name).setRaiseError(Errors.of(e)));
    }

    @Override
    public PluginMetrics pluginMetrics() {
      return metrics;
    }

    private void send(ConnectorEvent.Builder ev) {
      host.conn.call(Request.newBuilder().setConnectorEvent(ev)).whenComplete((r, t) -> {
        if (t != null) {
          Log.warn("connector " + name + ": event not delivered: " + t);
        } else if (r.hasError()) {
          Log.warn("connector " + name + ": kcd refused event: " + r.getError().getMessage());
        }
      });
    }
  }

  private final class SourceContext extends Context implements SourceConnectorContext {
    private final OffsetStorageReader reader;

    SourceContext(Host host) {
      super(host);
      reader = new OffsetReader(host.conn, "", name);
    }

    @Override
    public OffsetStorageReader offsetStorageReader() {
      return reader;
    }
  }

  private final class SinkContext extends Context implements SinkConnectorContext {
    SinkContext(Host host) {
      super(host);
    }
  }
}
