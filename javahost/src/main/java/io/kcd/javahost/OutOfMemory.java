package io.kcd.javahost;

import io.kcd.javahost.proto.Response;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The host's end when its heap runs out. The JVM runs without
 * -XX:+ExitOnOutOfMemoryError so that the call that hit the limit can still
 * answer kcd with its stack, which names the plugin that filled the heap;
 * then the host halts at once, since nothing in a JVM out of heap can be
 * trusted, and kcd starts a new one. A reserve, freed at the first
 * OutOfMemoryError, leaves room for that answer.
 */
final class OutOfMemory {
  /** The status -XX:+ExitOnOutOfMemoryError exits with. */
  static final int STATUS = 3;
  /** How long the answer may take to reach the socket before the halt. */
  static final long ANSWER_WAIT_MS = 2_000;

  @SuppressWarnings("unused") // held only to be freed
  private static volatile byte[] reserve = new byte[4 << 20];
  private static final AtomicBoolean dying = new AtomicBoolean();

  private OutOfMemory() {}

  /**
   * Makes an OutOfMemoryError that no call catches end the host: a thread of
   * the host's or a plugin's that dies of it halts the process.
   */
  static void install() {
    Thread.UncaughtExceptionHandler prev = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
      if (is(e)) {
        release(); // before anything here allocates
        halt(null, "thread ", t.getName(), e, -1);
      } else if (prev != null) {
        prev.uncaughtException(t, e);
      } else {
        System.err.print("Exception in thread \"" + t.getName() + "\" ");
        e.printStackTrace();
      }
    });
  }

  /** Tells whether t is, or was caused by, an OutOfMemoryError. */
  static boolean is(Throwable t) {
    for (int i = 0; t != null && i < 16; i++, t = t.getCause()) {
      if (t instanceof OutOfMemoryError) {
        return true;
      }
    }
    return false;
  }

  /**
   * Answers call id with e (its stack names the plugin) and halts the host.
   * Only the first OutOfMemoryError answers; later ones wait for the halt.
   */
  static void answerAndHalt(Conn conn, long id, Throwable e) {
    release();
    halt(conn, "call ", Long.toString(id), e, id);
  }

  /**
   * Frees the reserve: the first thing to do on an OutOfMemoryError, before
   * anything allocates (a string, an exception wrapper), or the handling
   * itself runs out of memory and nothing halts.
   */
  static void release() {
    reserve = null;
  }

  private static void halt(Conn conn, String where, String what, Throwable e, long id) {
    if (!dying.compareAndSet(false, true)) {
      sleepForever();
    }
    release(); // room for what follows
    try {
      System.err.println("Terminating due to java.lang.OutOfMemoryError in " + where + what + ": "
          + e.getMessage());
      e.printStackTrace();
      if (conn != null) {
        conn.write(io.kcd.javahost.proto.Frame.newBuilder()
            .setResponse(Response.newBuilder().setId(id).setError(Errors.of(e))).build());
        conn.sync(ANSWER_WAIT_MS);
      }
    } catch (Throwable ignored) {
      // out of memory again, or the connection is gone: halt all the same
    }
    ExitGuard.exit(STATUS);
  }

  private static void sleepForever() {
    while (true) {
      try {
        Thread.sleep(Long.MAX_VALUE);
      } catch (InterruptedException ignored) {
        // the halt is coming
      }
    }
  }
}
