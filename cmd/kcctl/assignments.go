package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/tui/printer"
)

func newAssignmentsCmd(g *globals) *cobra.Command {
	var output, connector string
	cmd := &cobra.Command{
		Use:   "assignments",
		Short: "Show which worker runs each connector and task, and the moves under way",
		Example: `  kcctl assignments
  kcctl assignments --connector orders-source -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := g.client().Assignments(cmd.Context())
			if err != nil {
				return err
			}
			as := []api.AssignmentView{}
			for _, a := range all {
				if connector == "" || a.Connector == connector {
					as = append(as, a)
				}
			}
			if len(as) == 0 && connector != "" {
				// A name with no units: is there such a connector at all?
				sts, err := g.client().Statuses(cmd.Context())
				if err != nil {
					return err
				}
				if _, ok := sts[connector]; !ok {
					return &notFoundError{fmt.Errorf("no connector %q (it has no assignments and the cluster does not know it)", connector)}
				}
			}
			if len(as) == 0 && isTable(output) {
				msg := "no assignments"
				if connector != "" {
					msg += " of connector " + connector
				}
				_, err := fmt.Fprintln(cmd.OutOrStdout(), msg)
				return err
			}
			var ws []api.WorkerView
			if output == "wide" {
				if ws, err = g.client().Workers(cmd.Context()); err != nil {
					return err
				}
			}
			return printer.Print(cmd.OutOrStdout(), output, assignmentsPrintable(as, ws))
		},
	}
	cmd.Flags().StringVar(&connector, "connector", "", "Only the units of this connector")
	addOutputFlag(cmd, &output)
	return cmd
}

// assignmentsPrintable lists as; ws, the workers, give -o wide each
// worker's state and node.
func assignmentsPrintable(as []api.AssignmentView, ws []api.WorkerView) printer.Printable {
	t := printer.Table{Header: []string{"UNIT", "WORKER", "EPOCH", "REVOKING-TO"}, WideHeader: []string{"WORKER-STATE", "NODE"}}
	byID := map[string]api.WorkerView{}
	for _, w := range ws {
		byID[w.ID] = w
	}
	var names []string
	for _, a := range as {
		task := -1
		if a.Task != nil {
			task = *a.Task
		}
		unit := api.UnitName(a.Connector, task)
		t.Rows = append(t.Rows, []string{unit, a.Worker, a.Epoch.String(), orNone(a.RevokingTo)})
		state, node := "<unknown>", "<unknown>"
		if w, ok := byID[a.Worker]; ok {
			state, node = orNone(w.State), strconv.FormatUint(w.NodeID, 10)
		}
		t.WideRows = append(t.WideRows, []string{state, node})
		names = append(names, "unit/"+unit)
	}
	return printer.Printable{Data: as, Table: t, Names: names}
}
