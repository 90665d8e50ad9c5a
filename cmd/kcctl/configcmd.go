package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/tui/printer"
)

// newConfigCmd is kcctl config: the contexts of kcctl's config file.
func newConfigCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Manage the contexts of kcctl's config file ($KCCTL_CONFIG or ~/.config/kcctl/config.yaml)",
		// The file is what these commands manage: they resolve no
		// connection (a broken current context must not stop its repair).
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
	}
	cmd.AddCommand(newGetContextsCmd(), newCurrentContextCmd(), newUseContextCmd(), newSetContextCmd(g), newDeleteContextCmd())
	return cmd
}

func newGetContextsCmd() *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get-contexts",
		Short: "List the contexts; the current one is marked *",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, _, err := readConfig()
			if err != nil {
				return err
			}
			return printer.Print(cmd.OutOrStdout(), output, contextsPrintable(cfg))
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// contextView is a context as get-contexts shows it: how it authenticates,
// never with what.
type contextView struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
	Server  string `json:"server,omitempty"`
	Auth    string `json:"auth"`
	CAFile  string `json:"ca-file,omitempty"`
}

func contextsPrintable(cfg kcctlConfig) printer.Printable {
	t := printer.Table{Header: []string{"CURRENT", "NAME", "SERVER", "AUTH"}, WideHeader: []string{"CA-FILE", "CLIENT-CERT"}}
	views := []contextView{}
	var names []string
	for _, c := range cfg.Contexts {
		v := contextView{Name: c.Name, Current: c.Name == cfg.CurrentContext, Server: c.Server, Auth: authOf(c), CAFile: c.CAFile}
		views = append(views, v)
		mark := ""
		if v.Current {
			mark = "*"
		}
		t.Rows = append(t.Rows, []string{mark, c.Name, orNone(c.Server), v.Auth})
		t.WideRows = append(t.WideRows, []string{orNone(c.CAFile), orNone(c.ClientCert)})
		names = append(names, "context/"+c.Name)
	}
	return printer.Printable{Data: views, Table: t, Names: names}
}

// authOf says how a context authenticates, by kind and user name only.
func authOf(c contextConfig) string {
	switch {
	case c.Token != "":
		return "token"
	case c.User != "":
		return "user " + c.User
	case c.ClientCert != "":
		return "client certificate"
	}
	return "none"
}

func newCurrentContextCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "current-context",
		Short: "Print the name of the current context",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, path, err := readConfig()
			if err != nil {
				return err
			}
			if cfg.CurrentContext == "" {
				return &notFoundError{fmt.Errorf("%s sets no current context: kcctl config use-context NAME sets one", path)}
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), cfg.CurrentContext)
			return err
		},
	}
}

func newUseContextCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "use-context NAME",
		Short:             "Make NAME the current context",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: contextNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, path, _, err := namedContext(args[0])
			if err != nil {
				return err
			}
			cfg.CurrentContext = args[0]
			if err := writeConfig(path, cfg); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "context/%s is now current\n", args[0])
			return err
		},
	}
}

