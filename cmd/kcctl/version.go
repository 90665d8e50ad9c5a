package main

import (
	"runtime"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/internal/version"
	"github.com/kcd-project/kcd/tui/printer"
)

type versionInfo struct {
	Client versionOf  `json:"client"`
	Server *versionOf `json:"server,omitempty"`
	// ServerError says why the server's version is missing.
	ServerError string `json:"server_error,omitempty"`
}

type versionOf struct {
	Version           string `json:"version"`
	Commit            string `json:"commit"`
	GoVersion         string `json:"go_version"`
	ConnectAPIVersion string `json:"connect_api_version,omitempty"`
}

func newVersionCmd(g *globals) *cobra.Command {
	var output string
	var clientOnly bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version of kcctl and of the kcd server",
		Long: `Print the version of kcctl and of the kcd server. When the server cannot be
asked, kcctl's own version is printed and kcctl exits 1 (--client asks no
server).`,
		Example: `  # Versions of kcctl and of the server it talks to
  kcctl version

  # kcctl's own version only, as JSON
  kcctl version --client -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var serverErr error
			info := versionInfo{Client: versionOf{Version: version.Version, Commit: version.Commit, GoVersion: runtime.Version()}}
			if !clientOnly {
				v, err := g.client().Version(cmd.Context())
				if err != nil {
					// Print kcctl's version, then fail: no server answered.
					info.ServerError, serverErr = err.Error(), err
				} else {
					info.Server = &versionOf{v.Version, v.Commit, v.GoVersion, v.ConnectAPIVersion}
				}
			}
			if err := printer.Print(cmd.OutOrStdout(), output, versionPrintable(info, clientOnly)); err != nil {
				return err
			}
			return serverErr
		},
	}
	cmd.Flags().BoolVar(&clientOnly, "client", false, "Print kcctl's version only, without asking the server")
	addOutputFlag(cmd, &output)
	return cmd
}

func versionPrintable(info versionInfo, clientOnly bool) printer.Printable {
	t := printer.Table{
		Header:     []string{"COMPONENT", "VERSION", "COMMIT"},
		Rows:       [][]string{{"kcctl", info.Client.Version, info.Client.Commit}},
		WideHeader: []string{"GO", "CONNECT-API"},
		WideRows:   [][]string{{info.Client.GoVersion, "<none>"}},
	}
	names := []string{"kcctl/" + info.Client.Version}
	switch {
	case info.Server != nil:
		t.Rows = append(t.Rows, []string{"kcd", info.Server.Version, info.Server.Commit})
		t.WideRows = append(t.WideRows, []string{info.Server.GoVersion, info.Server.ConnectAPIVersion})
		names = append(names, "kcd/"+info.Server.Version)
	case !clientOnly:
		t.Rows = append(t.Rows, []string{"kcd", "<unknown>", "<unknown>"})
		t.WideRows = append(t.WideRows, []string{"<unknown>", "<unknown>"})
	}
	return printer.Printable{Data: info, Table: t, Names: names}
}
