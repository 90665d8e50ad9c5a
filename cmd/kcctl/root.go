package main

import (
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// defaultServer is where kcctl looks for kcd when nothing else is said.
const defaultServer = "http://127.0.0.1:8083"

// globals are the settings every command shares.
type globals struct {
	server                        string
	token, user, passwordFile     string
	caFile, clientCert, clientKey string
	context                       string
	requestTimeout                time.Duration
	// conn is what the flags, environment and context resolve to, set
	// before a command runs (resolved says so).
	conn     connection
	resolved bool
	flags    *pflag.FlagSet // the root's persistent flags
}

func (g *globals) client() *client.Client {
	if !g.resolved {
		// Shell completion parses flags after the root's pre-run: resolve
		// now, falling back to --server alone.
		g.resolved = true
		if conn, err := resolveConnection(g.flags, g); err == nil {
			g.conn = conn
		} else {
			if servers, err := normalizeServers(g.server, false); err == nil {
				g.conn.server, g.conn.opts.Fallbacks = servers[0], servers[1:]
			}
		}
		g.conn.opts.Timeout = g.requestTimeout
	}
	return client.NewWithOptions(g.conn.server, g.conn.opts)
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	cmd, _ := newRoot(stdout, stderr)
	return cmd
}

// newRoot returns kcctl's root command and the settings its commands share.
func newRoot(stdout, stderr io.Writer) (*cobra.Command, *globals) {
	g := &globals{conn: connection{creds: "none"}}
	cmd := &cobra.Command{
		Use:   "kcctl",
		Short: "kcctl operates kcd and Kafka Connect clusters",
		Long: `kcctl is the operator's tool for kcd: kubectl-style commands over the REST
API. The server is taken from --server, else KCCTL_SERVER, else the
context's server, else ` + defaultServer + `.

Credentials: --token, or --user with --password-file; else KCCTL_TOKEN, or
KCCTL_USER with KCCTL_PASSWORD; else the context's (token, or user with
password-file). TLS: --ca-file, --client-cert, --client-key, else the
context's. Contexts live in $KCCTL_CONFIG or ~/.config/kcctl/config.yaml:

  current-context: prod
  contexts:
    - name: prod
      server: https://kcd-1.example.com:8083
      user: alice
      password-file: ~/.config/kcctl/prod.password
      ca-file: ca.pem`,
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
	pf := cmd.PersistentFlags()
	pf.StringVar(&g.server, "server", server, "URL or host:port of a kcd node's REST API, or several comma-separated, tried in turn (env KCCTL_SERVER; else the context's server)")
	pf.StringVar(&g.token, "token", "", "Bearer token to authenticate with (env KCCTL_TOKEN)")
	pf.StringVar(&g.user, "user", "", "User to authenticate as with HTTP basic (env KCCTL_USER)")
	pf.StringVar(&g.passwordFile, "password-file", "", "File holding the user's password (env KCCTL_PASSWORD holds the password itself)")
	pf.StringVar(&g.caFile, "ca-file", "", "PEM CA certificates to verify the server's certificate with (default: the system's)")
	pf.StringVar(&g.clientCert, "client-cert", "", "PEM client certificate for mutual TLS")
	pf.StringVar(&g.clientKey, "client-key", "", "PEM private key of --client-cert")
	pf.StringVar(&g.context, "context", "", "Context of the config file to use ($KCCTL_CONFIG or ~/.config/kcctl/config.yaml; default: its current-context)")
	pf.DurationVar(&g.requestTimeout, "request-timeout", 30*time.Second, "How long to wait for each request's answer")
	g.flags = pf
	cmd.PersistentPreRunE = func(c *cobra.Command, _ []string) error {
		if c.Name() == cobra.ShellCompRequestCmd || c.Name() == cobra.ShellCompNoDescRequestCmd {
			return nil // flags are parsed later; client resolves then
		}
		conn, err := resolveConnection(pf, g)
		if err != nil {
			return err
		}
		g.conn, g.resolved = conn, true
		return nil
	}

	cmd.AddCommand(newVersionCmd(g), newClusterCmd(g), newWorkerCmd(g), newRebalanceCmd(g), newAssignmentsCmd(g), newStoreCmd(g), newMigrateCmd(g), newAuthCmd(), newConfigCmd(g))
	cmd.AddCommand(connectorVerbs(g)...)
	cmd.AddCommand(newTopCmd(g))
	usageArgs(cmd)
	return cmd, g
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
