package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/daemon/client"
)

func TestConnectorActions(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	datagen(t, url, "orders-a")
	datagen(t, url, "orders-b")
	datagen(t, url, "other")

	// -e selects by name; each connector is reported.
	if out := mustKcctl(t, append(s, "pause", "connector", "-e", "^orders-")...); out != "connector/orders-a paused\nconnector/orders-b paused\n" {
		t.Errorf("pause -e: %q", out)
	}
	waitState(t, url, "orders-a", "PAUSED")
	waitState(t, url, "orders-b", "PAUSED")
	if st, _ := client.New(url).ConnectorStatus(t.Context(), "other"); st.Connector.State != "RUNNING" {
		t.Errorf("-e ^orders- paused other: %+v", st)
	}
	var res []actionResult
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "resume", "connector", "orders-a", "orders-b", "-o", "json")...)), &res); err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 || res[0] != (actionResult{Connector: "orders-a", Result: "resumed"}) {
		t.Errorf("resume json: %+v", res)
	}
	waitState(t, url, "orders-a", "RUNNING")

	if out := mustKcctl(t, append(s, "stop", "connector", "other", "-o", "name")...); out != "connector/other\n" {
		t.Errorf("stop -o name: %q", out)
	}
	c := client.New(url)
	waitStopped(t, c, "other")

	// Restart: the connector, its tasks, one task.
	if out := mustKcctl(t, append(s, "restart", "connector", "orders-a", "--tasks", "all", "-o", "yaml")...); !strings.Contains(out, "result: restarted") {
		t.Errorf("restart yaml: %q", out)
	}
	if out := mustKcctl(t, append(s, "restart", "connector", "orders-b", "--tasks", "failed")...); out != "connector/orders-b restarted\n" {
		t.Errorf("restart --tasks failed: %q", out)
	}
	if out := mustKcctl(t, append(s, "restart", "connector", "orders-b", "-o", "name")...); out != "connector/orders-b\n" {
		t.Errorf("restart the connector alone: %q", out)
	}
	if out := mustKcctl(t, append(s, "restart", "task", "orders-b/1")...); out != "task/orders-b/1 restarted\n" {
		t.Errorf("restart task: %q", out)
	}
	waitState(t, url, "orders-b", "RUNNING")

	// Errors: not found (exit 3, saying where the names are), usage (2).
	code, out, errOut := kcctl(t, append(s, "pause", "connector", "orders-a", "nope")...)
	if code != exitNotFound || out != "connector/orders-a paused\n" || !strings.Contains(errOut, `connector/nope: connector "nope" not found`) ||
		!strings.Contains(errOut, "kcctl get connectors") {
		t.Errorf("pause with an unknown name: exit %d, out %q, err %q", code, out, errOut)
	}
	if code, _, errOut := kcctl(t, append(s, "restart", "task", "orders-b/9")...); code != exitNotFound || !strings.Contains(errOut, "kcctl get tasks orders-b") {
		t.Errorf("restart an unknown task: exit %d, %q", code, errOut)
	}
	if code, _, _ := kcctl(t, append(s, "restart", "task", "nope/0")...); code != exitNotFound {
		t.Errorf("restart a task of an unknown connector: exit %d", code)
	}
	for _, args := range [][]string{
		{"pause", "connector"},
		{"pause", "connector", "orders-a", "-e", "x"},
		{"delete", "connector", "-e", "("},
		{"restart", "connector", "orders-a", "--tasks", "some"},
		{"restart", "task", "orders-a"},
		{"restart", "task", "orders-a/x"},
	} {
		if code, _, errOut := kcctl(t, append(s, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}

	// Delete with -e, then nothing matches.
	out = mustKcctl(t, append(s, "delete", "connector", "-e", "^orders-", "-o", "yaml")...)
	var del []actionResult
	if err := yaml.Unmarshal([]byte(out), &del); err != nil || len(del) != 2 || del[1].Result != "deleted" {
		t.Errorf("delete yaml: %v %q", err, out)
	}
	if names, _ := c.ConnectorNames(t.Context()); len(names) != 1 || names[0] != "other" {
		t.Errorf("after delete: %v", names)
	}
	code, out, errOut = kcctl(t, append(s, "delete", "connector", "-e", "^orders-")...)
	if code != exitNotFound || out != "" || !strings.Contains(errOut, `no connector matches -e "^orders-": 'kcctl get connectors' lists them`) {
		t.Errorf("delete -e matching none: exit %d, %q, %q", code, out, errOut)
	}
	if code, _, _ := kcctl(t, append(s, "delete", "connector", "orders-a")...); code != exitNotFound {
		t.Errorf("delete a deleted connector: exit %d", code)
	}
}

// waitStopped waits until connector name is STOPPED.
func waitStopped(t *testing.T, c *client.Client, name string) {
	t.Helper()
	waitUntil(t, func() (bool, string) {
		st, err := c.ConnectorStatus(t.Context(), name)
		return err == nil && st.Connector.State == "STOPPED", fmt.Sprintf("connector %s not STOPPED: %+v %v", name, st, err)
	})
}
