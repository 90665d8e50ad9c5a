package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/tui/printer"
)

func newRebalanceCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "rebalance",
		Short: "Show how the coordinator spreads connectors and tasks: its plan and its journal",
	}
	cmd.AddCommand(newRebalancePlanCmd(g), newRebalanceHistoryCmd(g))
	return cmd
}

func newRebalancePlanCmd(g *globals) *cobra.Command {
	var output, drain string
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what the coordinator would move now, and every worker's share (changes nothing)",
		Example: `  # Is the cluster balanced?
  kcctl rebalance plan

  # What would draining a worker move?
  kcctl rebalance plan --drain 10.0.0.4:8083`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			plan, err := g.client().Plan(cmd.Context(), drain)
			if err != nil {
				return err
			}
			if !isTable(output) {
				return printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: plan, Names: planNames(plan)})
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "plan at generation %s", plan.Epoch)
			if plan.Drain != "" {
				fmt.Fprintf(out, ", draining %s", plan.Drain)
			}
			fmt.Fprintln(out)
			fmt.Fprintln(out)
			if len(plan.Moves) == 0 {
				fmt.Fprintln(out, "no moves")
			} else {
				if err := printer.Print(out, output, movesPrintable(plan.Moves)); err != nil {
					return err
				}
				warnUnplaced(cmd, plan.Moves)
			}
			fmt.Fprintln(out)
			return printer.Print(out, output, sharesPrintable(plan.Shares))
		},
	}
	cmd.Flags().StringVar(&drain, "drain", "", "Plan as if this worker were drained")
	addOutputFlag(cmd, &output)
	return cmd
}

// planNames is a plan for -o name: the plan itself, then each unit it
// moves.
func planNames(plan api.PlanResult) []string {
	return append([]string{"plan/" + plan.Epoch.String()}, unitNames(plan.Moves)...)
}

func movesPrintable(moves []api.Move) printer.Printable {
	t := printer.Table{Header: []string{"UNIT", "FROM", "TO"}, WideHeader: []string{"STOPS-FIRST"}}
	for _, m := range moves {
		t.Rows = append(t.Rows, []string{m.Unit, orNone(m.From), orNone(m.To)})
		// Revoke: the unit stops on FROM before it starts on TO.
		t.WideRows = append(t.WideRows, []string{strconv.FormatBool(m.Revoke)})
	}
	return printer.Printable{Data: moves, Table: t, Names: unitNames(moves)}
}

func sharesPrintable(shares []api.PlanShare) printer.Printable {
	t := printer.Table{Header: []string{"WORKER", "WEIGHT", "QUOTA", "BEFORE", "AFTER"}, WideHeader: []string{"CHANGE", "OF-QUOTA"}}
	for _, s := range shares {
		t.Rows = append(t.Rows, []string{s.Worker, formatWeight(s.Weight), strconv.Itoa(s.Quota), strconv.Itoa(s.Before), strconv.Itoa(s.After)})
		ofQuota := "<none>"
		if s.Quota > 0 {
			ofQuota = strconv.Itoa(s.After*100/s.Quota) + "%"
		}
		t.WideRows = append(t.WideRows, []string{fmt.Sprintf("%+d", s.After-s.Before), ofQuota})
	}
	return printer.Printable{Data: shares, Table: t}
}

func unitNames(moves []api.Move) []string {
	var names []string
	for _, m := range moves {
		names = append(names, "unit/"+m.Unit)
	}
	return names
}

// warnUnplaced explains moves to no worker: the coordinator leaves such a
// unit where it is until some worker can take it.
func warnUnplaced(cmd *cobra.Command, moves []api.Move) {
	n := 0
	for _, m := range moves {
		if m.To == "" {
			n++
		}
	}
	if n > 0 {
		cmd.PrintErrf("Warning: no worker can take %d of these units (TO <none>); they stay where they are until one can\n", n)
	}
}

func newRebalanceHistoryCmd(g *globals) *cobra.Command {
	var output string
	var limit int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Show the rebalance journal, newest first: why each rebalance ran and what it moved",
		Example: `  # The last five rebalances
  kcctl rebalance history --limit 5

  # Every entry in full, with its moves
  kcctl rebalance history -o yaml`,
		Args: cobra.NoArgs,
		PreRunE: func(*cobra.Command, []string) error {
			if limit < 0 {
				return &usageError{fmt.Errorf("--limit %d: use a positive number, or 0 for the whole journal", limit)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			rbs, err := g.client().Rebalances(cmd.Context(), limit)
			if err != nil {
				return err
			}
			if len(rbs) == 0 && isTable(output) {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no rebalances")
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, historyPrintable(rbs, time.Now()))
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "Show only the newest N entries (0: the whole journal)")
	addOutputFlag(cmd, &output)
	return cmd
}

func historyPrintable(rbs []api.Rebalance, now time.Time) printer.Printable {
	t := printer.Table{
		Header:     []string{"GENERATION", "AGE", "TRIGGERS", "MOVES", "DURATION"},
		WideHeader: []string{"LEADER", "UNITS", "WORKERS"},
	}
	var names []string
	for _, rb := range rbs {
		t.Rows = append(t.Rows, []string{rb.Epoch.String(), printer.Age(now.Sub(rb.At)), triggers(rb.Triggers),
			strconv.Itoa(len(rb.Moves)), formatMS(rb.DurationMS)})
		t.WideRows = append(t.WideRows, []string{strconv.FormatUint(rb.Leader, 10), strconv.Itoa(rb.Units), strconv.Itoa(rb.Workers)})
		names = append(names, "rebalance/"+rb.Epoch.String())
	}
	return printer.Printable{Data: rbs, Table: t, Names: names}
}

// triggers keeps a table cell short: the first two, and how many more.
func triggers(ts []string) string {
	switch {
	case len(ts) == 0:
		return "<none>"
	case len(ts) <= 2:
		return strings.Join(ts, "; ")
	}
	return fmt.Sprintf("%s; %s (+%d more)", ts[0], ts[1], len(ts)-2)
}

func formatMS(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	if d < time.Second {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}
