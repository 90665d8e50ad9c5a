package main

import (
	"bytes"
	"context"
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
	var f bulkFlags
	cmd := &cobra.Command{
		Use:     "offsets CONNECTOR...|-e REGEX",
		Aliases: []string{"offset"},
		Short:   "List connectors' offsets: each partition and its offset",
		Long: `List the offsets of a connector (GET /connectors/NAME/offsets): each
source partition and its offset, or for a sink each topic partition and the
next offset to read, as JSON. -o json|yaml prints Kafka Connect's body,
which 'kcctl patch offsets' takes back. Several names, or -e REGEX, list
each connector's, with a CONNECTOR column; -o json|yaml then prints the
bodies by connector name.`,
		Example: `  kcctl get offsets orders-source
  kcctl get offsets orders-source -o yaml > offsets.yaml
  kcctl get offsets -e '^orders-'`,
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			c := g.client()
			names, err := f.targets(cmd.Context(), c, args)
			if err != nil {
				return err
			}
			all := make(map[string]api.ConnectorOffsets, len(names))
			for _, name := range names {
				offs, err := c.ConnectorOffsets(cmd.Context(), name)
				if err != nil {
					return connectorNotFound(name, err)
				}
				if offs.Offsets == nil {
					offs.Offsets = []api.ConnectorOffset{}
				}
				all[name] = offs
			}
			if f.single(args) {
				name := names[0]
				offs := all[name]
				if len(offs.Offsets) == 0 && isTable(f.output) {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "no offsets")
					return err
				}
				t := printer.Table{Header: []string{"PARTITION", "OFFSET"}, WideHeader: []string{"KIND"}}
				for _, o := range offs.Offsets {
					t.Rows = append(t.Rows, []string{compactJSON(o.Partition), compactJSON(o.Offset)})
					t.WideRows = append(t.WideRows, []string{offsetKind(o)})
				}
				return printer.Print(cmd.OutOrStdout(), f.output, printer.Printable{Data: offs, Table: t, Names: []string{"offsets/" + name}})
			}
			t := printer.Table{Header: []string{"CONNECTOR", "PARTITION", "OFFSET"}, WideHeader: []string{"KIND"}}
			var out []string
			for _, name := range names {
				out = append(out, "offsets/"+name)
				if len(all[name].Offsets) == 0 {
					t.Rows = append(t.Rows, []string{name, "<none>", "<none>"})
					t.WideRows = append(t.WideRows, []string{"<none>"})
				}
				for _, o := range all[name].Offsets {
					t.Rows = append(t.Rows, []string{name, compactJSON(o.Partition), compactJSON(o.Offset)})
					t.WideRows = append(t.WideRows, []string{offsetKind(o)})
				}
			}
			return printer.Print(cmd.OutOrStdout(), f.output, printer.Printable{Data: all, Table: t, Names: out})
		},
	}
	f.add(cmd)
	return cmd
}

// offsetKind says whose offset o is: a sink's (Kafka topic partition) or a
// source's (a partition of the connector's own), as -o wide shows it.
func offsetKind(o api.ConnectorOffset) string {
	if _, ok := o.Partition["kafka_topic"]; ok {
		if _, ok := o.Partition["kafka_partition"]; ok {
			return "sink"
		}
	}
	return "source"
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
	var f bulkFlags
	var file string
	cmd := &cobra.Command{
		Use:     "offsets CONNECTOR...|-e REGEX -f FILE|-",
		Aliases: []string{"offset"},
		Short:   "Set stopped connectors' offsets from JSON or YAML",
		Long: `Set offsets of a connector (PATCH /connectors/NAME/offsets): FILE (- reads
stdin) is Kafka Connect's body, JSON or YAML, as 'kcctl get offsets -o json'
prints it; a null offset removes the partition's. The connector must be
stopped ('kcctl stop connector NAME'). Prints the server's message. Several
names, or -e REGEX, set the same offsets on each connector.`,
		Example: `  kcctl stop connector orders-source
  kcctl get offsets orders-source -o yaml > offsets.yaml   # edit it
  kcctl patch offsets orders-source -f offsets.yaml
  kcctl resume connector orders-source`,
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
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
			return runBulkEach(cmd, g, &f, args, "offsets", "patched", func(ctx context.Context, c *client.Client, name string) (string, any, error) {
				msg, err := c.AlterConnectorOffsets(ctx, name, offs)
				return "patched: " + msg.Message, msg, notStopped(name, err)
			})
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "File with the offsets, JSON or YAML; - reads stdin")
	f.add(cmd)
	return cmd
}

func newDeleteOffsetsCmd(g *globals) *cobra.Command {
	var f bulkFlags
	cmd := &cobra.Command{
		Use:     "offsets CONNECTOR...|-e REGEX",
		Aliases: []string{"offset"},
		Short:   "Reset stopped connectors' offsets: they start from scratch when resumed",
		Long: `Reset all offsets of a connector (DELETE /connectors/NAME/offsets): a
source starts over, a sink reads from its consumer's auto.offset.reset. The
connector must be stopped ('kcctl stop connector NAME'). Prints the
server's message. Several names, or -e REGEX, reset each connector's.`,
		Example: `  kcctl stop connector orders-source
  kcctl delete offsets orders-source
  kcctl resume connector orders-source`,
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runBulkEach(cmd, g, &f, args, "offsets", "deleted", func(ctx context.Context, c *client.Client, name string) (string, any, error) {
				msg, err := c.ResetConnectorOffsets(ctx, name)
				return "deleted: " + msg.Message, msg, notStopped(name, err)
			})
		},
	}
	f.add(cmd)
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
