// Command kcctl is the operator's tool for kcd (and Kafka Connect) clusters.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kcd-project/kcd/daemon/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes, as in ../shared/reference/style.md: 1 runtime error, 2 usage
// error, 3 not found, 4 authentication, 130 interrupted.
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

// notFoundError says that what the user named does not exist; its message
// says where to find what does.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// run executes kcctl and maps its error to a message and an exit code, in
// this one place.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root, g := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "Error:", err)
	var usage *usageError
	var notFound *notFoundError
	var apiErr *client.APIError
	switch {
	case ctx.Err() != nil:
		return exitInterrupted
	case errors.As(err, &usage):
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", root.Name())
		return exitUsage
	case errors.As(err, &notFound):
		return exitNotFound
	case errors.As(err, &apiErr) && (apiErr.Status == 401 || apiErr.Status == 403):
		if apiErr.Status == 401 {
			fmt.Fprintf(stderr, "The server did not accept kcctl's credentials: %s. Give --token, or --user with --password-file, the KCCTL_* variables or a context (kcctl --help).\n", g.conn.creds)
		} else {
			fmt.Fprintf(stderr, "The server knows kcctl's credentials (%s) but their role does not allow this.\n", g.conn.creds)
		}
		return exitAuth
	}
	return exitError
}
