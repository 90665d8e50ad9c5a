// Command kcctl is the operator's tool for kcd (and Kafka Connect) clusters.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes, as in ../shared/reference/style.md and the README: 1 runtime
// error, 2 usage error, 3 not found, 4 not authorised, 130 interrupted.
const (
	exitOK          = 0
	exitError       = 1
	exitUsage       = 2
	exitNotFound    = 3
	exitAuth        = 4
	exitInterrupted = 130
)

// usageError marks errors that come from how kcctl was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// run executes kcctl and maps its error to a message and an exit code, in
// this one place (exitCode).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, g := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	code, lines := exitCode(ctx, err, g)
	fmt.Fprintln(stderr, "Error:", lines[0])
	for _, l := range lines[1:] {
		fmt.Fprintln(stderr, l)
	}
	if code == exitUsage {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", root.Name())
	}
	return code
}
