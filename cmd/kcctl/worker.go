package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

func newWorkerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "List workers and change their weight and drain state",
	}
	cmd.AddCommand(newWorkerListCmd(g), newWorkerWeightCmd(g), newWorkerDrainCmd(g), newWorkerUndrainCmd(g))
	return cmd
}

func newWorkerListCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the workers: state, weight, what they own; gone ones too, for a while",
		Long: `List the workers. STATE is alive, draining (alive, and drained), expired
(its session expired: it went silent, e.g. it crashed or froze) or left (it
stopped cleanly). A worker that is gone runs nothing; it stays listed while
it still owns connectors or tasks (they wait for another worker) and for 10
minutes after it went, at most 100 of them.`,
		Example: `  kcctl worker list
  kcctl worker list -o wide     # plus each worker's REST URL and when it went`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ws, err := g.client().Workers(cmd.Context())
			if err != nil {
				return err
			}
			if len(ws) == 0 && isTable(output) {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no workers")
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, workersPrintable(ws, time.Now()))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func workersPrintable(ws []api.WorkerView, now time.Time) printer.Printable {
	t := printer.Table{
		Header:     []string{"ID", "STATE", "NODE", "WEIGHT", "DRAINING", "CONNECTORS", "TASKS", "AGE"},
		WideHeader: []string{"REST-URL", "GONE"},
	}
	var names []string
	for _, w := range ws {
		age, gone := "<unknown>", "<none>"
		if !w.Since.IsZero() {
			age = printer.Age(now.Sub(w.Since))
		}
		if w.GoneAt != nil {
			gone = printer.Age(now.Sub(*w.GoneAt)) + " ago"
		}
		t.Rows = append(t.Rows, []string{w.ID, orNone(w.State), strconv.FormatUint(w.NodeID, 10), formatWeight(w.Weight),
			strconv.FormatBool(w.Draining), strconv.Itoa(w.Connectors), strconv.Itoa(w.Tasks), age})
		t.WideRows = append(t.WideRows, []string{orNone(w.RESTURL), gone})
		names = append(names, "worker/"+w.ID)
	}
	return printer.Printable{Data: ws, Table: t, Names: names}
}

// workerSettings is what weight, drain and undrain print with -o json|yaml.
type workerSettings struct {
	Worker   string   `json:"worker"`
	Weight   *float64 `json:"weight,omitempty"`
	Draining bool     `json:"draining"`
}

func newWorkerWeightCmd(g *globals) *cobra.Command {
	var output string
	var force bool
	cmd := &cobra.Command{
		Use:   "weight ID WEIGHT",
		Short: "Set a worker's weight: its share of the work relative to the others (0 takes none)",
		Long: `Set a worker's weight. Workers get connectors and tasks in proportion to
their weights; a weight of 0 takes no work. The setting outlives the worker's
session and overrides the weight the worker started with. A worker id the cluster does not know
is refused (exit 3) unless --force is given, to set the weight of a worker
before it first joins.`,
		Example: `  # Give a bigger machine twice the share of the others
  kcctl worker weight 10.0.0.4:8083 2

  # Before the worker first joins
  kcctl worker weight 10.0.0.9:8083 0.5 --force`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			w, err := parseWeight(args[1])
			if err != nil {
				return err
			}
			c := g.client()
			if err := checkWorker(cmd, c, id, force); err != nil {
				return err
			}
			s, err := c.SetWeight(cmd.Context(), id, w)
			if err != nil {
				return err
			}
			return printChange(cmd, output, "worker/"+id, "weight set to "+formatWeight(w),
				workerSettings{Worker: id, Weight: s.Weight, Draining: s.Draining}, workerAfter(c, id))
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "Set the weight even of a worker id the cluster does not know (yet)")
	addOutputFlag(cmd, &output)
	// "weight ID -1" parses -1 as a flag: say what is wrong with it instead.
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		if i := strings.LastIndex(err.Error(), " in -"); i >= 0 {
			if arg := err.Error()[i+len(" in "):]; isNumber(arg) {
				_, err = parseWeight(arg)
				return err
			}
		}
		return &usageError{err}
	})
	return cmd
}

