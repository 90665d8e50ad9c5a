package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// The read verbs over Kafka Connect's connector API: get connectors, tasks
// and plugins, describe connector.

func newGetCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get",
		Short: "List connectors, tasks, plugins, offsets, workers, members or loggers",
	}
	cmd.AddCommand(newGetConnectorsCmd(g), newGetTasksCmd(g), newGetPluginsCmd(g))
	cmd.AddCommand(newGetOffsetsCmd(g), newGetWorkersCmd(g), newGetMembersCmd(g))
	cmd.AddCommand(newGetLoggersCmd(g)) // loggers.go
	return cmd
}

// connectorNotFound turns the API's 404 for connector name into kcctl's not
// found error; other errors pass as they are.
func connectorNotFound(name string, err error) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return &notFoundError{fmt.Errorf("connector %q not found: 'kcctl get connectors' lists them", name)}
	}
	return err
}

// connectorCompletions offers the names of the connectors.
func connectorCompletions(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		names, err := g.client().ConnectorNames(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

func newGetConnectorsCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "connectors [NAME...]",
		Aliases: []string{"connector", "conn"},
		Short:   "List connectors: type, state, running tasks, worker",
		Long: `List the connectors, or the named ones: type, state, tasks running of
all, the worker that runs the connector. -o wide adds the class and topics;
-o json|yaml prints each connector's status and info as GET
/connectors?expand=status&expand=info answers them.`,
		Example: `  kcctl get connectors
  kcctl get connectors orders-sink -o yaml`,
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			all, err := g.client().Connectors(cmd.Context())
			if err != nil {
				return err
			}
			names := args
			if len(names) == 0 {
				for n := range all {
					names = append(names, n)
				}
				slices.Sort(names)
			}
			shown := make(map[string]api.ConnectorExpanded, len(names))
			for _, n := range names {
				c, ok := all[n]
				if !ok {
					return connectorNotFound(n, &client.APIError{Status: http.StatusNotFound})
				}
				shown[n] = c
			}
			if len(names) == 0 && isTable(output) {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no connectors")
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, connectorsPrintable(names, shown))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func connectorsPrintable(names []string, cs map[string]api.ConnectorExpanded) printer.Printable {
	t := printer.Table{
		Header:     []string{"NAME", "TYPE", "STATE", "TASKS", "WORKER"},
		WideHeader: []string{"CLASS", "TOPICS"},
	}
	var out []string
	for _, n := range names {
		c := cs[n]
		running := 0
		for _, tk := range c.Status.Tasks {
			if tk.State == "RUNNING" {
				running++
			}
		}
		typ := c.Status.Type
		if typ == "" {
			typ = c.Info.Type
		}
		t.Rows = append(t.Rows, []string{n, orNone(string(typ)), orNone(c.Status.Connector.State),
			fmt.Sprintf("%d/%d", running, len(c.Status.Tasks)), orNone(c.Status.Connector.WorkerID)})
		topics := c.Info.Config["topic"]
		for _, k := range []string{"topics", "topics.regex", "kafka.topic"} {
			if v := c.Info.Config[k]; v != "" && topics == "" {
				topics = v
			}
		}
		t.WideRows = append(t.WideRows, []string{orNone(c.Info.Config["connector.class"]), orNone(topics)})
		out = append(out, "connector/"+n)
	}
	return printer.Printable{Data: cs, Table: t, Names: out}
}

// taskRow is one task in get tasks' json and yaml.
type taskRow struct {
	Connector string `json:"connector"`
	api.TaskState
}

func newGetTasksCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "tasks [CONNECTOR]",
		Aliases: []string{"task"},
		Short:   "List tasks: state and worker, of all connectors or of one",
		Long: `List the tasks of every connector, or of the one named: state and the
worker that runs it. -o wide adds the first line of a failed task's trace.`,
		Example: `  kcctl get tasks
  kcctl get tasks orders-sink -o wide`,
		Args:              cobra.MaximumNArgs(1),
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			var statuses []api.ConnectorStateInfo
			if len(args) == 1 {
				st, err := c.ConnectorStatus(cmd.Context(), args[0])
				if err != nil {
					return connectorNotFound(args[0], err)
				}
				statuses = append(statuses, st)
			} else {
				all, err := c.Statuses(cmd.Context())
				if err != nil {
					return err
				}
				for _, st := range all {
					statuses = append(statuses, st)
				}
				slices.SortFunc(statuses, func(a, b api.ConnectorStateInfo) int { return strings.Compare(a.Name, b.Name) })
			}
			var rows []taskRow
			for _, st := range statuses {
				for _, tk := range st.Tasks {
					rows = append(rows, taskRow{Connector: st.Name, TaskState: tk})
				}
			}
			if len(rows) == 0 && isTable(output) {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no tasks")
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, tasksPrintable(rows))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func tasksPrintable(rows []taskRow) printer.Printable {
	t := printer.Table{
		Header:     []string{"CONNECTOR", "TASK", "STATE", "WORKER"},
		WideHeader: []string{"TRACE"},
	}
	names := []string{}
	for _, r := range rows {
		t.Rows = append(t.Rows, []string{r.Connector, strconv.Itoa(r.ID), orNone(r.State), orNone(r.WorkerID)})
		t.WideRows = append(t.WideRows, []string{orNone(firstLine(r.Trace))})
		names = append(names, "task/"+r.Connector+"/"+strconv.Itoa(r.ID))
	}
	if rows == nil {
		rows = []taskRow{}
	}
	return printer.Printable{Data: rows, Table: t, Names: names}
}

// firstLine is s up to its first line break.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return strings.TrimSpace(line)
}

func newGetPluginsCmd(g *globals) *cobra.Command {
	var output string
	var all bool
	cmd := &cobra.Command{
		Use:     "plugins",
		Aliases: []string{"plugin", "connector-plugins"},
		Short:   "List the installed connector plugins (--all: converters, transforms, predicates too)",
		Long: `List the installed plugins: class, type, version. -o wide adds the short
name, which connector.class accepts as well as the class.`,
		Example: `  kcctl get plugins
  kcctl get plugins --all -o wide`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := g.client().Plugins(cmd.Context(), !all)
			if err != nil {
				return err
			}
			t := printer.Table{Header: []string{"CLASS", "TYPE", "VERSION"}, WideHeader: []string{"ALIAS"}}
			var names []string
			for _, p := range ps {
				t.Rows = append(t.Rows, []string{p.Class, string(p.Type), orNone(p.Version)})
				t.WideRows = append(t.WideRows, []string{p.Class[strings.LastIndex(p.Class, ".")+1:]})
				names = append(names, "plugin/"+p.Class)
			}
			return printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: ps, Table: t, Names: names})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "Also list converters, header converters, transformations and predicates")
	addOutputFlag(cmd, &output)
	return cmd
}

func newDescribeCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe",
		Short: "Show a connector in detail",
	}
	cmd.AddCommand(newDescribeConnectorCmd(g))
	return cmd
}

// connectorDetail is what describe connector prints with -o json|yaml.
type connectorDetail struct {
	Name    string                 `json:"name"`
	Type    string                 `json:"type"`
	Config  map[string]string      `json:"config"`
	Status  api.ConnectorStateInfo `json:"status"`
	Offsets *api.ConnectorOffsets  `json:"offsets,omitempty"`
	// OffsetsError says why the offsets could not be read.
	OffsetsError string `json:"offsets_error,omitempty"`
	// Rebalances are the latest rebalances that moved the connector or
	// one of its tasks, newest first (describe_rebalances.go).
	Rebalances []connectorRebalance `json:"rebalances"`
	// RebalancesError says why they could not be read (a Kafka Connect
	// server has no journal).
	RebalancesError string `json:"rebalances_error,omitempty"`
}

func newDescribeConnectorCmd(g *globals) *cobra.Command {
	var f bulkFlags
	cmd := &cobra.Command{
		Use:     "connector NAME...|-e REGEX",
		Aliases: []string{"connectors", "conn"},
		Short:   "Show connectors: config, status, tasks with their traces, offsets, rebalances",
		Long: `Show a connector: its config (secrets as stored: a ${provider:path:key}
reference stays a reference), its status and its tasks' with the first line
of each trace (-o wide: the whole trace), its offsets, and the latest
rebalances that moved it or its tasks (kcd's journal, GET
/kcd/v1/rebalances): when, why, which unit from which worker to which
(-o wide: the time and generation too). Several names, or -e REGEX, show
each connector in turn; -o json|yaml then prints a list.`,
		Example: `  kcctl describe connector orders-sink
  kcctl describe connector orders-sink -o wide   # whole traces
  kcctl describe connector -e '^orders-'`,
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			names, err := f.targets(cmd.Context(), c, args)
			if err != nil {
				return err
			}
			var ds []connectorDetail
			var out []string
			for _, name := range names {
				d, err := describeOne(cmd.Context(), c, name)
				if err != nil {
					return err
				}
				ds = append(ds, d)
				out = append(out, "connector/"+name)
			}
			if isTable(f.output) {
				for i, d := range ds {
					if i > 0 {
						fmt.Fprintln(cmd.OutOrStdout())
					}
					if err := describeConnector(cmd.OutOrStdout(), d, f.output == "wide"); err != nil {
						return err
					}
				}
				return nil
			}
			p := printer.Printable{Data: ds, Names: out}
			if f.single(args) {
				p.Data = ds[0]
			}
			return printer.Print(cmd.OutOrStdout(), f.output, p)
		},
	}
	f.add(cmd)
	return cmd
}

