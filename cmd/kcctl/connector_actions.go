package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// The verbs that change connectors: delete, pause, resume, stop, restart.

// actionResult is what a change did to one connector, in -o json|yaml.
type actionResult struct {
	Connector string `json:"connector"`
	Result    string `json:"result,omitempty"`
	Error     string `json:"error,omitempty"`
	// Data is what the server answered, for verbs that answer something
	// (patch: the config; offsets: the server's message).
	Data any `json:"data,omitempty"`
}

// bulkFlags select the connectors a bulk verb acts on: names, or -e.
type bulkFlags struct {
	regex  string
	output string
}

func (f *bulkFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.regex, "regex", "e", "", "Act on every connector whose name matches this regular expression")
	addOutputFlag(cmd, &f.output)
}

// single tells whether the user named one connector (no -e): verbs that
// answer something then print that alone, as before -e existed.
func (f *bulkFlags) single(args []string) bool { return f.regex == "" && len(args) == 1 }

// targets are the connectors named in args or matched by -e; -e matching
// none is a not found error (exit 3).
func (f *bulkFlags) targets(ctx context.Context, c *client.Client, args []string) ([]string, error) {
	switch {
	case f.regex != "" && len(args) > 0:
		return nil, &usageError{errors.New("give connector names or -e REGEX, not both")}
	case f.regex == "" && len(args) == 0:
		return nil, &usageError{errors.New("give connector names or -e REGEX")}
	case f.regex == "":
		return args, nil
	}
	re, err := regexp.Compile(f.regex)
	if err != nil {
		return nil, &usageError{fmt.Errorf("-e %q is not a regular expression: %w", f.regex, err)}
	}
	names, err := c.ConnectorNames(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if re.MatchString(n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return nil, &notFoundError{fmt.Errorf("no connector matches -e %q: 'kcctl get connectors' lists them", f.regex)}
	}
	slices.Sort(out)
	return out, nil
}

// bulkDo acts on one connector and says what it did: the result to print
// ("paused") and what the server answered (nil: nothing to show).
type bulkDo func(ctx context.Context, c *client.Client, name string) (result string, data any, err error)

// runBulk applies do to each target and reports per connector: "connector/x
// paused" on stdout, failures on stderr as they come. A connector that does
// not exist makes the command exit 3 when no other error happened.
func runBulk(cmd *cobra.Command, g *globals, f *bulkFlags, args []string, verb string, do func(ctx context.Context, c *client.Client, name string) error) error {
	return runBulkEach(cmd, g, f, args, "connector", verb, func(ctx context.Context, c *client.Client, n string) (string, any, error) {
		return verb, nil, do(ctx, c, n)
	})
}

// runBulkEach is runBulk for verbs whose results differ per connector; kind
// names what changed in the output (connector/x, offsets/x). For one named
// connector -o json|yaml prints the server's answer alone.
func runBulkEach(cmd *cobra.Command, g *globals, f *bulkFlags, args []string, kind, verb string, do bulkDo) error {
	c := g.client()
	names, err := f.targets(cmd.Context(), c, args)
	if err != nil {
		return err
	}
	var results []actionResult
	var done []string
	failed, notFound := 0, 0
	for _, n := range names {
		res, data, err := do(cmd.Context(), c, n)
		if err = connectorNotFound(n, err); err != nil {
			var nf *notFoundError
			if errors.As(err, &nf) {
				notFound++
			} else {
				failed++
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Error: %s/%s: %v\n", kind, n, err)
			results = append(results, actionResult{Connector: n, Error: err.Error()})
			continue
		}
		results = append(results, actionResult{Connector: n, Result: res, Data: data})
		done = append(done, kind+"/"+n)
		if isTable(f.output) {
			fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", kind, n, res)
		}
	}
	if f.output == "wide" {
		// What the change left: the connectors as get connectors -o wide
		// shows them (a pause or stop takes a moment to show).
		if err := printAfter(cmd, connectorsAfter(c, names)); err != nil {
			return err
		}
	} else if f.output != "table" {
		p := printer.Printable{Data: results, Names: done}
		if f.single(args) && len(results) == 1 && results[0].Data != nil {
			p.Data = results[0].Data
		}
		if err := printer.Print(cmd.OutOrStdout(), f.output, p); err != nil {
			return err
		}
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d connectors not %s", failed+notFound, len(names), verb)
	case notFound > 0:
		return &notFoundError{fmt.Errorf("%d of %d connectors not found: 'kcctl get connectors' lists them", notFound, len(names))}
	}
	return nil
}

// newBulkVerb is `kcctl VERB connector NAME...|-e REGEX`.
func newBulkVerb(g *globals, verb, short, done, long string, do func(ctx context.Context, c *client.Client, name string) error) *cobra.Command {
	var f bulkFlags
	sub := &cobra.Command{
		Use:               "connector NAME...|-e REGEX",
		Aliases:           []string{"connectors", "conn"},
		Short:             short,
		Long:              long,
		Example:           fmt.Sprintf("  kcctl %s connector orders-sink\n  # Every connector whose name starts with orders-\n  kcctl %s connector -e '^orders-'", verb, verb),
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBulk(cmd, g, &f, args, done, do)
		},
	}
	f.add(sub)
	cmd := &cobra.Command{Use: verb, Short: short}
	cmd.AddCommand(sub)
	return cmd
}

func newDeleteCmd(g *globals) *cobra.Command {
	cmd := newBulkVerb(g, "delete", "Delete connectors", "deleted",
		`Delete the named connectors, or those -e matches. Their tasks stop; their
offsets stay (Kafka Connect's behaviour).`,
		func(ctx context.Context, c *client.Client, n string) error { return c.DeleteConnector(ctx, n) })
	cmd.Short = "Delete connectors, or a connector's offsets"
	cmd.AddCommand(newDeleteOffsetsCmd(g))
	return cmd
}

func newPauseCmd(g *globals) *cobra.Command {
	return newBulkVerb(g, "pause", "Pause connectors: they and their tasks stop processing, and keep their place", "paused",
		`Pause the named connectors, or those -e matches. 'kcctl resume' resumes them.`,
		func(ctx context.Context, c *client.Client, n string) error { return c.PauseConnector(ctx, n) })
}

func newResumeCmd(g *globals) *cobra.Command {
	return newBulkVerb(g, "resume", "Resume paused or stopped connectors", "resumed",
		`Resume the named connectors, or those -e matches.`,
		func(ctx context.Context, c *client.Client, n string) error { return c.ResumeConnector(ctx, n) })
}

func newStopCmd(g *globals) *cobra.Command {
	return newBulkVerb(g, "stop", "Stop connectors: their tasks are shut down, their config kept", "stopped",
		`Stop the named connectors, or those -e matches: the connector and its
tasks are shut down and the task configs removed; the config stays, and the
offsets can then be changed. 'kcctl resume' starts them again.`,
		func(ctx context.Context, c *client.Client, n string) error { return c.StopConnector(ctx, n) })
}

func newRestartCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "restart", Short: "Restart connectors or tasks"}
	var tasks string
	restart := newBulkVerb(g, "restart", "Restart connectors, and with --tasks their tasks", "restarted",
		`Restart the named connectors, or those -e matches. --tasks all restarts
their tasks too; --tasks failed restarts only the failed connector instances
and tasks.`,
		func(ctx context.Context, c *client.Client, n string) error {
			_, err := c.RestartConnector(ctx, n, tasks != "", tasks == "failed")
			return err
		}).Commands()[0]
	restart.Flags().StringVar(&tasks, "tasks", "", "Restart the tasks too: all, or failed (only failed instances)")
	_ = restart.RegisterFlagCompletionFunc("tasks", cobra.FixedCompletions([]string{"all", "failed"}, cobra.ShellCompDirectiveNoFileComp))
	prev := restart.PreRunE
	restart.PreRunE = func(c *cobra.Command, args []string) error {
		if tasks != "" && tasks != "all" && tasks != "failed" {
			return &usageError{fmt.Errorf("--tasks %q: use all or failed", tasks)}
		}
		return prev(c, args)
	}
	restart.Example = "  kcctl restart connector orders-sink --tasks failed\n  kcctl restart connector -e '^orders-' --tasks all"
	cmd.AddCommand(restart, newRestartTaskCmd(g))
	return cmd
}

func newRestartTaskCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "task CONNECTOR/N",
		Aliases: []string{"tasks"},
		Short:   "Restart one task of a connector",
		Example: "  kcctl restart task orders-sink/0",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			i := strings.LastIndex(args[0], "/")
			if i <= 0 {
				return &usageError{fmt.Errorf("%q: name the task as CONNECTOR/N, e.g. orders-sink/0", args[0])}
			}
			name := args[0][:i]
			n, err := strconv.Atoi(args[0][i+1:])
			if err != nil || n < 0 {
				return &usageError{fmt.Errorf("%q: the task number after / must be 0 or more", args[0])}
			}
			c := g.client()
			if err := c.RestartTask(cmd.Context(), name, n); err != nil {
				var apiErr *client.APIError
				if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
					if _, cerr := c.Connector(cmd.Context(), name); cerr != nil {
						return connectorNotFound(name, cerr)
					}
					return &notFoundError{fmt.Errorf("task %d of connector %q not found: 'kcctl get tasks %s' lists them", n, name, name)}
				}
				return err
			}
			return printChange(cmd, output, "task/"+name+"/"+strconv.Itoa(n), "restarted",
				actionResult{Connector: name, Result: "task " + strconv.Itoa(n) + " restarted"}, taskAfter(c, name, n))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
