package io.kcd.javahost;

import io.kcd.javahost.proto.Frame;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.Response;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.connect.errors.ConnectException;

/**
 * One framed-protobuf connection to kcd: each frame is its length as a 4-byte
 * big-endian integer, then a Frame. Reads happen on one thread; writes are
 * serialized; the host's own calls wait for kcd's Response by id.
 */
final class Conn {
  static final int MAX_FRAME_BYTES = 64 << 20;
  /** The host's calls in flight at once; more fail at once instead of queueing. */
  static final int MAX_PENDING_CALLS = 4096;

  private final DataInputStream in;
  private final DataOutputStream out;
  private final AtomicLong nextId = new AtomicLong(1);
  private final ConcurrentHashMap<Long, CompletableFuture<Response>> pending =
      new ConcurrentHashMap<>();
  private volatile boolean closed;

  Conn(InputStream in, OutputStream out) {
    this.in = new DataInputStream(in);
    this.out = new DataOutputStream(new BufferedOutputStream(out, 1 << 16));
  }

  /** Reads the next frame; null at the end of the stream. */
  Frame read() throws IOException {
    int n;
    try {
      n = in.readInt();
    } catch (EOFException e) {
      return null;
    }
    if (n < 0 || n > MAX_FRAME_BYTES) {
      throw new IOException("frame of " + Integer.toUnsignedString(n) + " bytes exceeds "
          + MAX_FRAME_BYTES);
    }
    byte[] b = new byte[n];
    in.readFully(b);
    return Frame.parseFrom(b);
  }

  void write(Frame f) throws IOException {
    byte[] b = f.toByteArray();
    if (b.length > MAX_FRAME_BYTES) {
      throw new IOException("frame of " + b.length + " bytes exceeds " + MAX_FRAME_BYTES);
    }
    synchronized (out) {
      out.writeInt(b.length);
      out.write(b);
      out.flush();
    }
  }

  /** Sends a response; a failed write only logs, as the reader sees the end too. */
  void respond(Response r) {
    try {
      write(Frame.newBuilder().setResponse(r).build());
    } catch (IOException e) {
      Log.warn("writing response " + r.getId() + ": " + e);
    }
  }

  /** Calls kcd; the future completes with kcd's Response or fails when the connection ends. */
  CompletableFuture<Response> call(Request.Builder req) {
    CompletableFuture<Response> f = new CompletableFuture<>();
    if (closed) {
      f.completeExceptionally(new ConnectException("connection to kcd closed"));
      return f;
    }
    if (pending.size() >= MAX_PENDING_CALLS) {
      f.completeExceptionally(new ConnectException(
          "too many calls to kcd in flight (" + MAX_PENDING_CALLS + ")"));
      return f;
    }
    long id = nextId.getAndIncrement();
    pending.put(id, f);
    try {
      write(Frame.newBuilder().setRequest(req.setId(id)).build());
    } catch (IOException e) {
      pending.remove(id);
      f.completeExceptionally(new ConnectException("calling kcd", e));
    }
    return f;
  }

  /** Hands kcd's answer to the waiting call. */
  void complete(Response r) {
    CompletableFuture<Response> f = pending.remove(r.getId());
    if (f == null) {
      Log.warn("response " + r.getId() + " answers no call");
      return;
    }
    f.complete(r);
  }

  /** Fails every call in flight: the connection has ended. */
  void close() {
    closed = true;
    for (Long id : pending.keySet()) {
      CompletableFuture<Response> f = pending.remove(id);
      if (f != null) {
        f.completeExceptionally(new ConnectException("connection to kcd closed"));
      }
    }
  }
}
