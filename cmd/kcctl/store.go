package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
	"github.com/kcd-project/kcd/tui/storeview"
)

func newStoreCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Show and switch the cluster's metadata store: raft, mysql, postgres or a third-party backend",
	}
	cmd.AddCommand(newStoreStatusCmd(g), newStoreSwitchCmd(g))
	return cmd
}

func newStoreStatusCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the active metadata backend, its health and latency, and the last switch with its figures",
		Long: `Show the active metadata backend with its settings (secrets masked by the
server), whether a read of it just succeeded and how long it took, its
revision, since when it is active, the backends the node can open, and the
last switch: running with its phase and keys copied, or how it ended (keys
copied, how long writes were held, the revision and checksum it took over
at, or why it failed).`,
		Example: `  kcctl store status

  # Every figure, for a script
  kcctl store status -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := g.client().StoreStatus(cmd.Context())
			if err != nil {
				return err
			}
			switch output {
			case "table":
				_, err := fmt.Fprint(cmd.OutOrStdout(), storeview.Status(st, time.Now()))
				return err
			case "wide":
				_, err := fmt.Fprint(cmd.OutOrStdout(), storeview.StatusWide(st, time.Now()))
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, storeview.StatusPrintable(st))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// storeSwitchOptions are the flags of kcctl store switch.
type storeSwitchOptions struct {
	output string
	to     string
	dsn    string
	set    []string
	force  bool
	dryRun bool
	noWait bool
}

// request checks the flags and builds the request; its errors are usage
// errors. No error repeats a value: it may be a secret.
func (o *storeSwitchOptions) request() (api.StoreSwitchRequest, error) {
	req := api.StoreSwitchRequest{Backend: strings.TrimSpace(o.to), Force: o.force, DryRun: o.dryRun}
	if req.Backend == "" {
		return req, errors.New("--to is required: the backend to switch to (raft, mysql, postgres or a registered one)")
	}
	settings := map[string]string{}
	for i, kv := range o.set {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return req, fmt.Errorf("--set number %d is not KEY=VALUE", i+1)
		}
		if _, dup := settings[k]; dup {
			return req, fmt.Errorf("--set %s is given twice", k)
		}
		settings[k] = v
	}
	if o.dsn != "" {
		if _, dup := settings["dsn"]; dup {
			return req, errors.New("give the DSN once: --dsn, or --set dsn=…")
		}
		settings["dsn"] = o.dsn
	}
	if len(settings) > 0 {
		req.Settings = settings
	}
	return req, nil
}

// defaultBackends are offered for --to when the server cannot be asked.
var defaultBackends = []string{"raft", "mysql", "postgres"}

func newStoreSwitchCmd(g *globals) *cobra.Command {
	o := &storeSwitchOptions{}
	var req api.StoreSwitchRequest
	cmd := &cobra.Command{
		Use:   "switch --to BACKEND [--dsn DSN] [--set KEY=VALUE]...",
		Short: "Move the cluster's metadata to another backend while it runs",
		Long: `Make BACKEND the cluster's metadata store. The Raft leader checks the target
(reaches it, creates its schema, refuses one that holds keys unless --force),
copies everything while writes go on, holds metadata writes briefly to copy
what changed, verifies the copy (counts and a checksum), records the new
backend in Raft and releases writes. Connectors keep running. Any failure
leaves the old backend active and says why. Switching back is the same
command with --to raft.

Give the DSN, or the part of it that is secret, by reference and in single
quotes so that the shell leaves it alone: '${env:NAME}' or '${file:PATH}',
as in 'kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd'. Each node that opens
the backend resolves it in its own environment; the cluster stores the
reference, not the secret. kcctl never prints a DSN, and the server masks
secrets in every answer.

kcctl follows the switch until it ends: a progress bar when stderr is a
terminal, else a line per phase (and every few seconds while keys are
copied) on stderr. The outcome goes to stdout. It exits 0 once the switch is
done and 1 when it failed. Interrupting kcctl does not stop the switch:
follow it with 'kcctl store status'.