// describeOne reads what describe connector shows of connector name.
func describeOne(ctx context.Context, c *client.Client, name string) (connectorDetail, error) {
	info, err := c.Connector(ctx, name)
	if err != nil {
		return connectorDetail{}, connectorNotFound(name, err)
	}
	st, err := c.ConnectorStatus(ctx, name)
	if err != nil {
		return connectorDetail{}, connectorNotFound(name, err)
	}
	d := connectorDetail{Name: name, Type: string(info.Type), Config: info.Config, Status: st}
	if offs, err := c.ConnectorOffsets(ctx, name); err != nil {
		d.OffsetsError = err.Error()
	} else {
		d.Offsets = &offs
	}
	d.Rebalances, d.RebalancesError = rebalancesOf(ctx, c, name)
	return d, nil
}

// describeConnector writes d for people, kubectl describe style.
func describeConnector(w io.Writer, d connectorDetail, wide bool) error {
	trace := func(s string) string {
		if wide {
			return strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
		}
		return firstLine(s)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Name:    %s\n", d.Name)
	fmt.Fprintf(&b, "Type:    %s\n", orNone(d.Type))
	fmt.Fprintf(&b, "Class:   %s\n", orNone(d.Config["connector.class"]))
	fmt.Fprintf(&b, "State:   %s\n", orNone(d.Status.Connector.State))
	fmt.Fprintf(&b, "Worker:  %s\n", orNone(d.Status.Connector.WorkerID))
	if d.Status.Connector.Trace != "" {
		fmt.Fprintf(&b, "Trace:   %s\n", trace(d.Status.Connector.Trace))
	}
	b.WriteString("Config:\n")
	keys := make([]string, 0, len(d.Config))
	for k := range d.Config {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s=%s\n", k, d.Config[k])
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if _, err := fmt.Fprintf(w, "Tasks:\n"); err != nil {
		return err
	}
	if len(d.Status.Tasks) == 0 {
		fmt.Fprintln(w, "  <none>")
	} else {
		t := printer.Table{Header: []string{"  ID", "STATE", "WORKER"}}
		for _, tk := range d.Status.Tasks {
			t.Rows = append(t.Rows, []string{"  " + strconv.Itoa(tk.ID), orNone(tk.State), orNone(tk.WorkerID)})
		}
		if err := printer.Print(w, "table", printer.Printable{Table: t}); err != nil {
			return err
		}
		for _, tk := range d.Status.Tasks {
			if tk.Trace != "" {
				fmt.Fprintf(w, "  Task %d trace:\n    %s\n", tk.ID, trace(tk.Trace))
			}
		}
	}
	fmt.Fprintln(w, "Offsets:")
	switch {
	case d.Offsets == nil:
		fmt.Fprintf(w, "  <unknown: %s>\n", d.OffsetsError)
	case len(d.Offsets.Offsets) == 0:
		fmt.Fprintln(w, "  <none>")
	default:
		for _, o := range d.Offsets.Offsets {
			fmt.Fprintf(w, "  %s => %s\n", compactJSON(o.Partition), compactJSON(o.Offset))
		}
	}
	return describeRebalances(w, d, wide, time.Now())
}

// compactJSON is v as one line of JSON.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// connectorVerbs are the verbs over connectors that the root adds.
func connectorVerbs(g *globals) []*cobra.Command {
	return []*cobra.Command{newGetCmd(g), newDescribeCmd(g), newDeleteCmd(g), newPauseCmd(g), newResumeCmd(g), newStopCmd(g), newRestartCmd(g), newApplyCmd(g), newPatchCmd(g), newSetCmd(g)}
}
