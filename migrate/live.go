package migrate

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kcd-project/kcd/api"
)

// Live is the REST API of a Kafka Connect cluster that still runs.
type Live interface {
	Statuses(ctx context.Context) (map[string]api.ConnectorStateInfo, error)
	StopConnector(ctx context.Context, name string) error
}

// Running lists, sorted, the connectors of the live cluster that include
// keeps (nil: all) and that process records there: the connector or one
// of its tasks is RUNNING or RESTARTING. Imported into kcd while they
// run, they would process the same records twice.
func Running(ctx context.Context, live Live, include func(string) bool) ([]string, error) {
	st, err := live.Statuses(ctx)
	if err != nil {
		return nil, fmt.Errorf("list the connectors of the Kafka Connect cluster: %w", err)
	}
	var out []string
	for name, s := range st {
		if include != nil && !include(name) {
			continue
		}
		if active(s) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

func active(s api.ConnectorStateInfo) bool {
	if s.Connector.State == "RUNNING" || s.Connector.State == "RESTARTING" {
		return true
	}
	for _, t := range s.Tasks {
		if t.State == "RUNNING" || t.State == "RESTARTING" {
			return true
		}
	}
	return false
}

// StopRunning stops names on the live cluster and waits, until ctx ends,
// for each to report STOPPED with no tasks. Kafka Connect commits a source
// task's offsets as it stops it, and a sink's before it closes its
// partitions, so what is read after this is where they stopped.
func StopRunning(ctx context.Context, live Live, names []string) error {
	for _, n := range names {
		if err := live.StopConnector(ctx, n); err != nil {
			return fmt.Errorf("stop connector %s on the Kafka Connect cluster: %w", n, err)
		}
	}
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := live.Statuses(ctx)
		if err == nil {
			var left []string
			for _, n := range names {
				if s, ok := st[n]; ok && (s.Connector.State != "STOPPED" || len(s.Tasks) > 0) {
					left = append(left, n)
				}
			}
			if len(left) == 0 {
				return nil
			}
			err = fmt.Errorf("not stopped yet: %v", left)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for connectors to stop on the Kafka Connect cluster: %w (%v)", ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// Targets maps each connector of c to its target state: what a run
// remembers before it stops connectors, to import them as they were.
func Targets(c *Cluster) map[string]string {
	out := make(map[string]string, len(c.Connectors))
	for _, conn := range c.Connectors {
		out[conn.Name] = conn.Target
	}
	return out
}

// UnstopMigrated gives the connectors that the migration stopped (names)
// the target state they had before (before, from a read made before the
// stop): the stop wrote STOPPED, with an empty task set, and kcd
// generates their task configs. A connector before does not know, or
// that was already stopped, keeps the target it has.
func UnstopMigrated(c *Cluster, names []string, before map[string]string) {
	for _, conn := range c.Connectors {
		was, ok := before[conn.Name]
		if conn.Target == "STOPPED" && ok && was != "STOPPED" && slices.Contains(names, conn.Name) {
			conn.Target, conn.StoppedForMigration = was, true
		}
	}
}
