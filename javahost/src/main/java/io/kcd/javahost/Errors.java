package io.kcd.javahost;

import io.kcd.javahost.proto.Error;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.reflect.InvocationTargetException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.connect.errors.RetriableException;

/** Java exceptions as protocol Errors, and back. */
final class Errors {
  private Errors() {}

  static Error of(Throwable t) {
    t = unwrap(t);
    StringWriter sw = new StringWriter();
    try (PrintWriter pw = new PrintWriter(sw)) {
      t.printStackTrace(pw);
    }
    Error.Builder b = Error.newBuilder()
        .setClassName(t.getClass().getName())
        .setStackTrace(sw.toString())
        .setRetriable(t instanceof RetriableException);
    if (t.getMessage() != null) {
      b.setMessage(t.getMessage());
    }
    return b.build();
  }

  /** A refusal of the protocol (unknown unit, bad request), not a plugin's failure. */
  static Error protocol(String msg) {
    return Error.newBuilder().setClassName(ProtocolException.class.getName()).setMessage(msg)
        .build();
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof ExecutionException || t instanceof CompletionException
        || t instanceof InvocationTargetException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  /** A Java exception standing for an Error kcd sent. */
  static Exception toException(Error e) {
    String msg = e.getClassName() + ": " + e.getMessage();
    return e.getRetriable() ? new RetriableException(msg)
        : new org.apache.kafka.connect.errors.ConnectException(msg);
  }

  /** Thrown for requests the host refuses. */
  static final class ProtocolException extends RuntimeException {
    ProtocolException(String msg) {
      super(msg);
    }
  }
}
