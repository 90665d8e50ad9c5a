package io.kcd.javahost;

import io.kcd.javahost.proto.AlterOffsetsRequest;
import io.kcd.javahost.proto.AlterOffsetsResponse;
import io.kcd.javahost.proto.Empty;
import io.kcd.javahost.proto.Frame;
import io.kcd.javahost.proto.OffsetEntry;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.Response;
import io.kcd.javahost.proto.StackResponse;
import io.kcd.javahost.proto.TaskStartRequest;
import java.io.IOException;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.PluginMetrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.connect.connector.Connector;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.sink.SinkConnector;
import org.apache.kafka.connect.source.SourceConnector;

/**
 * Serves kcd's calls: one reader thread dispatches each request to the
 * unit (connector or task) it names, or to a small pool for calls that name
 * none; answers go back as Responses with the request's id.
 */
final class Host {
  /** Connectors and tasks at once. */
  static final int MAX_UNITS = 10_000;
  /** How long a stop waits for the plugin before interrupting its thread (Kafka Connect's default). */
  static final long STOP_GRACE_MS = 5_000;

  final Conn conn;
  private final CompletableFuture<Catalog> catalog;
  /** Threads that run plugin code, so a plugin's own threads are recognisable too. */
  private final ThreadGroup pluginThreads = new ThreadGroup("kcd-plugins");
  private final ThreadPoolExecutor misc;
  private final Map<String, Unit> connectorUnits = new ConcurrentHashMap<>();
  private final Map<String, ConnectorRunner> connectors = new ConcurrentHashMap<>();
  private final Map<String, Unit> taskUnits = new ConcurrentHashMap<>();
  private final Map<String, SourceRunner> sources = new ConcurrentHashMap<>();
  private final Map<String, SinkRunner> sinks = new ConcurrentHashMap<>();
  private final Metrics metrics = new Metrics();

  Host(Conn conn, CompletableFuture<Catalog> catalog) {
    this.conn = conn;
    this.catalog = catalog;
    this.misc = new ThreadPoolExecutor(4, 4, 60, TimeUnit.SECONDS, new ArrayBlockingQueue<>(1024),
        r -> {
          Thread t = new Thread(pluginThreads, () -> {
            Unit.OWNER.remove(); // made by a unit's thread perhaps: it is no unit's
            r.run();
          }, "host-misc");
          t.setDaemon(true);
          return t;
        });
    this.misc.allowCoreThreadTimeOut(true);
  }

  Catalog catalog() {
    try {
      return catalog.get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new org.apache.kafka.connect.errors.ConnectException("interrupted", e);
    } catch (ExecutionException e) {
      throw new org.apache.kafka.connect.errors.ConnectException("loading plugins",
          e.getCause());
    }
  }

  PluginMetrics pluginMetrics(Map<String, String> tags) {
    return new PluginMetricsImpl(metrics, tags);
  }

  /** Reads frames until the connection ends. */
  void serve() throws IOException {
    try {
      Frame f;
      while ((f = conn.read()) != null) {
        switch (f.getKindCase()) {
          case REQUEST:
            dispatch(f.getRequest());
            break;
          case RESPONSE:
            conn.complete(f.getResponse());
            break;
          default:
            Log.warn("unexpected frame " + f.getKindCase());
        }
      }
    } finally {
      conn.close();
    }
  }

  /** A call's body: returns the response (id filled in later) or throws the plugin's failure. */
  private interface Call {
    Response.Builder run() throws Exception;
  }

