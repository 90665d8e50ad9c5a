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
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
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
  /** Frames waiting for the writer thread; bounded, so writers wait when kcd reads slowly. */
  private final LinkedBlockingQueue<byte[]> outbox = new LinkedBlockingQueue<>(1024);
  private static final byte[] STOP = new byte[0];
  /** Asks the writer thread to flush and release the oldest waiter of syncs. */
  private static final byte[] SYNC = new byte[0];
  private final ConcurrentLinkedQueue<CountDownLatch> syncs = new ConcurrentLinkedQueue<>();

  /**
   * A connection over a socket channel. Channels.newInputStream and
   * newOutputStream share one lock on a blocking channel, so a blocked read
   * would hold every write: these streams call read and write directly, which
   * a SocketChannel allows at the same time.
   */
  static Conn of(SocketChannel ch) {
    InputStream in = new InputStream() {
      @Override
      public int read() throws IOException {
        byte[] b = new byte[1];
        return read(b, 0, 1) < 0 ? -1 : b[0] & 0xff;
      }

      @Override
      public int read(byte[] b, int off, int len) throws IOException {
        if (len == 0) {
          return 0;
        }
        return ch.read(ByteBuffer.wrap(b, off, len));
      }
    };
    OutputStream out = new OutputStream() {
      @Override
      public void write(int b) throws IOException {
        write(new byte[] {(byte) b}, 0, 1);
      }

      @Override
      public void write(byte[] b, int off, int len) throws IOException {
        ByteBuffer buf = ByteBuffer.wrap(b, off, len);
        while (buf.hasRemaining()) {
          ch.write(buf);
        }
      }
    };
    return new Conn(in, out);
  }

  Conn(InputStream in, OutputStream out) {
    this.in = new DataInputStream(in);
    this.out = new DataOutputStream(new BufferedOutputStream(out, 1 << 16));
    Thread w = new Thread(this::writeLoop, "kcd-writer");
    w.setDaemon(true);
    w.start();
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

  /**
   * Queues a frame for the writer thread. Plugin threads get interrupted, and
   * an interrupt during a blocking channel write closes the channel: so only
   * the writer thread, which nothing interrupts, touches the socket, and
   * queueing ignores (and keeps) the caller's interrupt.
   */
  void write(Frame f) throws IOException {
    byte[] b = f.toByteArray();
    if (b.length > MAX_FRAME_BYTES) {
      throw new IOException("frame of " + b.length + " bytes exceeds " + MAX_FRAME_BYTES);
    }
    if (closed) {
      throw new IOException("connection to kcd closed");
    }
    boolean interrupted = Thread.interrupted();
    try {
      while (true) {
        try {
          outbox.put(b);
          return;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
    } finally {
      if (interrupted) {
        Thread.currentThread().interrupt();
      }
    }
  }

  private void writeLoop() {
    try {
      while (true) {
        byte[] b = outbox.take();
        if (b == STOP) {
          return;
        }
        if (b == SYNC) {
          out.flush();
          CountDownLatch l = syncs.poll();
          if (l != null) {
            l.countDown();
          }
          continue;
        }
        out.writeInt(b.length);
        out.write(b);
        if (outbox.isEmpty()) {
          out.flush();
        }
      }
    } catch (IOException | InterruptedException e) {
      if (!closed) {
        Log.warn("writing to kcd: " + e);
      }
    }
  }

  /**
   * Waits up to timeoutMs until the frames queued before the call are written
   * to the socket; false if they were not.
   */
  boolean sync(long timeoutMs) throws InterruptedException {
    CountDownLatch l = new CountDownLatch(1);
    syncs.add(l);
    if (closed || !outbox.offer(SYNC, timeoutMs, TimeUnit.MILLISECONDS)) {
      syncs.remove(l);
      return false;
    }
    return l.await(timeoutMs, TimeUnit.MILLISECONDS);
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
    outbox.offer(STOP);
    for (Long id : pending.keySet()) {
      CompletableFuture<Response> f = pending.remove(id);
      if (f != null) {
        f.completeExceptionally(new ConnectException("connection to kcd closed"));
      }
    }
  }
}
