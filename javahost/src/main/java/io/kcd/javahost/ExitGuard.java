package io.kcd.javahost;

import java.security.Permission;

/**
 * Turns System.exit from a plugin into a SecurityException thrown at the
 * call, so one plugin cannot end the host; only the host itself exits. Every
 * other check is allowed and costs nothing.
 */
final class ExitGuard extends SecurityManager {
  private static volatile boolean hostExiting;

  static void install() {
    System.setSecurityManager(new ExitGuard());
  }

  /** Ends the process; the one allowed way out. */
  static void exit(int status) {
    hostExiting = true;
    System.err.flush();
    Runtime.getRuntime().halt(status);
  }

  @Override
  public void checkExit(int status) {
    if (!hostExiting) {
      throw new SecurityException("System.exit(" + status + ") called by a plugin in kcd's "
          + "connector host; the call fails instead");
    }
  }

  @Override
  public void checkPermission(Permission perm) {}

  @Override
  public void checkPermission(Permission perm, Object context) {}
}
