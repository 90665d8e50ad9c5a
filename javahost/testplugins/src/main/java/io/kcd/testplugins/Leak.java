package io.kcd.testplugins;

import java.util.ArrayList;
import java.util.List;

/** A memory leak: what more() allocates stays reachable until the process ends. */
final class Leak {
  private static final List<byte[]> KEPT = new ArrayList<>();

  private Leak() {}

  /** Keeps 4 MiB more, in 1 MiB arrays; an OutOfMemoryError once the heap is full. */
  static void more() {
    synchronized (KEPT) {
      for (int i = 0; i < 4; i++) {
        byte[] b = new byte[1 << 20];
        b[b.length - 1] = 1;
        KEPT.add(b);
      }
    }
  }
}
