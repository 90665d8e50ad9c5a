package main

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// The verbs over the loggers (Kafka Connect's /admin/loggers): get loggers,
// get logger NAME, set logger NAME LEVEL.

// loggerNotFound turns the API's 404 for logger name into kcctl's not found
// error; other errors pass as they are.
func loggerNotFound(name string, err error) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return &notFoundError{fmt.Errorf("logger %q not found: 'kcctl get loggers' lists them", name)}
	}
	return err
}

// loggerCompletions offers the names of the server's loggers.
func loggerCompletions(g *globals) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if cmd.Name() == "logger" && len(args) == 1 {
			return api.LogLevels, cobra.ShellCompDirectiveNoFileComp // set logger NAME LEVEL
		}
		ls, err := g.client().Loggers(cmd.Context())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return loggerNames(ls), cobra.ShellCompDirectiveNoFileComp
	}
}

// loggerNames are the names of ls, root first, the others sorted.
func loggerNames(ls map[string]api.LoggerLevel) []string {
	names := make([]string, 0, len(ls))
	for n := range ls {
		if n != api.RootLogger {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	if _, ok := ls[api.RootLogger]; ok {
		names = append([]string{api.RootLogger}, names...)
	}
	return names
}

func newGetLoggersCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "loggers [NAME...]",
		Aliases: []string{"logger"},
		Short:   "List the loggers and their levels, or the named ones",
		Long: `List the server's loggers (GET /admin/loggers) and their levels, or the
named ones (GET /admin/loggers/NAME): on kcd, root and one logger per
subsystem (coordinator, member, herder, worker, connector, raft, rest, ...);
on Kafka Connect, its log4j loggers. MODIFIED is how long ago the level was
set through the API (<never>: the start-up level); -o wide adds the time.`,
		Example: `  kcctl get loggers
  kcctl get logger coordinator -o json`,
		ValidArgsFunction: loggerCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			ls := map[string]api.LoggerLevel{}
			if len(args) == 0 {
				all, err := c.Loggers(cmd.Context())
				if err != nil {
					return err
				}
				ls = all
			}
			for _, n := range args {
				l, err := c.Logger(cmd.Context(), n)
				if err != nil {
					return loggerNotFound(n, err)
				}
				ls[n] = l
			}
			names := args
			if len(names) == 0 {
				names = loggerNames(ls)
			}
			return printer.Print(cmd.OutOrStdout(), output, loggersPrintable(names, ls, time.Now()))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

func loggersPrintable(names []string, ls map[string]api.LoggerLevel, now time.Time) printer.Printable {
	t := printer.Table{Header: []string{"NAME", "LEVEL", "MODIFIED"}, WideHeader: []string{"MODIFIED-AT"}}
	out := make([]string, 0, len(names))
	for _, n := range names {
		l := ls[n]
		age, at := "<never>", "<never>"
		if l.LastModified != nil {
			m := time.UnixMilli(*l.LastModified)
			age, at = printer.Age(now.Sub(m)), m.UTC().Format(time.RFC3339)
		}
		t.Rows = append(t.Rows, []string{n, orNone(l.Level), age})
		t.WideRows = append(t.WideRows, []string{at})
		out = append(out, "logger/"+n)
	}
	return printer.Printable{Data: ls, Table: t, Names: out}
}

// loggerSet is what set logger did, in -o json|yaml.
type loggerSet struct {
	Logger string `json:"logger"`
	Level  string `json:"level"`
	Scope  string `json:"scope"`
	// Changed are the loggers the node changed (scope worker): the one
	// named, or every logger for root.
	Changed []string `json:"changed,omitempty"`
}

// where says where a level set with scope applies.
func where(scope string) string {
	if scope == api.ScopeCluster {
		return " on every node"
	}
	return " on this node"
}

func newSetCmd(g *globals) *cobra.Command {
	var output, scope string
	sub := &cobra.Command{
		Use:     "logger NAME LEVEL",
		Aliases: []string{"loggers"},
		Short:   "Set a logger's level on the node called, or with --scope cluster on every node",
		Long: `Set a logger's level (PUT /admin/loggers/NAME): TRACE, DEBUG, INFO, WARN,
ERROR, FATAL or OFF, in any case. --scope worker (the default) sets it on
the node kcctl calls only, until it restarts; --scope cluster on every node,
and on those that join later (kcd stores it). Setting root sets every
logger. On kcd, TRACE logs as DEBUG (kcd writes nothing finer) and FATAL
silences everything but what kcd never writes.`,
		Example: `  kcctl set logger coordinator DEBUG
  kcctl set logger root INFO --scope cluster`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: loggerCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			level, err := api.ParseLogLevel(args[1])
			if err != nil {
				return &usageError{err}
			}
			if scope != api.ScopeWorker && scope != api.ScopeCluster {
				return &usageError{fmt.Errorf("--scope %q: use worker or cluster", scope)}
			}
			changed, err := g.client().SetLogger(cmd.Context(), name, level, scope)
			if err != nil {
				return loggerNotFound(name, err)
			}
			res := loggerSet{Logger: name, Level: level, Scope: scope, Changed: changed}
			var names []string
			for _, n := range changed {
				names = append(names, "logger/"+n)
			}
			if scope == api.ScopeCluster {
				names = []string{"logger/" + name}
			}
			switch output {
			case "table":
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "logger/%s set to %s%s\n", name, level, where(scope))
				return err
			case "wide":
				// The loggers the level reached, as get loggers -o wide
				// shows them on the node called (wide.go).
				var changedNames []string
				for _, n := range names {
					changedNames = append(changedNames, strings.TrimPrefix(n, "logger/"))
				}
				return printChange(cmd, output, "logger/"+name, "set to "+level+where(scope), res, loggersAfter(g.client(), changedNames))
			}
			return printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: res, Names: names})
		},
	}
	sub.Flags().StringVar(&scope, "scope", api.ScopeWorker, "Where the level applies: worker (the node called) or cluster (every node)")
	_ = sub.RegisterFlagCompletionFunc("scope", cobra.FixedCompletions([]string{api.ScopeWorker, api.ScopeCluster}, cobra.ShellCompDirectiveNoFileComp))
	addOutputFlag(sub, &output)
	cmd := &cobra.Command{Use: "set", Short: "Set a logger's level"}
	cmd.AddCommand(sub)
	return cmd
}
