package migrate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/kcd-project/kcd/api"
)

// Exporter is the part of kcd's API an export reads (the REST client of
// kcd implements it).
type Exporter interface {
	Export(ctx context.Context, after string, limit int) (api.Export, error)
}

// Export reads every connector of kcd that include keeps (nil: all), page
// by page, as a Cluster that Write can put into Kafka Connect's topics.
func Export(ctx context.Context, ex Exporter, include func(string) bool) (*Cluster, error) {
	c := &Cluster{}
	after := ""
	for {
		page, err := ex.Export(ctx, after, 100)
		if err != nil {
			return nil, fmt.Errorf("export kcd's connectors after %q: %w", after, err)
		}
		for _, ec := range page.Connectors {
			if include == nil || include(ec.Name) {
				c.Connectors = append(c.Connectors, fromExport(ec))
			}
		}
		if page.Next == "" || page.Next == after {
			break
		}
		after = page.Next
	}
	slices.SortFunc(c.Connectors, func(a, b *Connector) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

func fromExport(ec api.ExportConnector) *Connector {
	c := &Connector{Name: ec.Name, Config: ec.Config, Target: ec.Target, Tasks: ec.Tasks, TaskCount: len(ec.Tasks)}
	if c.Target == "" {
		c.Target = "STARTED"
	}
	if c.Target == "STOPPED" || !slices.ContainsFunc(c.Tasks, hasTaskClass) {
		// Kafka Connect keeps no task configs for a stopped connector. And
		// it instantiates a task by the task.class of its config, which
		// kcd's built-in connectors do not write: without it, Kafka
		// Connect generates the task configs itself when it starts the
		// connector (a paused one keeps none until it is resumed).
		c.Tasks, c.TaskCount = nil, 0
	}
	for _, o := range ec.SourceOffsets {
		so := SourceOffset{Partition: o.Partition, Offset: o.Offset, Key: []byte(o.Key)}
		so.Key = []byte(carriedKey(ec.Name, so)) // a key that does not fit is dropped: Write encodes one
		c.SourceOffsets = append(c.SourceOffsets, so)
	}
	if c.IsSink() {
		c.SinkGroup = SinkGroup(ec.Name, ec.Config)
	}
	for _, o := range ec.SinkOffsets {
		c.SinkOffsets = append(c.SinkOffsets, SinkOffset{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset})
	}
	return c
}

// SinkGroup is the consumer group of sink connector name: its
// consumer.override.group.id, else connect-<name>.
func SinkGroup(name string, config map[string]string) string {
	if g := config["consumer.override.group.id"]; g != "" {
		return g
	}
	return "connect-" + name
}

func hasTaskClass(task map[string]string) bool { return task["task.class"] != "" }
