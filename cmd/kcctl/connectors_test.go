package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
)

// datagen creates a Datagen connector with two tasks on the node at url and
// waits until it and its tasks run.
func datagen(t *testing.T, url, name string) {
	t.Helper()
	c := client.New(url)
	cfg := map[string]string{"connector.class": "Datagen", "topic": name, "tasks.max": "2", "rate": "5"}
	if _, err := c.PutConnectorConfig(t.Context(), name, cfg); err != nil {
		t.Fatal(err)
	}
	waitState(t, url, name, "RUNNING")
}

// waitState waits until connector name and all its tasks are in state.
func waitState(t *testing.T, url, name, state string) api.ConnectorStateInfo {
	t.Helper()
	c := client.New(url)
	var st api.ConnectorStateInfo
	waitUntil(t, func() (bool, string) {
		var err error
		st, err = c.ConnectorStatus(t.Context(), name)
		ok := err == nil && st.Connector.State == state && len(st.Tasks) > 0
		for _, tk := range st.Tasks {
			ok = ok && tk.State == state
		}
		return ok, fmt.Sprintf("connector %s not %s: %+v %v", name, state, st, err)
	})
	return st
}

func mustKcctl(t *testing.T, args ...string) string {
	t.Helper()
	code, out, errOut := kcctl(t, args...)
	if code != 0 {
		t.Fatalf("kcctl %v: exit %d: %s", args, code, errOut)
	}
	return out
}

