package migrate

import "testing"

// A connector that --stop-source stopped reads back STOPPED with no task
// configs (Kafka Connect's stop writes an empty set): KeepRunning makes
// the plan import it STARTED, with kcd generating its tasks, and leaves
// every other connector's target as read.
func TestKeepRunning(t *testing.T) {
	src := map[string]string{"connector.class": "FileStreamSource"}
	c := &Cluster{Connectors: []*Connector{
		{Name: "a", Target: "STOPPED", Config: src},
		{Name: "b", Target: "STOPPED", Config: src},
		{Name: "c", Target: "PAUSED", Config: src, Tasks: []map[string]string{{"task.class": "T"}}, TaskCount: 1},
		{Name: "d", Target: "STOPPED", Config: map[string]string{"connector.class": "io.debezium.connector.mysql.MySqlConnector"}},
	}}
	KeepRunning(c, []string{"a", "c", "d", "gone"})
	p := BuildPlan(c, testCatalogue())
	want := map[string][2]string{"a": {"STARTED", "STARTED"}, "b": {"STOPPED", "STOPPED"}, "c": {"PAUSED", "PAUSED"}, "d": {"STARTED", "STOPPED"}}
	for _, pc := range p.Connectors {
		if got := [2]string{pc.From, pc.Target}; got != want[pc.Name] {
			t.Errorf("%s: from %s to %s, want %v", pc.Name, got[0], got[1], want[pc.Name])
		}
		if pc.Name == "a" && pc.Tasks != 0 {
			t.Errorf("a: %d task configs carried over, want none (kcd generates them)", pc.Tasks)
		}
	}
}
