package io.kcd.javahost;

import io.kcd.javahost.proto.Error;
import io.kcd.javahost.proto.Frame;
import io.kcd.javahost.proto.Response;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The host's end when its heap runs out. The JVM runs without
 * -XX:+ExitOnOutOfMemoryError so that the plugin call that hit the limit can
 * still answer kcd with its stack, which names the plugin that filled the
 * heap; then the host halts, since nothing in a JVM out of heap can be
 * trusted, and kcd starts a new one. A reserve, freed at the first answer,
 * leaves room for it.
 *
 * <p>Any thread may be the one that runs out, also one that runs no plugin
 * (the reader of kcd's frames). That thread then waits, allocating nothing,
 * for a plugin call to run out too (one that fills the heap soon does) and
 * answer; if none does, it answers every call in progress with the
 * OutOfMemoryError and the stack that call's thread is at, and halts.
 */
final class OutOfMemory {
  /** The status -XX:+ExitOnOutOfMemoryError exits with. */
  static final int STATUS = 3;
  /** How long the answers may take to reach the socket before the halt. */
  static final long ANSWER_WAIT_MS = 2_000;
  /** How long a thread that runs no call waits for a call to run out too. */
  static final long CALL_WAIT_MS = 1_000;

  @SuppressWarnings("unused") // held only to be freed
  private static volatile byte[] reserve = new byte[4 << 20];
  /** Set by the first call that answers with its OutOfMemoryError. */
  private static final AtomicBoolean answering = new AtomicBoolean();
  /** Set by the first thread, call or not, that handles an OutOfMemoryError. */
  private static final AtomicBoolean dying = new AtomicBoolean();
  /** The plugin calls in progress: call id to the unit whose thread runs it. */
  private static final Map<Long, Unit> inFlight = new ConcurrentHashMap<>();
  private static volatile Conn conn;

  private OutOfMemory() {}

  /**
   * Makes an OutOfMemoryError that no call catches end the host: a thread of
   * the host's or a plugin's that dies of it halts the process. It also runs
   * the answering code once, so that nothing is linked (string concatenation,
   * protobuf builders) when the heap is full.
   */
  static void install(Conn c) {
    conn = c;
    Thread.UncaughtExceptionHandler prev = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> {
      if (is(e)) {
        try {
          outsideCall(t, e);
        } catch (Throwable again) {
          ExitGuard.exit(STATUS); // out of heap before it could answer: halt all the same
        }
      } else if (prev != null) {
        prev.uncaughtException(t, e);
      } else {
        System.err.print("Exception in thread \"" + t.getName() + "\" ");
        e.printStackTrace();
      }
    });
    OutOfMemoryError probe = new OutOfMemoryError("probe");
    Frame f = answerFrame(0, Errors.of(probe));
    f.toByteArray();
    inFlightError(probe, "main", "\"t\" tid=1 RUNNABLE\n");
    message("call ", "0", probe);
    blameLine("probe");
    // AtomicBoolean's VarHandle operations spin classes on the heap at
    // their first use, which in a new host may be the handler's, before
    // the reserve is freed.
    AtomicBoolean warm = new AtomicBoolean();
    warm.compareAndSet(false, true);
    warm.set(warm.get());
  }

  /** Notes that call id runs on unit's thread, until {@link #done}. */
  static void started(long id, Unit unit) {
    inFlight.put(id, unit);
  }

  static void done(long id) {
    inFlight.remove(id);
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
   * Only the first call answers; later ones wait for the halt.
   */
  static void answerAndHalt(long id, Throwable e) {
    if (!answering.compareAndSet(false, true)) {
      sleepForever();
    }
    dying.set(true);
    reserve = null; // room for what follows
    try {
      blame();
      System.err.println(message("call ", Long.toString(id), e));
      e.printStackTrace();
      Conn c = conn;
      if (c != null) {
        c.write(answerFrame(id, Errors.of(e)));
        c.sync(ANSWER_WAIT_MS);
      }
    } catch (Throwable ignored) {
      // out of memory again, or the connection is gone: halt all the same
    }
    ExitGuard.exit(STATUS);
  }

  /** Handles an OutOfMemoryError that ended thread t outside a plugin call. */
  private static void outsideCall(Thread t, Throwable e) {
    if (!dying.compareAndSet(false, true)) {
      sleepForever();
    }
    long deadline = System.nanoTime() + CALL_WAIT_MS * 1_000_000;
    while (!answering.get() && System.nanoTime() < deadline) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException ignored) {
        // keep waiting until the deadline
      }
    }
    if (!answering.compareAndSet(false, true)) {
      sleepForever(); // a call answers and halts
    }
    reserve = null;
    try {
      blame();
      String where = t.getName();
      System.err.println(message("thread ", where, e));
      Conn c = conn;
      for (Map.Entry<Long, Unit> call : inFlight.entrySet()) {
        Error err = inFlightError(e, where, call.getValue().stack());
        if (c != null) {
          c.write(answerFrame(call.getKey(), err));
        }
      }
      if (c != null) {
        c.sync(ANSWER_WAIT_MS);
      }
    } catch (Throwable ignored) {
      // as in answerAndHalt
    }
    ExitGuard.exit(STATUS);
  }

  /** What precedes the unit's name in the line {@link #blame} prints; kcd reads it. */
  static final String BLAME = "kcd-javahost: heap exhausted by unit ";

  /**
   * Prints the unit charged with the exhausted heap: the one whose thread ran
   * out or started the thread that did (Unit.OWNER). kcd reads the line to keep
   * a plugin that keeps filling the heap away from the others.
   */
  private static void blame() {
    String owner = Unit.OWNER.get();
    if (owner != null) {
      System.err.println(blameLine(owner));
    }
  }

  private static String blameLine(String owner) {
    return BLAME + owner;
  }

  private static String message(String where, String what, Throwable e) {
    return "Terminating due to java.lang.OutOfMemoryError in " + where + what + ": "
        + e.getMessage();
  }

  /** The answer to a call in progress when thread where ran out of heap: where the call is. */
  private static Error inFlightError(Throwable e, String where, String stack) {
    String msg = e.getMessage() + " (the host's heap ran out in its thread " + where
        + " while this call ran; the call's thread was at the stack below)";
    return Error.newBuilder().setClassName(OutOfMemoryError.class.getName()).setMessage(msg)
        .setStackTrace(OutOfMemoryError.class.getName() + ": " + msg + "\n" + stack).build();
  }

  private static Frame answerFrame(long id, Error err) {
    return Frame.newBuilder().setResponse(Response.newBuilder().setId(id).setError(err)).build();
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