  private void dispatch(Request req) {
    long id = req.getId();
    switch (req.getCallCase()) {
      case LIST_PLUGINS:
        onMisc(id, () -> Response.newBuilder().setPlugins(catalog().list()));
        break;
      case VALIDATE:
        onMisc(id, () -> Response.newBuilder().setValidate(catalog().validate(req.getValidate())));
        break;
      case PLUGIN_CONFIG:
        onMisc(id, () -> Response.newBuilder()
            .setPluginConfig(catalog().pluginConfig(req.getPluginConfig().getClassName())));
        break;
      case ALTER_OFFSETS:
        onMisc(id, () -> alterOffsets(req.getAlterOffsets()));
        break;
      case CONNECTOR_START:
        connectorStart(id, req);
        break;
      case TASK_CONFIGS: {
        String name = req.getTaskConfigs().getConnector();
        onUnit(id, connectorUnits.get(name), "connector " + name, () -> Response.newBuilder()
            .setTaskConfigs(connector(name).taskConfigs(req.getTaskConfigs().getMaxTasks())));
        break;
      }
      case CONNECTOR_STOP:
        connectorStop(id, req.getConnectorStop().getConnector());
        break;
      case TASK_START:
        taskStart(id, req.getTaskStart());
        break;
      case POLL: {
        String t = req.getPoll().getTask();
        onUnit(id, taskUnits.get(t), "task " + t, () -> {
          SourceRunner s = source(t);
          s.ack(req.getPoll().getAcksList());
          return Response.newBuilder().setPoll(s.poll());
        });
        break;
      }
      case SOURCE_COMMIT: {
        String t = req.getSourceCommit().getTask();
        onUnit(id, taskUnits.get(t), "task " + t, () -> {
          SourceRunner s = source(t);
          s.ack(req.getSourceCommit().getAcksList());
          s.commit();
          return empty();
        });
        break;
      }
      case PUT: {
        String t = req.getPut().getTask();
        onUnit(id, taskUnits.get(t), "task " + t,
            () -> Response.newBuilder().setPut(sink(t).put(req.getPut().getRecordsList())));
        break;
      }
      case OPEN: {
        String t = req.getOpen().getTask();
        onUnit(id, taskUnits.get(t), "task " + t, () -> {
          sink(t).open(req.getOpen().getPartitionsList());
          return empty();
        });
        break;
      }
      case CLOSE: {
        String t = req.getClose().getTask();
        onUnit(id, taskUnits.get(t), "task " + t, () -> {
          sink(t).close(req.getClose().getPartitionsList());
          return empty();
        });
        break;
      }
      case PRE_COMMIT: {
        String t = req.getPreCommit().getTask();
        onUnit(id, taskUnits.get(t), "task " + t, () -> Response.newBuilder()
            .setPreCommit(sink(t).preCommit(req.getPreCommit().getOffsetsList())));
        break;
      }
      case TASK_STOP:
        taskStop(id, req.getTaskStop().getTask());
        break;
      case STACK: {
        Unit u = taskUnits.get(req.getStack().getTask());
        if (u == null) {
          u = connectorUnits.get(req.getStack().getTask());
        }
        if (u == null) {
          refuse(id, "no task " + req.getStack().getTask());
        } else {
          conn.respond(Response.newBuilder().setId(id)
              .setStack(StackResponse.newBuilder().setStackTrace(u.stack())).build());
        }
        break;
      }
      default:
        refuse(id, "the host does not serve " + req.getCallCase());
    }
  }

  private static Response.Builder empty() {
    return Response.newBuilder().setEmpty(Empty.getDefaultInstance());
  }

  private void refuse(long id, String msg) {
    conn.respond(Response.newBuilder().setId(id).setError(Errors.protocol(msg)).build());
  }

