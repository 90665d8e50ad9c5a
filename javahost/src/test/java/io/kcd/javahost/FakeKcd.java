package io.kcd.javahost;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.ByteString;
import io.kcd.javahost.proto.Frame;
import io.kcd.javahost.proto.Hello;
import io.kcd.javahost.proto.OffsetReadResponse;
import io.kcd.javahost.proto.Request;
import io.kcd.javahost.proto.Response;
import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Plays kcd for the host: listens on a Unix socket, starts the host as a
 * child JVM from the test classpath, and answers the host's calls.
 */
final class FakeKcd implements AutoCloseable {
  static final Duration CALL_TIMEOUT = Duration.ofSeconds(60);

  final String token = "test-token-" + System.nanoTime();
  final Process process;
  final Hello hello;
  final Path stdout;
  final Path stderr;
  /** Stored source offsets by partition JSON, answered to OffsetReadRequests. */
  final Map<String, ByteString> offsets = new ConcurrentHashMap<>();
  final LinkedBlockingQueue<Request> hostCalls = new LinkedBlockingQueue<>(1024);

  private final SocketChannel ch;
  private final Conn conn;
  private final AtomicLong nextId = new AtomicLong(1);
  private final Map<Long, CompletableFuture<Response>> pending = new ConcurrentHashMap<>();
  private final Thread reader;

  FakeKcd(Path dir, String pluginPath) throws Exception {
    Path sock = dir.resolve("host.sock");
    // The host's output stays in target/ for reading after a failure.
    Path logs = Path.of(System.getProperty("kcd.logDir", dir.toString()));
    Files.createDirectories(logs);
    stdout = logs.resolve("host.stdout");
    stderr = logs.resolve("host.stderr");
    try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
      server.bind(UnixDomainSocketAddress.of(sock));
      ProcessBuilder pb = new ProcessBuilder(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-Xmx256m", "-Djava.security.manager=allow",
          "-cp", System.getProperty("java.class.path"),
          "io.kcd.javahost.Main", "--plugin-path", pluginPath);
      pb.environment().put("KCD_HOST_SOCKET", sock.toString());
      pb.environment().put("KCD_HOST_TOKEN", token);
      pb.redirectOutput(stdout.toFile());
      pb.redirectError(stderr.toFile());
      process = pb.start();
      // accept() has no timeout: a watchdog closes the server if the host never connects.
      CompletableFuture<Void> connected = new CompletableFuture<>();
      Thread watchdog = new Thread(() -> {
        try {
          connected.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
          try {
            server.close();
          } catch (IOException ignored) {
            // closing to unblock accept
          }
        }
      });
      watchdog.setDaemon(true);
      watchdog.start();
      ch = server.accept();
      connected.complete(null);
    }
    conn = Conn.of(ch);
    Frame first = conn.read();
    assertTrue(first != null && first.hasHello(), "the host's first frame is Hello");
    hello = first.getHello();
    reader = new Thread(this::readLoop, "fake-kcd-reader");
    reader.setDaemon(true);
    reader.start();
  }

  private void readLoop() {
    try {
      Frame f;
      while ((f = conn.read()) != null) {
        if (f.hasResponse()) {
          CompletableFuture<Response> p = pending.remove(f.getResponse().getId());
          if (p != null) {
            p.complete(f.getResponse());
          }
        } else if (f.hasRequest()) {
          answer(f.getRequest());
        }
      }
    } catch (IOException e) {
      // the connection ended
    }
    for (CompletableFuture<Response> p : pending.values()) {
      p.completeExceptionally(new IOException("connection closed"));
    }
  }

  private void answer(Request req) throws IOException {
    hostCalls.offer(req);
    Response.Builder r = Response.newBuilder().setId(req.getId());
    if (req.hasOffsetRead()) {
      OffsetReadResponse.Builder ob = OffsetReadResponse.newBuilder();
      for (ByteString p : req.getOffsetRead().getPartitionsList()) {
        ob.addOffsets(offsets.getOrDefault(p.toStringUtf8(), ByteString.EMPTY));
      }
      r.setOffsetRead(ob);
    } else {
      r.setEmpty(io.kcd.javahost.proto.Empty.getDefaultInstance());
    }
    conn.write(Frame.newBuilder().setResponse(r).build());
  }

  /** Sends a request and returns its future answer. */
  CompletableFuture<Response> send(Request.Builder req) throws IOException {
    long id = nextId.getAndIncrement();
    CompletableFuture<Response> f = new CompletableFuture<>();
    pending.put(id, f);
    conn.write(Frame.newBuilder().setRequest(req.setId(id)).build());
    return f;
  }

  /** Sends a request and waits for its answer. */
  Response call(Request.Builder req) throws Exception {
    Response r = send(req).get(CALL_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
    return r;
  }

  /** Like call, but the call must succeed. */
  Response ok(Request.Builder req) throws Exception {
    Response r = call(req);
    assertTrue(!r.hasError(), () -> "call failed: " + r.getError().getClassName() + ": "
        + r.getError().getMessage() + "\n" + r.getError().getStackTrace());
    return r;
  }

  /** The host's calls so far of one kind. */
  List<Request> drainHostCalls() {
    List<Request> out = new ArrayList<>();
    hostCalls.drainTo(out);
    return out;
  }

  /** Closes the connection and waits for the host to exit; returns its status. */
  int closeAndWait() throws Exception {
    ch.close();
    assertTrue(process.waitFor(30, TimeUnit.SECONDS), "the host exits when the socket closes");
    return process.exitValue();
  }

  @Override
  public void close() throws Exception {
    try {
      ch.close();
    } finally {
      if (!process.waitFor(10, TimeUnit.SECONDS)) {
        process.destroyForcibly();
      }
    }
    reader.join(10_000);
    assertEquals(false, reader.isAlive());
  }
}
