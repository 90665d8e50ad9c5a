package io.kcd.javahost;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A connector or task of the host: its calls run in order on its own thread,
 * so a plugin that hangs holds only this unit. The queue is bounded.
 */
final class Unit {
  static final int MAX_QUEUED_CALLS = 256;

  /**
   * The name of the unit whose thread runs, or whose thread started (directly
   * or not) the thread that runs: threads a plugin starts inherit it, so a
   * plugin's own thread that exhausts the heap is charged to its unit.
   */
  static final InheritableThreadLocal<String> OWNER = new InheritableThreadLocal<>();

  final String name;
  private final ThreadPoolExecutor exec;
  private volatile Thread thread;
  /** Set once the unit is stopping: queued calls then fail instead of reaching the plugin. */
  volatile boolean stopping;

  Unit(ThreadGroup group, String name) {
    this.name = name;
    this.exec = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(MAX_QUEUED_CALLS), r -> {
          Thread t = new Thread(group, () -> {
            OWNER.set(name);
            r.run();
          }, "unit-" + name);
          t.setDaemon(true);
          thread = t;
          return t;
        });
    this.exec.prestartCoreThread();
  }

  /** Queues a call; throws RejectedExecutionException when the queue is full or the unit ended. */
  void submit(Runnable r) {
    exec.execute(r);
  }

  /** Runs r on the unit's thread and waits up to timeoutMs; false if it did not finish. */
  boolean runAndWait(Runnable r, long timeoutMs) throws InterruptedException {
    CountDownLatch done = new CountDownLatch(1);
    try {
      exec.execute(() -> {
        try {
          r.run();
        } finally {
          done.countDown();
        }
      });
    } catch (RejectedExecutionException e) {
      return false;
    }
    return done.await(timeoutMs, TimeUnit.MILLISECONDS);
  }

  /** Ends the unit's thread: waits up to graceMs for the call in progress, then interrupts it. */
  void end(long graceMs) throws InterruptedException {
    stopping = true;
    exec.shutdown();
    if (!exec.awaitTermination(graceMs, TimeUnit.MILLISECONDS)) {
      Log.warn("unit " + name + " still busy after " + graceMs + " ms; interrupting it");
      exec.shutdownNow();
    }
  }

  /** The stack of the unit's thread, formatted like a thread dump. */
  String stack() {
    Thread t = thread;
    if (t == null) {
      return "";
    }
    StringBuilder sb = new StringBuilder();
    sb.append('"').append(t.getName()).append("\" ").append(t.isDaemon() ? "daemon " : "")
        .append("tid=").append(t.getId()).append(' ').append(t.getState()).append('\n');
    for (StackTraceElement e : t.getStackTrace()) {
      sb.append("\tat ").append(e).append('\n');
    }
    return sb.toString();
  }
}