  /** Runs a call and answers it: its result, or its exception as an Error. */
  private void answer(long id, Call call) {
    Response r;
    try {
      r = call.run().setId(id).build();
    } catch (Throwable t) {
      if (OutOfMemory.is(t)) {
        OutOfMemory.answerAndHalt(id, Errors.unwrap(t)); // does not return
      }
      if (t instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      r = Response.newBuilder().setId(id).setError(Errors.of(t)).build();
    }
    conn.respond(r);
  }

  private void onMisc(long id, Call call) {
    try {
      misc.execute(() -> answer(id, call));
    } catch (RejectedExecutionException e) {
      refuse(id, "the host is busy: too many calls queued");
    }
  }

  private void onUnit(long id, Unit unit, String what, Call call) {
    if (unit == null) {
      refuse(id, "no " + what);
      return;
    }
    try {
      unit.submit(() -> {
        if (unit.stopping) {
          refuse(id, what + " is stopping");
          return;
        }
        OutOfMemory.started(id, unit);
        try {
          answer(id, call);
        } finally {
          OutOfMemory.done(id);
        }
      });
    } catch (RejectedExecutionException e) {
      refuse(id, what + ": too many calls queued or stopped");
    }
  }

  private ConnectorRunner connector(String name) {
    ConnectorRunner c = connectors.get(name);
    if (c == null) {
      throw new Errors.ProtocolException("connector " + name + " is not running");
    }
    return c;
  }

  private SourceRunner source(String task) {
    SourceRunner s = sources.get(task);
    if (s == null) {
      throw new Errors.ProtocolException("no source task " + task);
    }
    return s;
  }

  private SinkRunner sink(String task) {
    SinkRunner s = sinks.get(task);
    if (s == null) {
      throw new Errors.ProtocolException("no sink task " + task);
    }
    return s;
  }

  private boolean full() {
    return connectorUnits.size() + taskUnits.size() >= MAX_UNITS;
  }

  private void connectorStart(long id, Request req) {
    String name = req.getConnectorStart().getConnector();
    if (full()) {
      refuse(id, "too many connectors and tasks (" + MAX_UNITS + ")");
      return;
    }
    Unit unit = new Unit(pluginThreads, "connector-" + name);
    if (connectorUnits.putIfAbsent(name, unit) != null) {
      endQuietly(unit, 0);
      refuse(id, "connector " + name + " is already running");
      return;
    }
    onUnit(id, unit, "connector " + name, () -> {
      try {
        Connector c = catalog().newConnector(req.getConnectorStart().getConnectorClass());
        ConnectorRunner r = new ConnectorRunner(this, name, c, req.getConnectorStart().getConfigMap());
        connectors.put(name, r);
        r.start();
        return empty();
      } catch (Throwable t) {
        connectors.remove(name);
        connectorUnits.remove(name, unit);
        unit.stopping = true;
        misc.execute(() -> endQuietly(unit, STOP_GRACE_MS));
        throw t;
      }
    });
  }

  private void connectorStop(long id, String name) {
    Unit unit = connectorUnits.get(name);
    if (unit == null) {
      refuse(id, "no connector " + name);
      return;
    }
    onMisc(id, () -> {
      ConnectorRunner r = connectors.get(name);
      Throwable[] failed = new Throwable[1];
      boolean done = r == null || unit.runAndWait(() -> {
        try {
          r.stop();
        } catch (Throwable t) {
          failed[0] = t;
        }
      }, STOP_GRACE_MS);
      connectors.remove(name);
      connectorUnits.remove(name, unit);
      unit.end(done ? STOP_GRACE_MS : 0);
      if (!done) {
        throw new TimeoutException("connector " + name + ": stop() did not return in "
            + STOP_GRACE_MS + " ms; its thread was interrupted");
      }
      if (failed[0] != null) {
        throw failed[0] instanceof Exception ? (Exception) failed[0]
            : new org.apache.kafka.connect.errors.ConnectException(failed[0]);
      }
      return empty();
    });
  }

  private void taskStart(long id, TaskStartRequest req) {
    String t = req.getTask();
    if (full()) {
      refuse(id, "too many connectors and tasks (" + MAX_UNITS + ")");
      return;
    }
    Unit unit = new Unit(pluginThreads, "task-" + t);
    if (taskUnits.putIfAbsent(t, unit) != null) {
      endQuietly(unit, 0);
      refuse(id, "task " + t + " is already running");
      return;
    }
    onUnit(id, unit, "task " + t, () -> {
      try {
        String cls = req.getConnectorConfigMap().get("connector.class");
        if (cls == null) {
          throw new org.apache.kafka.common.config.ConfigException(
              "connector config has no connector.class");
        }
        ClassLoader loader = catalog().plugins.connectorClass(cls).getClassLoader();
        if (req.getSink()) {
          SinkRunner s = new SinkRunner(this, req, loader);
          sinks.put(t, s);
          s.start();
        } else {
          SourceRunner s = new SourceRunner(this, req, loader);
          sources.put(t, s);
          s.start();
        }
        return empty();
      } catch (Throwable e) {
        // A task that fails to start is gone: kcd starts a new run to retry.
        SourceRunner s = sources.remove(t);
        SinkRunner k = sinks.remove(t);
        taskUnits.remove(t, unit);
        unit.stopping = true;
        if (s != null) {
          s.close();
        }
        if (k != null) {
          k.close();
        }
        misc.execute(() -> endQuietly(unit, STOP_GRACE_MS));
        throw e;
      }
    });
  }

  /**
   * Stops a task: a source's stop() runs at once on a thread of its own (its
   * poll may be hung, and Kafka Connect calls stop from another thread); a
   * sink's runs on its own thread after its queued calls. Either way the unit's
   * thread is interrupted if still busy after STOP_GRACE_MS, and forgotten.
   */
  private void taskStop(long id, String t) {
    Unit unit = taskUnits.get(t);
    if (unit == null) {
      refuse(id, "no task " + t);
      return;
    }
    SourceRunner src = sources.get(t);
    SinkRunner snk = sinks.get(t);
    if (src != null) {
      unit.stopping = true;
    }
    Thread stopper = new Thread(pluginThreads, () -> answer(id, () -> {
      Throwable[] failed = new Throwable[1];
      boolean done;
      try {
        if (src != null) {
          done = runWithin(() -> {
            try {
              src.stop();
            } catch (Throwable e) {
              failed[0] = e;
            }
          }, "stop-" + t);
        } else if (snk != null) {
          done = unit.runAndWait(() -> {
            try {
              snk.stop();
            } catch (Throwable e) {
              failed[0] = e;
            }
          }, STOP_GRACE_MS);
        } else {
          done = true;
        }
        unit.end(done ? STOP_GRACE_MS : 0);
      } finally {
        taskUnits.remove(t, unit);
        sources.remove(t);
        sinks.remove(t);
        if (src != null) {
          src.close();
        }
        if (snk != null) {
          snk.close();
        }
      }
      if (!done) {
        throw new TimeoutException("task " + t + ": stop() did not return in " + STOP_GRACE_MS
            + " ms; its thread was interrupted");
      }
      if (failed[0] != null) {
        throw failed[0] instanceof Exception ? (Exception) failed[0]
            : new org.apache.kafka.connect.errors.ConnectException(failed[0]);
      }
      return empty();
    }), "stopping-" + t);
    stopper.setDaemon(true);
    stopper.start();
  }

  /** Runs r on a new thread and waits up to STOP_GRACE_MS; false if it did not finish. */
  private boolean runWithin(Runnable r, String name) throws InterruptedException {
    Thread th = new Thread(pluginThreads, r, name);
    th.setDaemon(true);
    th.start();
    th.join(STOP_GRACE_MS);
    return !th.isAlive();
  }

  private static void endQuietly(Unit unit, long graceMs) {
    try {
      unit.end(graceMs);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** A fresh connector instance's alterOffsets, as Kafka Connect's Worker calls it. */
  private Response.Builder alterOffsets(AlterOffsetsRequest req) {
    Connector c = catalog().newConnector(req.getConnectorClass());
    boolean handled;
    try (LoaderSwap ignored = Tccl.swap(c.getClass().getClassLoader())) {
      if (c instanceof SinkConnector) {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        for (OffsetEntry e : req.getOffsetsList()) {
          Map<String, Object> p = OffsetJson.decode(e.getPartition());
          Map<String, Object> o = OffsetJson.decode(e.getOffset());
          if (p == null) {
            throw new org.apache.kafka.connect.errors.ConnectException(
                "a sink partition needs kafka_topic and kafka_partition");
          }
          TopicPartition tp = new TopicPartition(String.valueOf(p.get("kafka_topic")),
              ((Number) p.get("kafka_partition")).intValue());
          offsets.put(tp, o == null ? null : ((Number) o.get("kafka_offset")).longValue());
        }
        handled = ((SinkConnector) c).alterOffsets(req.getConfigMap(), offsets);
      } else {
        Map<Map<String, ?>, Map<String, ?>> offsets = new HashMap<>();
        for (OffsetEntry e : req.getOffsetsList()) {
          offsets.put(OffsetJson.decode(e.getPartition()), OffsetJson.decode(e.getOffset()));
        }
        handled = ((SourceConnector) c).alterOffsets(req.getConfigMap(), offsets);
      }
    }
    return Response.newBuilder().setAlterOffsets(AlterOffsetsResponse.newBuilder()
        .setHandled(handled));
  }
}