func newSetContextCmd(g *globals) *cobra.Command {
	var current bool
	cmd := &cobra.Command{
		Use:   "set-context NAME",
		Short: "Create context NAME, or change it, from the connection flags given",
		Long: `Creates context NAME, or changes it: each of --server, --token, --user,
--password-file, --ca-file, --client-cert and --client-key given is stored in
it (an empty value removes the setting); the others stay as they are. Paths
are stored absolute. --server may list several REST URLs of the cluster,
comma-separated: kcctl tries them in turn. A token is stored in the file as it is: keep the file
private (kcctl writes it with mode 0600), or prefer a user with a
password-file.`,
		Example: `  kcctl config set-context prod --server https://10.0.0.1:8083 --user alice \
      --password-file ~/.config/kcctl/prod.password --ca-file ca.pem --current
  kcctl config set-context prod --server https://10.0.0.2:8083,https://10.0.0.3:8083`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: contextNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, path, err := readConfig()
			if err != nil {
				return err
			}
			i := contextIndex(cfg, args[0])
			created := i < 0
			if created {
				cfg.Contexts = append(cfg.Contexts, contextConfig{Name: args[0]})
				i = len(cfg.Contexts) - 1
			}
			c := &cfg.Contexts[i]
			for _, s := range []struct {
				flag string
				dst  *string
				val  string
				path bool
			}{
				{"server", &c.Server, g.server, false},
				{"token", &c.Token, g.token, false},
				{"user", &c.User, g.user, false},
				{"password-file", &c.PasswordFile, g.passwordFile, true},
				{"ca-file", &c.CAFile, g.caFile, true},
				{"client-cert", &c.ClientCert, g.clientCert, true},
				{"client-key", &c.ClientKey, g.clientKey, true},
			} {
				if !cmd.Flags().Changed(s.flag) {
					continue
				}
				v := s.val
				if s.path && v != "" {
					if abs, err := filepath.Abs(v); err == nil {
						v = abs
					}
				}
				*s.dst = v
			}
			if c.Server != "" {
				if _, err := normalizeServers(c.Server, c.CAFile != "" || c.ClientCert != ""); err != nil {
					return &usageError{err}
				}
			}
			if current || cfg.CurrentContext == "" {
				cfg.CurrentContext = c.Name
			}
			if err := writeConfig(path, cfg); err != nil {
				return err
			}
			what := "changed"
			if created {
				what = "created"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "context/%s %s\n", c.Name, what)
			return err
		},
	}
	cmd.Flags().BoolVar(&current, "current", false, "Also make it the current context")
	return cmd
}

func newDeleteContextCmd() *cobra.Command {
	return &cobra.Command{
		Use:               "delete-context NAME",
		Short:             "Delete context NAME (the current context is then unset)",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: contextNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, path, i, err := namedContext(args[0])
			if err != nil {
				return err
			}
			cfg.Contexts = slices.Delete(cfg.Contexts, i, i+1)
			if cfg.CurrentContext == args[0] {
				cfg.CurrentContext = ""
			}
			if err := writeConfig(path, cfg); err != nil {
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "context/%s deleted\n", args[0])
			return err
		},
	}
}

// namedContext reads the config file and finds context name in it; a
// missing one is not found (exit 3).
func namedContext(name string) (kcctlConfig, string, int, error) {
	cfg, path, err := readConfig()
	if err != nil {
		return cfg, path, -1, err
	}
	i := contextIndex(cfg, name)
	if i < 0 {
		return cfg, path, -1, &notFoundError{fmt.Errorf("%s has no context %q: kcctl config get-contexts lists them", path, name)}
	}
	return cfg, path, i, nil
}

func contextIndex(cfg kcctlConfig, name string) int {
	return slices.IndexFunc(cfg.Contexts, func(c contextConfig) bool { return c.Name == name })
}

// contextNames completes context names from the config file.
func contextNames(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	cfg, _, err := readConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, c := range cfg.Contexts {
		names = append(names, c.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}

// readConfig reads kcctl's config file as it is (paths as written); a
// file that does not exist is an empty config.
func readConfig() (kcctlConfig, string, error) {
	var cfg kcctlConfig
	path, _ := configPath()
	if path == "" {
		return cfg, "", errors.New("no home folder to keep the config file in: set KCCTL_CONFIG")
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return cfg, path, nil
	}
	if err != nil {
		return cfg, path, fmt.Errorf("kcctl config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&cfg); err != nil && len(bytes.TrimSpace(b)) > 0 {
		return cfg, path, fmt.Errorf("kcctl config %s: %w", path, err)
	}
	return cfg, path, nil
}

// writeConfig replaces the config file at path with cfg, private to its
// user (it may hold tokens), through a temporary file so that a crash
// leaves the old one.
func writeConfig(path string, cfg kcctlConfig) error {
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kcctl config: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".config-*.yaml")
	if err != nil {
		return fmt.Errorf("kcctl config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("kcctl config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("kcctl config: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("kcctl config: %w", err)
	}
	return nil
}