func TestGetConnectorsTasksPluginsDescribe(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	if out := mustKcctl(t, append(s, "get", "connectors")...); strings.TrimSpace(out) != "no connectors" {
		t.Errorf("empty cluster: %q", out)
	}
	datagen(t, url, "gen-a")
	datagen(t, url, "gen-b")

	out := mustKcctl(t, append(s, "get", "connectors")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "NAME TYPE STATE TASKS WORKER" {
		t.Fatalf("table:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 5 || f[0] != "gen-a" || f[1] != "source" || f[2] != "RUNNING" || f[3] != "2/2" || f[4] == "<none>" {
		t.Errorf("row of gen-a: %q", lines[1])
	}
	out = mustKcctl(t, append(s, "get", "connectors", "gen-b", "-o", "wide")...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[0], "CLASS") ||
		!strings.Contains(lines[1], "Datagen") || !strings.HasSuffix(lines[1], "gen-b") {
		t.Errorf("wide:\n%s", out)
	}
	var js map[string]api.ConnectorExpanded
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "get", "connectors", "-o", "json")...)), &js); err != nil {
		t.Fatal(err)
	}
	if len(js) != 2 || js["gen-a"].Status.Connector.State != "RUNNING" || js["gen-a"].Info.Config["topic"] != "gen-a" {
		t.Errorf("json: %+v", js)
	}
	var ym map[string]map[string]any
	if err := yaml.Unmarshal([]byte(mustKcctl(t, append(s, "get", "connectors", "gen-a", "-o", "yaml")...)), &ym); err != nil {
		t.Fatal(err)
	}
	if len(ym) != 1 || ym["gen-a"]["status"] == nil || ym["gen-a"]["info"] == nil {
		t.Errorf("yaml: %v", ym)
	}
	if out := mustKcctl(t, append(s, "get", "connectors", "-o", "name")...); out != "connector/gen-a\nconnector/gen-b\n" {
		t.Errorf("name: %q", out)
	}
	code, _, errOut := kcctl(t, append(s, "get", "connectors", "nope")...)
	if code != exitNotFound || !strings.Contains(errOut, `"nope" not found`) || !strings.Contains(errOut, "kcctl get connectors") {
		t.Errorf("unknown connector: exit %d, %q", code, errOut)
	}

	// Tasks.
	out = mustKcctl(t, append(s, "get", "tasks")...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 5 || !strings.HasPrefix(lines[1], "gen-a") || !strings.Contains(lines[4], "RUNNING") {
		t.Errorf("tasks:\n%s", out)
	}
	if out := mustKcctl(t, append(s, "get", "tasks", "gen-b", "-o", "name")...); out != "task/gen-b/0\ntask/gen-b/1\n" {
		t.Errorf("tasks -o name: %q", out)
	}
	var tasks []taskRow
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "get", "tasks", "gen-b", "-o", "json")...)), &tasks); err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[1].Connector != "gen-b" || tasks[1].ID != 1 || tasks[1].State != "RUNNING" {
		t.Errorf("tasks json: %+v", tasks)
	}
	if out := mustKcctl(t, append(s, "get", "tasks", "gen-b", "-o", "wide")...); !strings.Contains(out, "TRACE") {
		t.Errorf("tasks wide:\n%s", out)
	}
	if code, _, _ := kcctl(t, append(s, "get", "tasks", "nope")...); code != exitNotFound {
		t.Errorf("tasks of an unknown connector: exit %d", code)
	}

	// Plugins.
	out = mustKcctl(t, append(s, "get", "plugins", "-o", "wide")...)
	if !strings.Contains(out, "ALIAS") || !strings.Contains(out, "Datagen") {
		t.Errorf("plugins:\n%s", out)
	}
	if strings.Contains(out, "transformation") {
		t.Errorf("plugins without --all lists transformations:\n%s", out)
	}
	var ps []api.PluginInfo
	if err := yaml.Unmarshal([]byte(mustKcctl(t, append(s, "get", "plugins", "--all", "-o", "yaml")...)), &ps); err != nil || len(ps) == 0 {
		t.Errorf("plugins yaml: %v %v", ps, err)
	}

	// Describe.
	out = mustKcctl(t, append(s, "describe", "connector", "gen-a")...)
	for _, want := range []string{"Name:    gen-a", "State:   RUNNING", "  connector.class=Datagen", "  tasks.max=2", "Tasks:", "Offsets:"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe lacks %q:\n%s", want, out)
		}
	}
	var d connectorDetail
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "describe", "connector", "gen-a", "-o", "json")...)), &d); err != nil {
		t.Fatal(err)
	}
	if d.Name != "gen-a" || d.Config["topic"] != "gen-a" || len(d.Status.Tasks) != 2 || d.Offsets == nil {
		t.Errorf("describe json: %+v", d)
	}
	if out := mustKcctl(t, append(s, "describe", "connector", "gen-a", "-o", "name")...); out != "connector/gen-a\n" {
		t.Errorf("describe -o name: %q", out)
	}
	code, _, errOut = kcctl(t, append(s, "describe", "connector", "nope")...)
	if code != exitNotFound || !strings.Contains(errOut, "kcctl get connectors") {
		t.Errorf("describe unknown: exit %d, %q", code, errOut)
	}
	if code, _, _ := kcctl(t, append(s, "describe", "connector")...); code != exitUsage {
		t.Errorf("describe without a name: exit %d", code)
	}

	// A failed task: its trace in describe and in get tasks -o wide.
	bad := map[string]string{"connector.class": "FileStreamSink", "topics": "bad", "file": "/nonexistent/dir/out.txt"}
	if _, err := client.New(url).PutConnectorConfig(t.Context(), "bad", bad); err != nil {
		t.Fatal(err)
	}
	waitTaskFailed(t, url, "bad")
	out = mustKcctl(t, append(s, "describe", "connector", "bad")...)
	if !strings.Contains(out, "FAILED") || !strings.Contains(out, "Task 0 trace:\n    start task: couldn't find or create file") {
		t.Errorf("describe of a failed task:\n%s", out)
	}
	out = mustKcctl(t, append(s, "get", "tasks", "bad", "-o", "wide")...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 || !strings.Contains(lines[1], "FAILED") || !strings.Contains(lines[1], "/nonexistent/dir/out.txt") {
		t.Errorf("get tasks -o wide of a failed task:\n%s", out)
	}
	if out := mustKcctl(t, append(s, "get", "connectors", "bad")...); !strings.Contains(out, "0/1") {
		t.Errorf("running/total of a failed task:\n%s", out)
	}
}

// waitTaskFailed waits until task 0 of connector name is FAILED.
func waitTaskFailed(t *testing.T, url, name string) {
	t.Helper()
	c := client.New(url)
	waitUntil(t, func() (bool, string) {
		st, err := c.ConnectorStatus(t.Context(), name)
		return err == nil && len(st.Tasks) > 0 && st.Tasks[0].State == "FAILED", fmt.Sprintf("task 0 of %s not FAILED: %+v %v", name, st, err)
	})
}
