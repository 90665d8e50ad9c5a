package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// The verbs over a connector's offsets: get, patch and delete offsets.

func newGetOffsetsCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "offsets CONNECTOR",
		Aliases: []string{"offset"},
		Short:   "List a connector's offsets: each partition and its offset",
		Long: `List the offsets of a connector (GET /connectors/NAME/offsets): each
source partition and its offset, or for a sink each topic partition and the
next offset to read, as JSON. -o json|yaml prints Kafka Connect's body,
which 'kcctl patch offsets' takes back.`,
		Example: `  kcctl get offsets orders-source
  kcctl get offsets orders-source -o yaml > offsets.yaml`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			offs, err := g.client().ConnectorOffsets(cmd.Context(), name)
			if err != nil {
				return connectorNotFound(name, err)
			}
			if offs.Offsets == nil {
				offs.Offsets = []api.ConnectorOffset{}
			}
			if len(offs.Offsets) == 0 && isTable(output) {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), "no offsets")
				return err
			}
			t := printer.Table{Header: []string{"PARTITION", "OFFSET"}}
			for _, o := range offs.Offsets {
				t.Rows = append(t.Rows, []string{compactJSON(o.Partition), compactJSON(o.Offset)})
			}
			return printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: offs, Table: t, Names: []string{"offsets/" + name}})
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// offsetsBody is the body of PATCH /connectors/{name}/offsets as a file
// holds it, in JSON or YAML.
type offsetsBody struct {
	Offsets []struct {
		Partition map[string]any `yaml:"partition"`
		Offset    map[string]any `yaml:"offset"`
	} `yaml:"offsets"`
}

// parseOffsets reads Kafka Connect's offsets body, JSON or YAML: one
// document {"offsets": [{"partition": {...}, "offset": {...}}]}; a null
// offset removes the partition's. Integers stay exact.
func parseOffsets(data []byte) (api.ConnectorOffsets, error) {
	const want = `give {"offsets": [{"partition": {...}, "offset": {...}}]}, as 'kcctl get offsets NAME -o json' prints it`
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var b offsetsBody
	if err := dec.Decode(&b); err != nil {
		if errors.Is(err, io.EOF) {
			return api.ConnectorOffsets{}, errors.New("no offsets: " + want)
		}
		return api.ConnectorOffsets{}, fmt.Errorf("%w; %s", err, want)
	}
	var more any
	if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
		return api.ConnectorOffsets{}, errors.New("more than one document: " + want)
	}
	if len(b.Offsets) == 0 {
		return api.ConnectorOffsets{}, errors.New("no offsets: " + want)
	}
	out := api.ConnectorOffsets{Offsets: make([]api.ConnectorOffset, 0, len(b.Offsets))}
	for i, o := range b.Offsets {
		if len(o.Partition) == 0 {
			return api.ConnectorOffsets{}, fmt.Errorf("offset %d has no partition: %s", i+1, want)
		}
		out.Offsets = append(out.Offsets, api.ConnectorOffset{Partition: o.Partition, Offset: o.Offset})
	}
	return out, nil
}

// notStopped turns the API's refusal to change the offsets of a connector
// that is not stopped into what to do; other errors pass as they are.
func notStopped(name string, err error) error {
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusBadRequest && strings.Contains(apiErr.Message, "STOPPED state") {
		return fmt.Errorf("connector %q is not stopped, and only a stopped connector's offsets change: 'kcctl stop connector %s' first, 'kcctl resume connector %s' after", name, name, name)
	}
	return connectorNotFound(name, err)
}

func newPatchOffsetsCmd(g *globals) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:     "offsets CONNECTOR -f FILE|-",
		Aliases: []string{"offset"},
		Short:   "Set a stopped connector's offsets from JSON or YAML",
		Long: `Set offsets of a connector (PATCH /connectors/NAME/offsets): FILE (- reads
stdin) is Kafka Connect's body, JSON or YAML, as 'kcctl get offsets -o json'
prints it; a null offset removes the partition's. The connector must be
stopped ('kcctl stop connector NAME'). Prints the server's message.`,
		Example: `  kcctl stop connector orders-source
  kcctl get offsets orders-source -o yaml > offsets.yaml   # edit it
  kcctl patch offsets orders-source -f offsets.yaml
  kcctl resume connector orders-source`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			if file == "" {
				return &usageError{errors.New("give -f FILE, or -f - for stdin")}
			}
			data, err := readInput(cmd, file)
			if err != nil {
				return err
			}
			offs, err := parseOffsets(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			msg, err := g.client().AlterConnectorOffsets(cmd.Context(), name, offs)
			if err != nil {
				return notStopped(name, err)
			}
			return printResult(cmd, output, "offsets/"+name, "patched: "+msg.Message, msg)
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "File with the offsets, JSON or YAML; - reads stdin")
	addOutputFlag(cmd, &output)
	return cmd
}

func newDeleteOffsetsCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "offsets CONNECTOR",
		Aliases: []string{"offset"},
		Short:   "Reset a stopped connector's offsets: it starts from scratch when resumed",
		Long: `Reset all offsets of a connector (DELETE /connectors/NAME/offsets): a
source starts over, a sink reads from its consumer's auto.offset.reset. The
connector must be stopped ('kcctl stop connector NAME'). Prints the
server's message.`,
		Example: `  kcctl stop connector orders-source
  kcctl delete offsets orders-source
  kcctl resume connector orders-source`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			msg, err := g.client().ResetConnectorOffsets(cmd.Context(), name)
			if err != nil {
				return notStopped(name, err)
			}
			return printResult(cmd, output, "offsets/"+name, "deleted: "+msg.Message, msg)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}

// newGetWorkersCmd is 'kcctl worker list' as 'kcctl get workers'.
func newGetWorkersCmd(g *globals) *cobra.Command {
	cmd := newWorkerListCmd(g)
	cmd.Use, cmd.Aliases = "workers", []string{"worker"}
	cmd.ValidArgsFunction = cobra.NoFileCompletions
	cmd.Example = `  kcctl get workers
  kcctl get workers -o wide     # plus each worker's REST URL and when it went`
	return cmd
}

// newGetMembersCmd prints the members table of 'kcctl cluster status'.
func newGetMembersCmd(g *globals) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "members",
		Aliases: []string{"member"},
		Short:   "List the cluster's members: Raft role, roles, leader, reachability",
		Long: `List the members of the kcd cluster, as 'kcctl cluster status' does below
its summary (leader, term, quorum, alarms). -o json|yaml prints the members.`,
		Example: `  kcctl get members
  kcctl get members -o wide     # plus peer URL and last contact`,
		Args:              cobra.NoArgs,
		ValidArgsFunction: cobra.NoFileCompletions,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, err := g.client().ClusterInfo(cmd.Context())
			if err != nil {
				return err
			}
			p := clusterPrintable(info)
			p.Data = info.Members
			return printer.Print(cmd.OutOrStdout(), output, p)
		},
	}
	addOutputFlag(cmd, &output)
	return cmd
}