When the cluster refuses the switch only for a moment (a new Raft leader
still tidying up after an earlier switch, or leadership changing), kcctl
says "Waiting: …" and asks again, for up to 60 seconds. A switch that is
already running is refused at once.`,
		Example: `  # What would a switch to MariaDB/MySQL copy? Changes nothing
  kcctl store switch --to mysql --dsn 'kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd' --dry-run

  # Switch, and follow it to the end
  kcctl store switch --to mysql --dsn 'kcd:${env:KCD_DB_PASSWORD}@tcp(db:3306)/kcd'

  # To PostgreSQL, whose database already holds an old copy (removed)
  kcctl store switch --to postgres --dsn '${file:/etc/kcd/pg-dsn}' --force

  # Back to the cluster's own Raft store, without waiting
  kcctl store switch --to raft --no-wait`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			var err error
			if req, err = o.request(); err != nil {
				return &usageError{err}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStoreSwitch(cmd, g, o, req)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "Backend to switch to: raft, mysql, postgres or a registered one")
	f.StringVar(&o.dsn, "dsn", "", "Connection string of the target (settings[\"dsn\"]); pass a reference such as '${env:NAME}' or '${file:PATH}'")
	f.StringArrayVarP(&o.set, "set", "s", nil, "A setting of the target backend, KEY=VALUE (repeatable); values may be references")
	f.BoolVar(&o.force, "force", false, "Switch to a target that already holds keys: they are removed")
	f.BoolVar(&o.dryRun, "dry-run", false, "Only check the target and print what would be copied, with the warnings; change nothing (a SQL target's missing tables are created, empty)")
	f.BoolVar(&o.noWait, "no-wait", false, "Return once the switch has started; follow it with 'kcctl store status'")
	addOutputFlag(cmd, &o.output)
	_ = cmd.RegisterFlagCompletionFunc("to", func(c *cobra.Command, _ []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return backendCompletions(c, g, prefix), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// backendCompletions are the backends the server can open, or the built-in
// ones when it cannot be asked, that start with prefix.
func backendCompletions(cmd *cobra.Command, g *globals, prefix string) []cobra.Completion {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	names := defaultBackends
	if st, err := g.client().StoreStatus(ctx); err == nil && len(st.Backends) > 0 {
		names = st.Backends
	}
	var out []cobra.Completion
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out
}

// storeAfter prints, for -o wide of store switch, the store as store
// status -o wide shows it now; a failure to read it is a warning.
func storeAfter(cmd *cobra.Command, c *client.Client) {
	st, err := c.StoreStatus(cmd.Context())
	if err != nil {
		cmd.PrintErrf("Warning: the store's status could not be read: %v\n", err)
		return
	}
	fmt.Fprint(cmd.OutOrStdout(), storeview.StatusWide(st, time.Now()))
}

// lineEvery is how often plain progress lines repeat within a phase.
const lineEvery = 3 * time.Second

// switchWait bounds how long store switch waits out transient refusals:
// total in all, and maxPause for one pause whatever Retry-After says.
var switchWait = struct{ total, maxPause time.Duration }{60 * time.Second, 5 * time.Second}

// switchStore posts req. While the server refuses it for a moment (409
// with Retry-After: a new leader tidying up, leadership moving) it says
// "Waiting: <reason>" once on stderr, waits as told and posts it again,
// until switchWait.total has passed or ctx ends; then the last refusal is
// the error. A refused switch never started, so posting it again is safe.
func switchStore(ctx context.Context, c *client.Client, req api.StoreSwitchRequest, stderr io.Writer) (api.StoreSwitch, error) {
	deadline := time.Now().Add(switchWait.total)
	said := false
	for {
		sw, err := c.SwitchStore(ctx, req)
		var refused *client.APIError
		if !errors.As(err, &refused) || refused.Status != http.StatusConflict || refused.RetryAfter <= 0 {
			return sw, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return sw, err
		}
		if !said {
			fmt.Fprintf(stderr, "Waiting: %s\n", refused.Message)
			said = true
		}
		t := time.NewTimer(min(refused.RetryAfter, switchWait.maxPause, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return sw, err
		case <-t.C:
		}
	}
}

func runStoreSwitch(cmd *cobra.Command, g *globals, o *storeSwitchOptions, req api.StoreSwitchRequest) error {
	c := g.client()
	sw, err := switchStore(cmd.Context(), c, req, cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if sw.State == api.SwitchDryRun || (sw.State == api.SwitchRunning && o.noWait) {
		if !isTable(o.output) {
			return printer.Print(out, o.output, storeview.SwitchPrintable(sw))
		}
		for _, w := range sw.Warnings {
			cmd.PrintErrf("Warning: %s\n", w)
		}
		if _, err := fmt.Fprintln(out, storeview.Summary(sw)); err != nil {
			return err
		}
		if o.output == "wide" {
			storeAfter(cmd, c)
		}
		return nil
	}
	if sw.State == api.SwitchRunning {
		poll := storeview.Poll(c.StoreStatus)
		if stderr, ok := cmd.ErrOrStderr().(*os.File); ok && term.IsTerminal(stderr.Fd()) {
			sw, err = storeview.FollowBar(cmd.Context(), stderr, poll, sw, storeview.PollEvery, storeview.Grace)
		} else {
			sw, err = storeview.FollowLines(cmd.Context(), cmd.ErrOrStderr(), poll, sw, storeview.PollEvery, storeview.Grace, lineEvery)
		}
		if err != nil {
			return err
		}
	}
	if !isTable(o.output) {
		if err := printer.Print(out, o.output, storeview.SwitchPrintable(sw)); err != nil {
			return err
		}
	} else if sw.State == api.SwitchDone {
		if _, err := fmt.Fprintln(out, storeview.Summary(sw)); err != nil {
			return err
		}
		if o.output == "wide" {
			storeAfter(cmd, c)
		}
	}
	if sw.State != api.SwitchDone {
		return errors.New(storeview.Failure(sw))
	}
	return nil
}
