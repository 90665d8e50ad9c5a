package io.kcd.javahost;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The host's own log lines, to stderr through slf4j-simple. */
final class Log {
  private static final Logger LOG = LoggerFactory.getLogger("io.kcd.javahost");

  private Log() {}

  static void info(String msg) {
    LOG.info(msg);
  }

  static void warn(String msg) {
    LOG.warn(msg);
  }

  static void warn(String msg, Throwable t) {
    LOG.warn(msg, t);
  }
}
