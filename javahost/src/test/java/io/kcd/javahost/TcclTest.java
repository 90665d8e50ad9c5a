package io.kcd.javahost;

import static org.junit.jupiter.api.Assertions.assertSame;

import java.net.URL;
import java.net.URLClassLoader;
import org.apache.kafka.connect.runtime.isolation.LoaderSwap;
import org.junit.jupiter.api.Test;

class TcclTest {
  @Test
  void swapSetsThePluginLoaderAndRestoresTheCallers() throws Exception {
    Thread t = Thread.currentThread();
    ClassLoader before = t.getContextClassLoader();
    try (URLClassLoader plugin = new URLClassLoader(new URL[0], before)) {
      try (LoaderSwap ignored = Tccl.swap(plugin)) {
        assertSame(plugin, t.getContextClassLoader(), "the plugin's call runs on its loader");
      }
      assertSame(before, t.getContextClassLoader(), "the caller's loader is back after the call");
    }
  }
}
