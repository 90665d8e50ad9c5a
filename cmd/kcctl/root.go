package main

import (
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// defaultServer is where kcctl looks for kcd when nothing else is said.
const defaultServer = "http://127.0.0.1:8083"

// globals are the settings every command shares.
type globals struct {
	server string
}

func (g *globals) client() *client.Client { return client.New(g.server) }

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	g := &globals{}
	cmd := &cobra.Command{
		Use:   "kcctl",
		Short: "kcctl operates kcd and Kafka Connect clusters",
		Long: `kcctl is the operator's tool for kcd: kubectl-style commands over the REST
API. The server is taken from --server, else KCCTL_SERVER, else ` + defaultServer + `.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.SetOut(stdout)
	cmd.SetErr(stderr)
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })

	server := os.Getenv("KCCTL_SERVER")
	if server == "" {
		server = defaultServer
	}
	cmd.PersistentFlags().StringVar(&g.server, "server", server, "URL of a kcd node's REST API (env KCCTL_SERVER)")

	cmd.AddCommand(newVersionCmd(g), newClusterCmd(g), newWorkerCmd(g), newRebalanceCmd(g), newAssignmentsCmd(g), newStoreCmd(g), newMigrateCmd(g))
	usageArgs(cmd)
	return cmd
}

// usageArgs makes the argument checks of cmd and its subcommands report
// usage errors (exit 2), as flag errors do. A group of commands (kcctl
// worker) prints its help, and refuses an unknown subcommand.
func usageArgs(cmd *cobra.Command) {
	if cmd.HasParent() && !cmd.Runnable() && cmd.HasSubCommands() {
		cmd.Args = cobra.NoArgs
		cmd.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
	}
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil {
				return &usageError{err}
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

// addOutputFlag adds -o/--output to cmd and checks its value before the
// command runs.
func addOutputFlag(cmd *cobra.Command, dst *string) {
	cmd.Flags().StringVarP(dst, "output", "o", "table", "Output format: table, wide, json, yaml or name")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(printer.Formats, cobra.ShellCompDirectiveNoFileComp))
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := printer.ValidateFormat(*dst); err != nil {
			return &usageError{err}
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}
