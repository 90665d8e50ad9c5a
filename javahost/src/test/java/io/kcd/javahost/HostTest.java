package io.kcd.javahost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.kcd.javahost.proto.Ack;
import io.kcd.javahost.proto.AlterOffsetsRequest;
import io.kcd.javahost.proto.OffsetEntry;
import io.kcd.javahost.proto.ConfigKey;
import io.kcd.javahost.proto.ConfigValue;
import io.kcd.javahost.proto.ConnectorStartRequest;
import io.kcd.javahost.proto.ConnectorStopRequest;
import io.kcd.javahost.proto.ListPluginsRequest;
import io.kcd.javahost.proto.PartitionOffset;
import io.kcd.javahost.proto.PartitionsRequest;
import io.kcd.javahost.proto.Plugin;
import io.kcd.javahost.proto.PollRequest;
import io.kcd.javahost.proto.PreCommitRequest;
import io.kcd.javahost.proto.PutRequest;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.Response;
import io.kcd.javahost.proto.SinkContext;
import io.kcd.javahost.proto.SinkRecord;
import io.kcd.javahost.proto.SourceCommitRequest;
import io.kcd.javahost.proto.SourceRecord;
import io.kcd.javahost.proto.StackRequest;
import io.kcd.javahost.proto.TaskConfigsRequest;
import io.kcd.javahost.proto.TaskStartRequest;
import io.kcd.javahost.proto.TaskStopRequest;
import io.kcd.javahost.proto.TopicPartition;
import io.kcd.javahost.proto.ValidateRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * The host alone, driven through its protocol by a fake kcd: one host
 * process for the class, over Kafka Connect's FileStream connectors
 * (connect-file 4.3.1) and the misbehaving test plugins, each in its own
 * plugin directory.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class HostTest {
  static final String FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector";
  static final String FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector";
  static final String MISBEHAVE_SOURCE = "io.kcd.testplugins.MisbehaveSourceConnector";
  static final String MISBEHAVE_SINK = "io.kcd.testplugins.MisbehaveSinkConnector";
  static final String STRING = "org.apache.kafka.connect.storage.StringConverter";

  @TempDir
  static Path dir;
  FakeKcd kcd;

  @BeforeAll
  void startHost() throws Exception {
    Path connectFile = Path.of(System.getProperty("kcd.connectFileDir"));
    Path testPlugins = Path.of(System.getProperty("kcd.testPluginsDir"));
    assertTrue(Files.isDirectory(connectFile), "missing " + connectFile);
    assertTrue(Files.isDirectory(testPlugins), "missing " + testPlugins
        + ": build the test plugins first (mvn -f javahost/testplugins/pom.xml package)");
    kcd = new FakeKcd(dir, connectFile + "," + testPlugins);
  }

  @AfterAll
  void stopHost() throws Exception {
    if (kcd == null) {
      return;
    }
    assertEquals(0, kcd.closeAndWait(), "the host exits 0 when kcd closes the socket");
    kcd.close();
    assertEquals("", Files.readString(kcd.stdout), "nothing reaches the host's stdout");
  }

  @Test
  @Order(1)
  void helloProvesTheHost() {
    assertEquals(kcd.token, kcd.hello.getToken());
    assertEquals("4.3.1", kcd.hello.getConnectVersion());
    assertEquals(64 << 20, kcd.hello.getMaxFrameBytes());
    assertEquals(kcd.process.pid(), kcd.hello.getPid());
  }

  @Test
  @Order(2)
  void listsPluginsWithVersionsAndAliases() throws Exception {
    List<Plugin> plugins = kcd.ok(Request.newBuilder()
        .setListPlugins(ListPluginsRequest.getDefaultInstance())).getPlugins().getPluginsList();
    Plugin fileSource = find(plugins, FILE_SOURCE, "source");
    assertEquals("4.3.1", fileSource.getVersion());
    assertTrue(fileSource.getAliasesList().contains("FileStreamSource"),
        fileSource.getAliasesList().toString());
    assertEquals("4.3.1", find(plugins, FILE_SINK, "sink").getVersion());
    assertEquals("1.0.0", find(plugins, MISBEHAVE_SOURCE, "source").getVersion());
    find(plugins, "io.kcd.testplugins.MisbehaveSinkConnector", "sink");
    find(plugins, STRING, "converter");
    find(plugins, STRING, "header_converter");
    find(plugins, "org.apache.kafka.connect.transforms.InsertField$Value", "transformation");
    find(plugins, "org.apache.kafka.connect.transforms.predicates.TopicNameMatches", "predicate");
  }

  @Test
  @Order(3)
  void validateGivesPerFieldErrors() throws Exception {
    Map<String, String> config = new HashMap<>();
    config.put("connector.class", FILE_SOURCE);
    config.put("topic", "t");
    config.put("batch.size", "many");
    config.put("transforms", "ins");
    config.put("transforms.ins.type", "org.apache.kafka.connect.transforms.InsertField$Value");
    config.put("transforms.ins.static.field", "src");
    Response r = kcd.ok(Request.newBuilder().setValidate(ValidateRequest.newBuilder()
        .setConnectorClass("FileStreamSource").putAllConfig(config)));
    assertEquals("source", r.getValidate().getConnectorType());
    Map<String, ConfigValue> values = r.getValidate().getValuesList().stream()
        .collect(Collectors.toMap(ConfigValue::getName, v -> v, (a, b) -> a));
    Map<String, ConfigKey> keys = r.getValidate().getKeysList().stream()
        .collect(Collectors.toMap(ConfigKey::getName, k -> k, (a, b) -> a));
    assertFalse(values.get("batch.size").getErrorsList().isEmpty(), values.toString());
    assertTrue(values.get("topic").getErrorsList().isEmpty(), values.get("topic").toString());
    ConfigKey batch = keys.get("batch.size");
    assertEquals("INT", batch.getType());
    assertEquals("2000", batch.getDefaultValue());
    ConfigKey file = keys.get("file");
    assertTrue(file.getHasDefault() && !file.hasDefaultValue(), "file defaults to null: " + file);
    assertNotNull(keys.get("transforms.ins.static.field"), keys.keySet().toString());
    assertTrue(values.containsKey("transforms.ins.static.field"), values.keySet().toString());
  }

  @Test
  @Order(3)
  void validateConvertersWithTheirRole() throws Exception {
    // converter.type has no default: as Kafka Connect's herder does, the
    // host passes key/value/header in, so a plain StringConverter is valid.
    Map<String, String> config = new HashMap<>();
    config.put("connector.class", FILE_SOURCE);
    config.put("topic", "t");
    config.put("key.converter", STRING);
    config.put("value.converter", STRING);
    config.put("value.converter.converter.encoding", "UTF-16");
    config.put("header.converter", STRING);
    Response r = kcd.ok(Request.newBuilder().setValidate(ValidateRequest.newBuilder()
        .setConnectorClass(FILE_SOURCE).putAllConfig(config)));
    Map<String, ConfigValue> values = r.getValidate().getValuesList().stream()
        .collect(Collectors.toMap(ConfigValue::getName, v -> v, (a, b) -> a));
    for (ConfigValue v : values.values()) {
      assertTrue(v.getErrorsList().isEmpty(), v.toString());
    }
    assertEquals("key", values.get("key.converter.converter.type").getValue());
    assertEquals("value", values.get("value.converter.converter.type").getValue());
    assertEquals("header", values.get("header.converter.converter.type").getValue());
    assertEquals("UTF-16", values.get("value.converter.converter.encoding").getValue());
  }

  @Test
  @Order(4)
  void fileSourceWithStringConverter() throws Exception {
    Path in = dir.resolve("in-string.txt");
    Files.writeString(in, "a\nbb\nc\n");
    Map<String, String> conn = Map.of("connector.class", FILE_SOURCE, "file", in.toString(),
        "topic", "t1", "key.converter", STRING, "value.converter", STRING);
    Map<String, String> task = startConnectorAndGetTask("fs-string", conn);
    assertEquals("org.apache.kafka.connect.file.FileStreamSourceTask", task.get("task.class"));
    startTask("fs-string/0", "fs-string", false, conn, task, Map.of());
    List<SourceRecord> got = pollUntil("fs-string/0", 3);
    String part = "{\"filename\":\"" + in + "\"}";
    long[] positions = {2, 5, 7};
    String[] lines = {"a", "bb", "c"};
    for (int i = 0; i < 3; i++) {
      SourceRecord r = got.get(i);
      assertEquals("t1", r.getTopic());
      assertFalse(r.hasKey(), "FileStreamSource records have no key");
      assertEquals(lines[i], r.getValue().toStringUtf8());
      assertEquals(part, r.getSourcePartition().toStringUtf8());
      assertEquals("{\"position\":" + positions[i] + "}", r.getSourceOffset().toStringUtf8());
      assertFalse(r.getDropped());
    }
    // Acks and commit reach the task without error.
    List<Ack> acks = new ArrayList<>();
    for (SourceRecord r : got) {
      acks.add(Ack.newBuilder().setSeq(r.getSeq()).setTopic("t1").setPartition(0)
          .setOffset(r.getSeq()).setHasMetadata(true).build());
    }
    kcd.ok(Request.newBuilder().setSourceCommit(SourceCommitRequest.newBuilder()
        .setTask("fs-string/0").addAllAcks(acks)));
    stopTask("fs-string/0");
    kcd.ok(Request.newBuilder().setConnectorStop(ConnectorStopRequest.newBuilder()
        .setConnector("fs-string")));
  }

  @Test
  @Order(5)
  void fileSourceWithWorkerDefaultJsonConverterAndTransforms() throws Exception {
    Path in = dir.resolve("in-json.txt");
    Files.writeString(in, "a\n");
    // No converter named anywhere: JsonConverter with schemas.enable=true.
    Map<String, String> plain = Map.of("connector.class", FILE_SOURCE, "file", in.toString(),
        "topic", "t2");
    Map<String, String> task = startConnectorAndGetTask("fs-json", plain);
    startTask("fs-json/0", "fs-json", false, plain, task, Map.of());
    SourceRecord r = pollUntil("fs-json/0", 1).get(0);
    assertEquals("{\"schema\":{\"type\":\"string\",\"optional\":false},\"payload\":\"a\"}",
        r.getValue().toStringUtf8());
    stopTask("fs-json/0");

    // Transforms, and the worker's converter settings where the connector names none.
    Map<String, String> withTransforms = new HashMap<>(plain);
    withTransforms.put("transforms", "hoist,ins");
    withTransforms.put("transforms.hoist.type", "org.apache.kafka.connect.transforms.HoistField$Value");
    withTransforms.put("transforms.hoist.field", "line");
    withTransforms.put("transforms.ins.type",
        "org.apache.kafka.connect.transforms.InsertField$Value");
    withTransforms.put("transforms.ins.static.field", "src");
    withTransforms.put("transforms.ins.static.value", "f");
    Map<String, String> worker = Map.of("value.converter",
        "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable", "false");
    startTask("fs-json/1", "fs-json", false, withTransforms, task, worker);
    r = pollUntil("fs-json/1", 1).get(0);
    assertEquals("{\"line\":\"a\",\"src\":\"f\"}", r.getValue().toStringUtf8());
    stopTask("fs-json/1");

    // A Filter guarded by a predicate drops the record; its offset still comes.
    Map<String, String> filtered = new HashMap<>(plain);
    filtered.put("transforms", "drop");
    filtered.put("transforms.drop.type", "org.apache.kafka.connect.transforms.Filter");
    filtered.put("transforms.drop.predicate", "isT2");
    filtered.put("predicates", "isT2");
    filtered.put("predicates.isT2.type", "TopicNameMatches"); // an alias, as Connect accepts
    filtered.put("predicates.isT2.pattern", "t2");
    startTask("fs-json/2", "fs-json", false, filtered, task, Map.of());
    r = pollUntil("fs-json/2", 1).get(0);
    assertTrue(r.getDropped(), r.toString());
    assertFalse(r.hasValue());
    assertEquals("{\"position\":2}", r.getSourceOffset().toStringUtf8());
    kcd.ok(Request.newBuilder().setPoll(PollRequest.newBuilder().setTask("fs-json/2")
        .addAcks(Ack.newBuilder().setSeq(r.getSeq()))));
    stopTask("fs-json/2");
    kcd.ok(Request.newBuilder().setConnectorStop(ConnectorStopRequest.newBuilder()
        .setConnector("fs-json")));
  }

  @Test
  @Order(6)
  void fileSinkWritesTheRecords() throws Exception {
    Path out = dir.resolve("out.txt");
    Map<String, String> conn = Map.of("connector.class", FILE_SINK, "file", out.toString(),
        "topics", "in", "key.converter", STRING, "value.converter", STRING);
    Map<String, String> task = startConnectorAndGetTask("sink", conn);
    startTask("sink/0", "sink", true, conn, task, Map.of());
    TopicPartition tp = TopicPartition.newBuilder().setTopic("in").setPartition(0).build();
    kcd.ok(Request.newBuilder().setOpen(PartitionsRequest.newBuilder().setTask("sink/0")
        .addPartitions(tp)));
    PutRequest.Builder put = PutRequest.newBuilder().setTask("sink/0");
    String[] values = {"x", "yy", "z z"};
    for (int i = 0; i < values.length; i++) {
      put.addRecords(SinkRecord.newBuilder().setTopic("in").setPartition(0).setOffset(i)
          .setTimestampMs(1_700_000_000_000L + i)
          .setValue(ByteString.copyFromUtf8(values[i])));
    }
    kcd.ok(Request.newBuilder().setPut(put));
    Response pc = kcd.ok(Request.newBuilder().setPreCommit(PreCommitRequest.newBuilder()
        .setTask("sink/0").addOffsets(PartitionOffset.newBuilder().setTopic("in")
            .setPartition(0).setOffset(3))));
    assertEquals(List.of(PartitionOffset.newBuilder().setTopic("in").setPartition(0)
        .setOffset(3).build()), pc.getPreCommit().getOffsetsList());
    assertEquals("x\nyy\nz z\n", Files.readString(out, StandardCharsets.UTF_8));
    kcd.ok(Request.newBuilder().setClose(PartitionsRequest.newBuilder().setTask("sink/0")
        .addPartitions(tp)));
    stopTask("sink/0");

    // errors.tolerance=all: a record its converter rejects goes to kcd as an
    // ErrantRecordRequest (for the dead letter queue); the others reach put.
    Path out2 = dir.resolve("out-json.txt");
    Map<String, String> tolerant = new HashMap<>(conn);
    tolerant.put("file", out2.toString());
    tolerant.put("value.converter", "org.apache.kafka.connect.json.JsonConverter");
    tolerant.put("value.converter.schemas.enable", "false");
    tolerant.put("errors.tolerance", "all");
    tolerant.put("errors.deadletterqueue.topic.name", "dlq");
    Map<String, String> task2 = new HashMap<>(task);
    task2.put("file", out2.toString());
    startTask("sink/1", "sink", true, tolerant, task2, Map.of());
    kcd.ok(Request.newBuilder().setOpen(PartitionsRequest.newBuilder().setTask("sink/1")
        .addPartitions(tp)));
    kcd.drainHostCalls();
    kcd.ok(Request.newBuilder().setPut(PutRequest.newBuilder().setTask("sink/1")
        .addRecords(SinkRecord.newBuilder().setTopic("in").setPartition(0).setOffset(7)
            .setValue(ByteString.copyFromUtf8("{not json")))
        .addRecords(SinkRecord.newBuilder().setTopic("in").setPartition(0).setOffset(8)
            .setValue(ByteString.copyFromUtf8("{\"a\":1}")))));
    kcd.ok(Request.newBuilder().setPreCommit(PreCommitRequest.newBuilder().setTask("sink/1")
        .addOffsets(PartitionOffset.newBuilder().setTopic("in").setPartition(0).setOffset(9))));
    assertEquals("{a=1}\n", Files.readString(out2, StandardCharsets.UTF_8));
    List<Request> errant = kcd.drainHostCalls().stream().filter(Request::hasErrantRecord)
        .collect(Collectors.toList());
    assertEquals(1, errant.size());
    assertEquals(7, errant.get(0).getErrantRecord().getRecord().getOffset());
    assertEquals("{not json", errant.get(0).getErrantRecord().getRecord().getValue()
        .toStringUtf8());
    assertEquals("org.apache.kafka.connect.errors.DataException",
        errant.get(0).getErrantRecord().getError().getClassName());
    stopTask("sink/1");
    kcd.ok(Request.newBuilder().setConnectorStop(ConnectorStopRequest.newBuilder()
        .setConnector("sink")));
  }

  @Test
  @Order(7)
  void alterOffsetsAsksAFreshConnector() throws Exception {
    Response r = kcd.ok(Request.newBuilder().setAlterOffsets(AlterOffsetsRequest.newBuilder()
        .setConnectorClass(FILE_SOURCE).putConfig("connector.class", FILE_SOURCE)
        .putConfig("file", "/tmp/x").putConfig("topic", "t")
        .addOffsets(OffsetEntry.newBuilder()
            .setPartition(ByteString.copyFromUtf8("{\"filename\":\"/tmp/x\"}"))
            .setOffset(ByteString.copyFromUtf8("{\"position\":5}")))));
    assertTrue(r.getAlterOffsets().getHandled());
    // FileStreamSource rejects an offset that is not a number.
    r = kcd.call(Request.newBuilder().setAlterOffsets(AlterOffsetsRequest.newBuilder()
        .setConnectorClass(FILE_SOURCE).putConfig("file", "/tmp/x").putConfig("topic", "t")
        .addOffsets(OffsetEntry.newBuilder()
            .setPartition(ByteString.copyFromUtf8("{\"filename\":\"/tmp/x\"}"))
            .setOffset(ByteString.copyFromUtf8("{\"position\":\"five\"}")))));
    assertTrue(r.hasError(), r.toString());
  }

  @Test
  @Order(8)
  void sinkContextRequestsComeBackToKcd() throws Exception {
    Map<String, String> conn = Map.of("connector.class", MISBEHAVE_SINK, "topics", "in",
        "mode", "ok", "ask", "commit,pause,timeout,reset", "value.converter", STRING);
    Map<String, String> task = startConnectorAndGetTask("asks", conn);
    startTask("asks/0", "asks", true, conn, task, Map.of());
    TopicPartition tp = TopicPartition.newBuilder().setTopic("in").setPartition(0).build();
    kcd.ok(Request.newBuilder().setOpen(PartitionsRequest.newBuilder().setTask("asks/0")
        .addPartitions(tp)));
    SinkContext ctx = kcd.ok(Request.newBuilder().setPut(PutRequest.newBuilder()
        .setTask("asks/0").addRecords(SinkRecord.newBuilder().setTopic("in").setPartition(0)
            .setOffset(0).setValue(ByteString.copyFromUtf8("v"))))).getPut().getContext();
    assertTrue(ctx.getRequestCommit());
    assertEquals(List.of(tp), ctx.getPauseList());
    assertEquals(1234, ctx.getTimeoutMs());
    assertEquals(List.of(PartitionOffset.newBuilder().setTopic("in").setPartition(0)
        .setOffset(0).build()), ctx.getResetOffsetsList());
    // Handed over once: the next answer carries only what was asked since.
    SinkContext next = kcd.ok(Request.newBuilder().setPreCommit(PreCommitRequest.newBuilder()
        .setTask("asks/0"))).getPreCommit().getContext();
    assertEquals(SinkContext.getDefaultInstance(), next);
    stopTask("asks/0");

    // A RetriableException is an Error kcd retries.
    Map<String, String> retry = Map.of("connector.class", MISBEHAVE_SINK, "topics", "in",
        "mode", "retry");
    Map<String, String> retryTask = new HashMap<>(retry);
    retryTask.put("task.class", "io.kcd.testplugins.MisbehaveSinkTask");
    startTask("asks/1", "asks", true, retry, retryTask, Map.of());
    Response r = kcd.call(Request.newBuilder().setPut(PutRequest.newBuilder().setTask("asks/1")
        .addRecords(SinkRecord.newBuilder().setTopic("in").setPartition(0).setOffset(0))));
    assertTrue(r.getError().getRetriable(), r.toString());
    assertEquals("org.apache.kafka.connect.errors.RetriableException",
        r.getError().getClassName());
    stopTask("asks/1");
  }

  @Test
  @Order(9)
  void throwingPollIsAnErrorWithItsStackTrace() throws Exception {
    kcd.offsets.put("{\"task\":0}", ByteString.copyFromUtf8("{\"seq\":4}"));
    Map<String, String> conn = Map.of("connector.class", MISBEHAVE_SOURCE, "topic", "m",
        "mode", "throw", "after", "2", "value.converter", STRING);
    Map<String, String> task = startConnectorAndGetTask("throw", conn);
    startTask("throw/0", "throw", false, conn, task, Map.of());
    List<SourceRecord> got = pollUntil("throw/0", 2);
    // The task resumed from the offset kcd holds for {task: 0}.
    assertEquals("t0-5", got.get(0).getValue().toStringUtf8());
    assertEquals("t0-6", got.get(1).getValue().toStringUtf8());
    Response r = kcd.call(Request.newBuilder().setPoll(PollRequest.newBuilder()
        .setTask("throw/0")));
    assertTrue(r.hasError());
    assertEquals("org.apache.kafka.connect.errors.ConnectException", r.getError().getClassName());
    assertTrue(r.getError().getStackTrace().contains("MisbehaveSourceTask.misbehave"),
        r.getError().getStackTrace());
    assertFalse(r.getError().getRetriable());
    assertTrue(kcd.drainHostCalls().stream().anyMatch(Request::hasOffsetRead));
    stopTask("throw/0");
  }

  @Test
  @Order(10)
  void systemExitFromAPluginFailsOnlyItsCall() throws Exception {
    Map<String, String> conn = Map.of("connector.class", MISBEHAVE_SOURCE, "topic", "m",
        "mode", "exit", "after", "0");
    Map<String, String> task = startConnectorAndGetTask("exit", conn);
    startTask("exit/0", "exit", false, conn, task, Map.of());
    Response r = kcd.call(Request.newBuilder().setPoll(PollRequest.newBuilder()
        .setTask("exit/0")));
    assertTrue(r.hasError());
    assertEquals("java.lang.SecurityException", r.getError().getClassName());
    assertTrue(r.getError().getStackTrace().contains("System.exit"),
        r.getError().getStackTrace());
    // The host still answers.
    assertFalse(kcd.ok(Request.newBuilder().setListPlugins(ListPluginsRequest.getDefaultInstance()))
        .getPlugins().getPluginsList().isEmpty());
    assertTrue(kcd.process.isAlive());
    stopTask("exit/0");
  }

  @Test
  @Order(11)
  void hungPollHoldsOnlyItsTaskAndStops() throws Exception {
    Map<String, String> conn = Map.of("connector.class", MISBEHAVE_SOURCE, "topic", "m",
        "mode", "hang", "after", "0");
    Map<String, String> task = startConnectorAndGetTask("hang", conn);
    startTask("hang/0", "hang", false, conn, task, Map.of());
    CompletableFuture<Response> hung = kcd.send(Request.newBuilder().setPoll(PollRequest
        .newBuilder().setTask("hang/0")));
    // Wait (with a deadline) until the task's thread is inside the hang.
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    String stack = "";
    while (System.nanoTime() < deadline) {
      stack = kcd.ok(Request.newBuilder().setStack(StackRequest.newBuilder().setTask("hang/0")))
          .getStack().getStackTrace();
      if (stack.contains("MisbehaveSourceTask.misbehave")) {
        break;
      }
      Thread.onSpinWait();
    }
    assertTrue(stack.contains("MisbehaveSourceTask.misbehave"), stack);
    assertFalse(hung.isDone());
    // Other units still answer.
    kcd.ok(Request.newBuilder().setTaskConfigs(TaskConfigsRequest.newBuilder()
        .setConnector("hang").setMaxTasks(1)));
    stopTask("hang/0");
    Response r = hung.get(30, TimeUnit.SECONDS);
    assertTrue(r.hasError(), "the hung poll ends when its thread is interrupted");
  }

  private static Plugin find(List<Plugin> plugins, String cls, String type) {
    return plugins.stream().filter(p -> p.getClassName().equals(cls) && p.getType().equals(type))
        .findFirst().orElseThrow(() -> new AssertionError("no " + type + " " + cls));
  }

  private Map<String, String> startConnectorAndGetTask(String name, Map<String, String> config)
      throws Exception {
    kcd.ok(Request.newBuilder().setConnectorStart(ConnectorStartRequest.newBuilder()
        .setConnector(name).setConnectorClass(config.get("connector.class"))
        .putAllConfig(config)));
    List<io.kcd.javahost.proto.TaskConfig> tasks = kcd.ok(Request.newBuilder()
        .setTaskConfigs(TaskConfigsRequest.newBuilder().setConnector(name).setMaxTasks(1)))
        .getTaskConfigs().getTasksList();
    assertEquals(1, tasks.size());
    return tasks.get(0).getConfigMap();
  }

  private void startTask(String task, String connector, boolean sink, Map<String, String> conn,
      Map<String, String> taskConfig, Map<String, String> worker) throws Exception {
    kcd.ok(Request.newBuilder().setTaskStart(TaskStartRequest.newBuilder().setTask(task)
        .setConnector(connector).setSink(sink).putAllConnectorConfig(conn)
        .putAllTaskConfig(taskConfig).putAllWorkerConfig(worker)));
  }

  private void stopTask(String task) throws Exception {
    kcd.ok(Request.newBuilder().setTaskStop(TaskStopRequest.newBuilder().setTask(task)));
  }

  /** Polls until n records came, within a deadline. */
  private List<SourceRecord> pollUntil(String task, int n) throws Exception {
    List<SourceRecord> got = new ArrayList<>();
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (got.size() < n) {
      assertTrue(System.nanoTime() < deadline, "only " + got.size() + " of " + n + " records");
      got.addAll(kcd.ok(Request.newBuilder().setPoll(PollRequest.newBuilder().setTask(task)))
          .getPoll().getRecordsList());
    }
    return got;
  }
}
