package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// -o wide of the commands that change something: the table's lines, then
// what the change left, as the server reports it right after, in the wide
// table of the matching get command.

// printChange is printResult whose wide form adds after's table. A failure
// to read after is a warning: the change itself is done.
func printChange(cmd *cobra.Command, output, name, verb string, data any, after func(ctx context.Context) (printer.Printable, error)) error {
	if output != "wide" {
		return printResult(cmd, output, name, verb, data)
	}
	if _, err := fmt.Fprintln(cmd.OutOrStdout(), name, verb); err != nil {
		return err
	}
	return printAfter(cmd, after)
}

func printAfter(cmd *cobra.Command, after func(ctx context.Context) (printer.Printable, error)) error {
	p, err := after(cmd.Context())
	if err != nil {
		cmd.PrintErrf("Warning: done, but the state afterwards could not be read: %v\n", err)
		return nil
	}
	return printer.Print(cmd.OutOrStdout(), "wide", p)
}

// statusWait bounds how long the wide form of a change waits for a
// connector created a moment ago to be listed.
const statusWait = 3 * time.Second

// connectorsAfter is get connectors -o wide of names, those that still
// exist.
func connectorsAfter(c *client.Client, names []string) func(context.Context) (printer.Printable, error) {
	return func(ctx context.Context) (printer.Printable, error) {
		var all map[string]api.ConnectorExpanded
		var shown []string
		deadline := time.Now().Add(statusWait)
		for {
			var err error
			if all, err = c.Connectors(ctx); err != nil {
				return printer.Printable{}, err
			}
			shown = shown[:0]
			var missing []string
			for _, n := range names {
				if _, ok := all[n]; ok {
					shown = append(shown, n)
				} else {
					missing = append(missing, n)
				}
			}
			// GET /connectors?expand=status leaves out a connector that has
			// no status yet, as Kafka Connect does: one that exists is
			// looked for again, for a short while.
			if len(missing) == 0 || time.Now().After(deadline) || !anyExists(ctx, c, missing) {
				break
			}
			select {
			case <-ctx.Done():
				return printer.Printable{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
		slices.Sort(shown)
		if len(shown) == 0 {
			return printer.Printable{Table: printer.Table{Rows: [][]string{{"(no connector left)"}}}}, nil
		}
		return connectorsPrintable(shown, all), nil
	}
}

// anyExists tells whether one of names is a connector.
func anyExists(ctx context.Context, c *client.Client, names []string) bool {
	for _, n := range names {
		if _, err := c.Connector(ctx, n); err == nil {
			return true
		}
	}
	return false
}

// workerAfter is worker list -o wide of worker id.
func workerAfter(c *client.Client, id string) func(context.Context) (printer.Printable, error) {
	return func(ctx context.Context) (printer.Printable, error) {
		ws, err := c.Workers(ctx)
		if err != nil {
			return printer.Printable{}, err
		}
		for i, w := range ws {
			if w.ID == id {
				return workersPrintable(ws[i:i+1], time.Now()), nil
			}
		}
		return printer.Printable{Table: printer.Table{Rows: [][]string{{"(worker " + id + " has no session and is not listed)"}}}}, nil
	}
}

// membersAfter is the members table of cluster status -o wide.
func membersAfter(c *client.Client) func(context.Context) (printer.Printable, error) {
	return func(ctx context.Context) (printer.Printable, error) {
		info, err := c.ClusterInfo(ctx)
		if err != nil {
			return printer.Printable{}, err
		}
		return clusterPrintable(info), nil
	}
}

// taskAfter is get tasks -o wide of one task.
func taskAfter(c *client.Client, name string, task int) func(context.Context) (printer.Printable, error) {
	return func(ctx context.Context) (printer.Printable, error) {
		st, err := c.ConnectorStatus(ctx, name)
		if err != nil {
			return printer.Printable{}, err
		}
		for _, tk := range st.Tasks {
			if tk.ID == task {
				return tasksPrintable([]taskRow{{Connector: name, TaskState: tk}}), nil
			}
		}
		return tasksPrintable([]taskRow{{Connector: name, TaskState: api.TaskState{ID: task}}}), nil
	}
}

// loggersAfter is get loggers -o wide of names.
func loggersAfter(c *client.Client, names []string) func(context.Context) (printer.Printable, error) {
	return func(ctx context.Context) (printer.Printable, error) {
		all, err := c.Loggers(ctx)
		if err != nil {
			return printer.Printable{}, err
		}
		return loggersPrintable(names, all, time.Now()), nil
	}
}
