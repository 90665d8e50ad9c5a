package io.kcd.javahost;

import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.apache.kafka.connect.runtime.isolation.Plugins;

/** The thread context class loader around a plugin call. */
final class Tccl {
  private Tccl() {}

  /**
   * Makes loader the thread's context class loader until the returned
   * LoaderSwap is closed, as Kafka Connect's Plugins.withClassLoader does.
   * LoaderSwap's constructor takes the loader to restore, not the one to
   * set: {@code Tccl.swap(pluginLoader)} leaves the plugin's call on
   * the host's loader (Debezium's ConfigDef then cannot load its own
   * classes by name) and leaves the plugin's loader behind afterwards.
   */
  static LoaderSwap swap(ClassLoader loader) {
    return new LoaderSwap(Plugins.compareAndSwapLoaders(loader));
  }
}
