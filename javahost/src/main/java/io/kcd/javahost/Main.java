package io.kcd.javahost;

import io.kcd.javahost.proto.Frame;
import io.kcd.javahost.proto.Hello;
import java.io.FileOutputStream;
import java.io.FileDescriptor;
import java.io.PrintStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * kcd's Java connector host. kcd starts it with --plugin-path and the
 * environment KCD_HOST_SOCKET and KCD_HOST_TOKEN; it connects, says Hello,
 * serves kcd's calls, and exits when the connection ends: kcd owns its
 * lifetime.
 */
public final class Main {
  static final String HOST_VERSION = "0.1.0";

  private Main() {}

  public static void main(String[] args) {
    // Nothing but the protocol leaves this process except on stderr: a plugin
    // printing to System.out lands in the log.
    PrintStream err = new PrintStream(new FileOutputStream(FileDescriptor.err), true);
    System.setOut(err);
    int status;
    try {
      status = run(args);
    } catch (Throwable t) {
      t.printStackTrace(err);
      status = 1;
    }
    ExitGuard.exit(status);
  }

  static int run(String[] args) throws Exception {
    String pluginPath = null;
    String discovery = "hybrid_warn";
    for (int i = 0; i < args.length; i++) {
      if (args[i].equals("--plugin-path") && i + 1 < args.length) {
        pluginPath = args[++i];
      } else if (args[i].startsWith("--plugin-path=")) {
        pluginPath = args[i].substring("--plugin-path=".length());
      } else if (args[i].equals("--plugin-discovery") && i + 1 < args.length) {
        discovery = args[++i];
      } else {
        System.err.println("usage: kcd-javahost --plugin-path <dir>[,<dir>...] [--plugin-discovery only_scan|hybrid_warn|hybrid_fail|service_load]");
        return 2;
      }
    }
    String socket = System.getenv("KCD_HOST_SOCKET");
    String token = System.getenv("KCD_HOST_TOKEN");
    if (socket == null || socket.isEmpty() || token == null) {
      System.err.println("kcd-javahost: KCD_HOST_SOCKET and KCD_HOST_TOKEN must be set");
      return 2;
    }
    ExitGuard.install();
    SocketChannel ch = SocketChannel.open(StandardProtocolFamily.UNIX);
    ch.connect(UnixDomainSocketAddress.of(socket));
    Conn conn = Conn.of(ch);
    OutOfMemory.install(conn);
    conn.write(Frame.newBuilder().setHello(Hello.newBuilder()
        .setToken(token)
        .setHostVersion(HOST_VERSION)
        .setConnectVersion(AppInfoParser.getVersion())
        .setPid(ProcessHandle.current().pid())
        .setMaxFrameBytes(Conn.MAX_FRAME_BYTES)).build());
    // Scanning plugin.path takes seconds: it runs while kcd reads the Hello,
    // and calls that need the plugins wait for it.
    String path = pluginPath == null ? "" : pluginPath;
    String mode = discovery;
    CompletableFuture<Catalog> catalog = CompletableFuture.supplyAsync(() -> {
      long t0 = System.nanoTime();
      Catalog c = new Catalog(path, mode);
      Log.info("plugins loaded from " + path + " (" + mode + ") in " + (System.nanoTime() - t0) / 1_000_000
          + " ms");
      return c;
    });
    Host host = new Host(conn, catalog);
    try {
      host.serve();
    } catch (java.io.IOException e) {
      Log.warn("connection to kcd ended: " + e);
    }
    Log.info("connection to kcd closed; exiting");
    return 0;
  }
}
