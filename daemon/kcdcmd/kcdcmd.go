// Package kcdcmd is the kcd command: cmd/kcd is only its main. A binary
// with more metadata store backends built in imports them for their
// registration and calls Main, without forking kcd:
//
//	package main
//
//	import (
//		"github.com/kcd-project/kcd/daemon/kcdcmd"
//		_ "example.com/acme/kcdstore" // registers the backend "acme"
//	)
//
//	func main() { kcdcmd.Main() }
//
// See docs/stores.md, "Writing a backend".
package kcdcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/daemon"
	"github.com/kcd-project/kcd/daemon/config"
	"github.com/kcd-project/kcd/internal/version"
	"github.com/kcd-project/kcd/store"
)

// Main runs kcd with the process's arguments and exits with its status.
func Main() {
	os.Exit(Run(os.Args[1:], os.Stdout, os.Stderr))
}

// Run runs kcd with args until it stops (SIGINT or SIGTERM), and returns
// the process's exit status.
func Run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, restore the default handling so that a
		// second Ctrl-C kills a node that hangs while stopping.
		<-ctx.Done()
		stop()
	}()

	root := NewCommand(stdout, stderr)
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "kcd:", err)
		if errors.As(err, new(*usageError)) {
			fmt.Fprintln(stderr, "Run 'kcd --help' for usage.")
			return exitUsage
		}
		return 1
	}
	return 0
}

// exitUsage is the exit status of a bad command line (unknown flag or
// argument, a flag or setting kcd cannot use), as kcctl's.
const exitUsage = 2

// usageError marks errors that come from how kcd was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usageArgs makes cmd's argument check report a usage error.
func usageArgs(cmd *cobra.Command) {
	check := cmd.Args
	cmd.Args = func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// NewCommand returns the kcd command, writing to stdout and stderr.
func NewCommand(stdout, stderr io.Writer) *cobra.Command {
	var configFile string
	cmd := &cobra.Command{
		Use:   "kcd",
		Short: "kcd runs Kafka Connect connectors, coordinated by Raft instead of Kafka",
		Long: `kcd is a Kafka Connect runtime in one Go binary. It serves Kafka Connect's REST
API, keeps connector configs, statuses and offsets in its own replicated
store, and uses Kafka only as the data plane.

Settings come from defaults, then the YAML file given with --config, then
KCD_* environment variables, then flags.`,
		Example: `  # Try it out with an embedded dev broker (not a real Kafka)
  kcd --dev-kafka --data-dir ./kcd-data

  # Run against a Kafka cluster
  kcd --node-id 1 --data-dir /var/lib/kcd --bootstrap-servers kafka1:9092,kafka2:9092`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	cmd.Flags().StringVar(&configFile, "config", os.Getenv("KCD_CONFIG"), "YAML config file; flags and KCD_* variables override it (env KCD_CONFIG)")
	flags := config.RegisterFlags(cmd.Flags(), config.Default())
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		cfg, err := config.Load(configFile, os.LookupEnv, flags)
		if err != nil {
			return &usageError{err}
		}
		if err := checkBackend(cfg); err != nil {
			return &usageError{err}
		}
		log := daemon.NewLogger(stderr, cfg.LogLevel, cfg.LogFormat)
		// Store backends and drivers log through slog's default: kcd's.
		slog.SetDefault(log)
		if cfg.MemoryLimit > 0 {
			debug.SetMemoryLimit(int64(cfg.MemoryLimit))
			log.Info("memory limit set", "memory_limit", cfg.MemoryLimit.String())
		}
		return daemon.New(cfg, log).Run(cmd.Context())
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "version",
		Short: "Print kcd's version and commit",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "kcd %s (commit %s)\n", version.Version, version.Commit)
			fmt.Fprintf(cmd.OutOrStdout(), "store backends: %s\n", strings.Join(backends(), ", "))
		},
	})
	usageArgs(cmd)
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
	return cmd
}

// backends are the metadata store backends built into this binary: raft,
// which every kcd has, and the registered ones.
func backends() []string {
	return append([]string{config.DefaultStoreBackend}, slices.DeleteFunc(store.Backends(), func(b string) bool {
		return b == config.DefaultStoreBackend
	})...)
}

// checkBackend refuses a --store backend this binary lacks, at start rather
// than when the node would first open it. Only a Raft node opens a backend.
func checkBackend(cfg config.Config) error {
	if !cfg.HasRole(config.RoleRaft) || slices.Contains(backends(), cfg.Store.Backend) {
		return nil
	}
	return fmt.Errorf("store %q is not built into this kcd (built in: %s; a third-party backend needs a kcd built with it, see docs/stores.md)",
		cfg.Store.Backend, strings.Join(backends(), ", "))
}