func isNumber(s string) bool {
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

func newWorkerDrainCmd(g *globals) *cobra.Command {
	var output string
	var dryRun, force bool
	cmd := &cobra.Command{
		Use:   "drain ID",
		Short: "Move all connectors and tasks off a worker and give it none (before maintenance)",
		Long: `Drain a worker: the coordinator moves its connectors and tasks to the other
workers and gives it no new ones until it is undrained. kcctl first prints
what will move (the plan of the coordinator on the Raft leader); with
--dry-run it prints only that and changes nothing. A worker id the cluster
does not know is refused (exit 3) unless --force is given.`,
		Example: `  # What would move?
  kcctl worker drain 10.0.0.4:8083 --dry-run

  # Drain it, and later take it back
  kcctl worker drain 10.0.0.4:8083
  kcctl worker undrain 10.0.0.4:8083`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			c := g.client()
			if err := checkWorker(cmd, c, id, force); err != nil {
				return err
			}
			plan, err := c.Plan(cmd.Context(), id)
			var apiErr *client.APIError
			if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
				// No session now (the worker is down, checkWorker warned):
				// nothing of it runs, and drained it stays empty when it
				// comes back.
				plan, err = api.PlanResult{Drain: id, Moves: []api.Move{}}, nil
			}
			if err != nil {
				return err
			}
			res := drainResult{Worker: id, DryRun: dryRun, Plan: plan}
			if !dryRun {
				s, err := c.SetDraining(cmd.Context(), id, true)
				if err != nil {
					return err
				}
				res.Draining = s.Draining
			}
			if err := printDrain(cmd, output, res); err != nil || output != "wide" {
				return err
			}
			return printAfter(cmd, workerAfter(c, id)) // the worker now (wide.go)
		},
	}
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Only print what would move; change nothing")
	cmd.Flags().BoolVar(&force, "force", false, "Drain even a worker id the cluster does not know (yet): it takes no work when it joins")
	addOutputFlag(cmd, &output)
	return cmd
}

// drainResult is what drain prints with -o json|yaml.
type drainResult struct {
	Worker string `json:"worker"`
	DryRun bool   `json:"dry_run"`
	// Draining is the worker's drain state afterwards (false on a dry run
	// that changed nothing).
	Draining bool           `json:"draining"`
	Plan     api.PlanResult `json:"plan"`
}

func printDrain(cmd *cobra.Command, output string, res drainResult) error {
	name := "worker/" + res.Worker
	if !isTable(output) {
		return printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: res, Names: []string{name}})
	}
	out := cmd.OutOrStdout()
	verb := "moves"
	if res.DryRun {
		verb = "would move"
	}
	if len(res.Plan.Moves) == 0 {
		fmt.Fprintf(out, "draining %s %s nothing\n", res.Worker, verb)
	} else {
		fmt.Fprintf(out, "draining %s %s %d units:\n", res.Worker, verb, len(res.Plan.Moves))
		if err := printer.Print(out, output, movesPrintable(res.Plan.Moves)); err != nil {
			return err
		}
		warnUnplaced(cmd, res.Plan.Moves)
	}
	if res.DryRun {
		_, err := fmt.Fprintln(out, name, "not changed (dry run)")
		return err
	}
	_, err := fmt.Fprintln(out, name, "draining")
	return err
}

func newWorkerUndrainCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "undrain ID",
		Short:   "Let a drained worker take connectors and tasks again",
		Example: `  kcctl worker undrain 10.0.0.4:8083`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			c := g.client()
			warnIfNoSession(cmd, c, id)
			s, err := c.SetDraining(cmd.Context(), id, false)
			if err != nil {
				return err
			}
			return printChange(cmd, output, "worker/"+id, "undrained",
				workerSettings{Worker: id, Weight: s.Weight, Draining: s.Draining}, workerAfter(c, id))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// checkWorker refuses a worker id the cluster does not know (not listed,
// alive or gone), unless force: the API keeps settings of any id, so a typo
// would otherwise store a setting nobody uses. A known worker without a
// session gets a warning.
func checkWorker(cmd *cobra.Command, c *client.Client, id string, force bool) error {
	ws, err := c.Workers(cmd.Context())
	if err != nil {
		return err
	}
	for _, w := range ws {
		if w.ID != id {
			continue
		}
		if w.GoneAt != nil {
			cmd.PrintErrf("Warning: worker %q has no session now (%s); the setting applies when it joins again\n", id, w.State)
		}
		return nil
	}
	if force {
		cmd.PrintErrf("Warning: no worker %q is known; the setting applies when it joins\n", id)
		return nil
	}
	return &notFoundError{fmt.Errorf("no worker %q is known to the cluster (kcctl worker list shows the workers); give --force to set it for a worker that has not joined yet", id)}
}

// parseWeight reads a weight: a finite, non-negative number.
func parseWeight(s string) (float64, error) {
	w, err := strconv.ParseFloat(s, 64)
	if err != nil || w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
		return 0, &usageError{fmt.Errorf("worker weight must be a number from 0 up, got %q", s)}
	}
	return w, nil
}

func formatWeight(w float64) string { return strconv.FormatFloat(w, 'f', -1, 64) }

// warnIfNoSession warns when no worker of that id has a session: the API
// keeps settings of any id (they outlive sessions), so a typo would
// otherwise pass unnoticed.
func warnIfNoSession(cmd *cobra.Command, c *client.Client, id string) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
	defer cancel()
	ws, err := c.Workers(ctx)
	if err != nil {
		return // the change itself will say what is wrong
	}
	for _, w := range ws {
		if w.ID == id && w.GoneAt == nil {
			return
		}
	}
	cmd.PrintErrf("Warning: no worker %q has a session now; the setting applies when it joins\n", id)
}

func isTable(output string) bool { return output == "table" || output == "wide" }

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}
