package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// maxApplyFile bounds what apply reads of its file.
const maxApplyFile = 16 << 20

// connectorSpec is one connector of an apply file.
type connectorSpec struct {
	Name   string
	Config map[string]string
}

// parseConnectorSpecs reads connectors from JSON or YAML: each document is
// the create payload {name, config}, a bare config with name inside, or a
// list of these.
func parseConnectorSpecs(data []byte) ([]connectorSpec, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var specs []connectorSpec
	for doc := 1; ; doc++ {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", doc, err)
		}
		if len(n.Content) == 0 {
			continue // an empty document
		}
		root := deref(n.Content[0])
		items := []*yaml.Node{root}
		if root.Kind == yaml.SequenceNode {
			items = root.Content
		}
		for i, it := range items {
			s, err := specOf(deref(it))
			if err != nil {
				if root.Kind == yaml.SequenceNode {
					return nil, fmt.Errorf("document %d, item %d (line %d): %w", doc, i+1, it.Line, err)
				}
				return nil, fmt.Errorf("document %d (line %d): %w", doc, it.Line, err)
			}
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return nil, errors.New("no connector in the input")
	}
	return specs, nil
}

func deref(n *yaml.Node) *yaml.Node {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// specOf is the connector of one mapping: {name, config: {...}} or a bare
// config with name inside. Scalars keep their text as written (1.0 stays
// 1.0).
func specOf(n *yaml.Node) (connectorSpec, error) {
	if n.Kind != yaml.MappingNode {
		return connectorSpec{}, errors.New("a connector is an object: {name, config} or a config with name inside")
	}
	flat, err := stringMap(n)
	if cfgNode := mapValue(n, "config"); cfgNode != nil && deref(cfgNode).Kind == yaml.MappingNode {
		cfg, err := stringMap(deref(cfgNode))
		if err != nil {
			return connectorSpec{}, fmt.Errorf("config: %w", err)
		}
		name := ""
		if nn := mapValue(n, "name"); nn != nil {
			name = deref(nn).Value
		}
		if name == "" {
			name = cfg["name"]
		}
		if cfg["name"] != "" && cfg["name"] != name {
			return connectorSpec{}, fmt.Errorf("name %q and config's name %q differ", name, cfg["name"])
		}
		if name == "" {
			return connectorSpec{}, errors.New("no name")
		}
		cfg["name"] = name
		return connectorSpec{Name: name, Config: cfg}, nil
	}
	if err != nil {
		return connectorSpec{}, err
	}
	if flat["name"] == "" {
		return connectorSpec{}, errors.New("no name: give {name, config} or a config with name inside")
	}
	return connectorSpec{Name: flat["name"], Config: flat}, nil
}

func mapValue(n *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// stringMap is a mapping of scalars as Kafka Connect's string config.
func stringMap(n *yaml.Node) (map[string]string, error) {
	m := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i].Value, deref(n.Content[i+1])
		switch {
		case v.Kind != yaml.ScalarNode:
			return nil, fmt.Errorf("setting %q (line %d): a value is a string, number or boolean", k, v.Line)
		case v.ShortTag() == "!!null":
			return nil, fmt.Errorf("setting %q (line %d): null is no value", k, v.Line)
		}
		m[k] = v.Value
	}
	return m, nil
}

