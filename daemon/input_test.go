package daemon

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/daemon/coordinator"
)

// A connector whose name is too long for its keys (written into the store
// directly, past the REST API's check) never blocks the coordinator: a
// connector created after it is assigned and runs, and the journal says
// which units were left out and why.
func TestUnstorableConnectorDoesNotBlockTheOthers(t *testing.T) {
	n := New(devConfig(t, t.TempDir()), slog.New(slog.DiscardHandler))
	if err := n.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	waitHealthy(t, n)

	bad := strings.Repeat("x", 1003) // its config key fits, its task and owner keys do not
	cfg, _ := json.Marshal(map[string]any{"config": map[string]string{
		"name": bad, "connector.class": "Datagen", "topic": "gen", "tasks.max": "2", "rate.per.task": "10"}})
	if _, err := n.store.Put(t.Context(), "connect/config/"+bad, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := n.store.Put(t.Context(), "connect/target/"+bad, []byte(`{"state":"STARTED"}`)); err != nil {
		t.Fatal(err)
	}

	if code := call(t, "POST", n.RESTURL()+"/connectors", map[string]any{"name": "good", "config": map[string]string{
		"connector.class": "Datagen", "topic": "gen", "tasks.max": "2", "rate.per.task": "10"}}, nil); code != 201 {
		t.Fatalf("create good: %d", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var st connStatus
		if call(t, "GET", n.RESTURL()+"/connectors/good/status", nil, &st) == 200 && len(st.Tasks) == 2 &&
			st.Tasks[0].State == "RUNNING" && st.Tasks[1].State == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the good connector's tasks do not run while a bad connector exists: %+v", st)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var journal []coordinator.Rebalance
	if code := call(t, "GET", n.RESTURL()+"/kcd/v1/rebalances", nil, &journal); code != 200 {
		t.Fatalf("journal: %d", code)
	}
	found := false
	for _, r := range journal {
		for _, tr := range r.Triggers {
			found = found || (strings.Contains(tr, "left unassigned") && strings.Contains(tr, bad+"/connector"))
		}
	}
	if !found {
		t.Errorf("no journal entry says the bad connector was left unassigned: %+v", journal)
	}
}

func waitHealthy(t *testing.T, n *Node) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if status, body := getJSON(t, n.RESTURL()+"/health"); status == 200 && body["status"] == "healthy" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("node did not become healthy")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
