package io.kcd.javahost;

import io.kcd.javahost.proto.OffsetReadRequest;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.Response;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.connect.errors.ConnectException;
import org.apache.kafka.connect.storage.OffsetStorageReader;

/** OffsetStorageReader over kcd's stored offsets: one OffsetReadRequest per call. */
final class OffsetReader implements OffsetStorageReader {
  private final Conn conn;
  private final String task;
  private final String connector;

  OffsetReader(Conn conn, String task, String connector) {
    this.conn = conn;
    this.task = task;
    this.connector = connector;
  }

  @Override
  public <T> Map<String, Object> offset(Map<String, T> partition) {
    return offsets(List.of(partition)).get(partition);
  }

  @Override
  public <T> Map<Map<String, T>, Map<String, Object>> offsets(
      Collection<Map<String, T>> partitions) {
    List<Map<String, T>> keys = new ArrayList<>(partitions);
    OffsetReadRequest.Builder rb = OffsetReadRequest.newBuilder().setTask(task)
        .setConnector(connector);
    for (Map<String, T> p : keys) {
      rb.addPartitions(OffsetJson.encode(p));
    }
    Response r;
    try {
      r = conn.call(Request.newBuilder().setOffsetRead(rb)).get();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new ConnectException("interrupted reading offsets", e);
    } catch (ExecutionException e) {
      throw new ConnectException("reading offsets from kcd", e.getCause());
    }
    if (r.hasError()) {
      throw new ConnectException("reading offsets from kcd",
          Errors.toException(r.getError()));
    }
    List<com.google.protobuf.ByteString> got = r.getOffsetRead().getOffsetsList();
    if (got.size() != keys.size()) {
      throw new ConnectException("kcd answered " + got.size() + " offsets for " + keys.size()
          + " partitions");
    }
    Map<Map<String, T>, Map<String, Object>> out = new HashMap<>();
    for (int i = 0; i < keys.size(); i++) {
      Map<String, Object> off = OffsetJson.decode(got.get(i));
      if (off != null) {
        out.put(keys.get(i), off);
      }
    }
    return out;
  }
}