// readInput reads file, or stdin for "-", at most maxApplyFile bytes.
func readInput(cmd *cobra.Command, file string) ([]byte, error) {
	var r io.Reader
	if file == "-" {
		r = cmd.InOrStdin()
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r = f
	}
	data, err := io.ReadAll(io.LimitReader(r, maxApplyFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	if len(data) > maxApplyFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", file, maxApplyFile>>20)
	}
	return data, nil
}

func newApplyCmd(g *globals) *cobra.Command {
	var file, output string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "apply -f FILE|-",
		Short: "Create connectors or update their config from JSON or YAML",
		Long: `Create the connectors of FILE (- reads stdin), or replace the config of
those that exist (PUT /connectors/NAME/config). FILE is JSON or YAML: the
create payload {"name": ..., "config": {...}}, or a bare config with "name"
inside; several YAML documents, or a JSON array, give several connectors.
Each is reported as created, configured or unchanged. --dry-run validates
each config with its plugin and prints the errors, changing nothing.`,
		Example: `  kcctl apply -f orders-sink.yaml
  # Check first: the plugin validates the config
  kcctl apply -f orders-sink.yaml --dry-run
  kcctl get connectors orders-sink -o yaml | yq .orders-sink.info | kcctl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return &usageError{errors.New("give -f FILE, or -f - for stdin")}
			}
			data, err := readInput(cmd, file)
			if err != nil {
				return err
			}
			specs, err := parseConnectorSpecs(data)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			c := g.client()
			var results []actionResult
			var names []string
			invalid, failed := 0, 0
			for _, s := range specs {
				res, err := applyOne(cmd, c, s, dryRun)
				if err != nil {
					// Report it and go on with the others.
					failed++
					fmt.Fprintf(cmd.ErrOrStderr(), "Error: connector/%s: %v\n", s.Name, err)
					results = append(results, actionResult{Connector: s.Name, Error: err.Error()})
					continue
				}
				if strings.HasPrefix(res, "invalid") {
					invalid++
				}
				results = append(results, actionResult{Connector: s.Name, Result: res})
				names = append(names, "connector/"+s.Name)
				if isTable(output) {
					fmt.Fprintf(cmd.OutOrStdout(), "connector/%s %s\n", s.Name, res)
				}
			}
			switch output {
			case "wide": // the connectors as they are now (wide.go)
				var applied []string
				for _, r := range results {
					applied = append(applied, r.Connector)
				}
				if err := printAfter(cmd, connectorsAfter(c, applied)); err != nil {
					return err
				}
			case "table":
			default:
				if err := printer.Print(cmd.OutOrStdout(), output, printer.Printable{Data: results, Names: names}); err != nil {
					return err
				}
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d connectors not applied", failed, len(specs))
			}
			if invalid > 0 {
				return fmt.Errorf("%d of %d connectors have an invalid config", invalid, len(specs))
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "File with the connectors, JSON or YAML; - reads stdin")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "Validate each config with its plugin and print the errors; change nothing")
	addOutputFlag(cmd, &output)
	return cmd
}

// applyOne creates or updates one connector and says what it did.
func applyOne(cmd *cobra.Command, c *client.Client, s connectorSpec, dryRun bool) (string, error) {
	ctx := cmd.Context()
	cur, err := c.ConnectorConfig(ctx, s.Name)
	var apiErr *client.APIError
	exists := err == nil
	if err != nil && !(errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound) {
		return "", err
	}
	if dryRun {
		class := s.Config["connector.class"]
		if class == "" {
			return "", errors.New("no connector.class to validate the config with")
		}
		v, err := c.ValidateConfig(ctx, class, s.Config)
		if err != nil {
			return "", err
		}
		for _, ci := range v.Configs {
			if ci.Value == nil {
				continue
			}
			for _, e := range ci.Value.Errors {
				fmt.Fprintf(cmd.ErrOrStderr(), "connector/%s: %s: %s\n", s.Name, ci.Value.Name, e)
			}
		}
		if v.ErrorCount > 0 {
			return fmt.Sprintf("invalid: %d errors (dry run)", v.ErrorCount), nil
		}
		switch {
		case !exists:
			return "created (dry run)", nil
		case maps.Equal(cur, s.Config):
			return "unchanged (dry run)", nil
		}
		return "configured (dry run)", nil
	}
	if exists && maps.Equal(cur, s.Config) {
		return "unchanged", nil
	}
	if _, err := c.PutConnectorConfig(ctx, s.Name, s.Config); err != nil {
		return "", err
	}
	if exists {
		return "configured", nil
	}
	return "created", nil
}

func newPatchCmd(g *globals) *cobra.Command {
	var f bulkFlags
	var set, remove []string
	sub := &cobra.Command{
		Use:     "connector NAME...|-e REGEX -s KEY=VALUE... -r KEY...",
		Aliases: []string{"connectors", "conn"},
		Short:   "Set and remove settings of connectors' configs",
		Long: `Change some settings of a connector's config and keep the others
(PATCH /connectors/NAME/config): -s sets a setting, -r removes one; both
repeat. Several names, or -e REGEX, patch each connector named or matched.
-o json|yaml prints the new config of one named connector, else each
connector's result with its config.`,
		Example: `  kcctl patch connector orders-sink -s tasks.max=4 -r errors.tolerance
  # Every connector whose name starts with orders-
  kcctl patch connector -e '^orders-' -s errors.tolerance=all`,
		ValidArgsFunction: connectorCompletions(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(set) == 0 && len(remove) == 0 {
				return &usageError{errors.New("give settings to change: -s KEY=VALUE or -r KEY")}
			}
			patch := make(map[string]*string, len(set)+len(remove))
			for _, kv := range set {
				k, v, ok := strings.Cut(kv, "=")
				if !ok || k == "" {
					return &usageError{fmt.Errorf("-s %q: use KEY=VALUE", kv)}
				}
				patch[k] = &v
			}
			for _, k := range remove {
				if _, ok := patch[k]; ok {
					return &usageError{fmt.Errorf("%q is both set and removed", k)}
				}
				patch[k] = nil
			}
			return runBulkEach(cmd, g, &f, args, "connector", "patched", func(ctx context.Context, c *client.Client, name string) (string, any, error) {
				info, err := c.PatchConnectorConfig(ctx, name, patch)
				return "patched", info, err
			})
		},
	}
	sub.Flags().StringArrayVarP(&set, "set", "s", nil, "Set a setting: KEY=VALUE (repeat for more)")
	sub.Flags().StringArrayVarP(&remove, "remove", "r", nil, "Remove a setting: KEY (repeat for more)")
	f.add(sub)
	cmd := &cobra.Command{Use: "patch", Short: "Change some settings of connectors, or their offsets"}
	cmd.AddCommand(sub, newPatchOffsetsCmd(g))
	return cmd
}
