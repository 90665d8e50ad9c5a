package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/daemon/restapi"
)

func TestParseOffsets(t *testing.T) {
	for _, tc := range []struct {
		in, json, err string
	}{
		{in: `{"offsets": [{"partition": {"task": 0}, "offset": {"seq": 9007199254740993}}]}`,
			json: `{"offsets":[{"partition":{"task":0},"offset":{"seq":9007199254740993}}]}`},
		{in: "offsets:\n  - partition: {kafka_topic: t, kafka_partition: 2}\n    offset: {kafka_offset: 10}\n  - partition: {file: a}\n    offset: null\n",
			json: `{"offsets":[{"partition":{"kafka_partition":2,"kafka_topic":"t"},"offset":{"kafka_offset":10}},{"partition":{"file":"a"},"offset":null}]}`},
		{in: `{"offsets": []}`, err: "no offsets"},
		{in: "", err: "no offsets"},
		{in: `{"offset": []}`, err: "field offset not found"},
		{in: `{"offsets": [{"offset": {"seq": 1}}]}`, err: "offset 1 has no partition"},
		{in: "offsets: [{partition: {a: 1}, offset: {b: 2}}]\n---\noffsets: []\n", err: "more than one document"},
		{in: `[{"partition": {"a": 1}}]`, err: "give {\"offsets\""},
	} {
		offs, err := parseOffsets([]byte(tc.in))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: error %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		if b, _ := json.Marshal(offs); string(b) != tc.json {
			t.Errorf("%q: sends %s, want %s", tc.in, b, tc.json)
		}
	}
}

// waitOffsets waits until connector name has n offsets and returns them.
func waitOffsets(t *testing.T, c *client.Client, name string, n int) api.ConnectorOffsets {
	t.Helper()
	var offs api.ConnectorOffsets
	waitUntil(t, func() (bool, string) {
		var err error
		offs, err = c.ConnectorOffsets(t.Context(), name)
		return err == nil && len(offs.Offsets) == n, fmt.Sprintf("connector %s has not %d offsets: %+v %v", name, n, offs, err)
	})
	return offs
}

// waitOffsetsChangeable waits until connector name is stopped as the
// offsets API requires: STOPPED, no task configs, no task owning its unit.
func waitOffsetsChangeable(t *testing.T, url, name string) {
	t.Helper()
	c := client.New(url)
	waitUntil(t, func() (bool, string) {
		st, err := c.ConnectorStatus(t.Context(), name)
		ok := err == nil && st.Connector.State == "STOPPED"
		for _, tk := range st.Tasks {
			ok = ok && tk.State != "RUNNING" && tk.State != "PAUSED" && tk.State != "RESTARTING"
		}
		// The offsets API also waits until no task owns its unit.
		units, aerr := c.Assignments(t.Context())
		ok = ok && aerr == nil
		for _, u := range units {
			ok = ok && !(u.Connector == name && u.Task != nil)
		}
		var tasks []any
		if res, err := http.Get(url + "/connectors/" + name + "/tasks"); err == nil {
			ok = ok && res.StatusCode == http.StatusOK && json.NewDecoder(res.Body).Decode(&tasks) == nil && len(tasks) == 0
			res.Body.Close()
		} else {
			ok = false
		}
		return ok, fmt.Sprintf("connector %s not stopped: %+v %v, tasks %v", name, st, err, tasks)
	})
}

func TestOffsetsVerbs(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	c := client.New(url)
	// A source that committed offsets for both its tasks, then stopped, as
	// Kafka Connect requires before they change.
	cfg := map[string]string{"connector.class": "Datagen", "topic": "gen", "tasks.max": "2", "rate": "20", "offset.flush.interval.ms": "100"}
	if _, err := c.PutConnectorConfig(t.Context(), "gen", cfg); err != nil {
		t.Fatal(err)
	}
	waitOffsets(t, c, "gen", 2)
	mustKcctl(t, append(s, "stop", "connector", "gen")...)
	waitOffsetsChangeable(t, url, "gen")

	out := mustKcctl(t, append(s, "get", "offsets", "gen")...)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "PARTITION OFFSET" {
		t.Fatalf("table:\n%s", out)
	}
	for i, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 2 || !strings.HasPrefix(f[0], `{"task":`) || !strings.HasPrefix(f[1], `{"seq":`) {
			t.Errorf("row %d: %q", i, l)
		}
	}
	var js api.ConnectorOffsets
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "get", "offsets", "gen", "-o", "json")...)), &js); err != nil {
		t.Fatal(err)
	}
	if len(js.Offsets) != 2 || js.Offsets[0].Partition["task"] == nil || js.Offsets[0].Offset["seq"] == nil {
		t.Errorf("json: %+v", js)
	}
	var ym map[string][]map[string]map[string]any
	if err := yaml.Unmarshal([]byte(mustKcctl(t, append(s, "get", "offsets", "gen", "-o", "yaml")...)), &ym); err != nil {
		t.Fatal(err)
	}
	if len(ym["offsets"]) != 2 || ym["offsets"][1]["partition"]["task"] == nil {
		t.Errorf("yaml: %v", ym)
	}
	if out := mustKcctl(t, append(s, "get", "offsets", "gen", "-o", "name")...); out != "offsets/gen\n" {
		t.Errorf("name: %q", out)
	}

	// Patch from YAML: task 0's offset set, task 1's kept.
	file := filepath.Join(t.TempDir(), "offsets.yaml")
	if err := os.WriteFile(file, []byte("offsets:\n  - partition: {task: 0}\n    offset: {seq: 1000}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := mustKcctl(t, append(s, "patch", "offsets", "gen", "-f", file)...); !strings.HasPrefix(out, "offsets/gen patched: The Connect framework-managed offsets for this connector have been altered successfully.") {
		t.Errorf("patch: %q", out)
	}
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "get", "offsets", "gen", "-o", "json")...)), &js); err != nil {
		t.Fatal(err)
	}
	seqs := map[float64]float64{}
	for _, o := range js.Offsets {
		seqs[o.Partition["task"].(float64)], _ = o.Offset["seq"].(float64)
	}
	if len(seqs) != 2 || seqs[0] != 1000 || seqs[1] == 1000 {
		t.Errorf("after patch: %+v", js)
	}
	// From stdin as JSON: what get offsets -o json prints goes back as is.
	var out2, errOut bytes.Buffer
	root, _ := newRoot(&out2, &errOut)
	root.SetIn(strings.NewReader(`{"offsets": [{"partition": {"task": 1}, "offset": {"seq": 7}}]}`))
	root.SetArgs(append(s, "patch", "offsets", "gen", "-f", "-", "-o", "name"))
	if err := root.ExecuteContext(t.Context()); err != nil || out2.String() != "offsets/gen\n" {
		t.Errorf("patch from stdin: %v %q %q", err, out2.String(), errOut.String())
	}
	if out := strings.Join(strings.Fields(mustKcctl(t, append(s, "get", "offsets", "gen")...)), " "); !strings.Contains(out, `{"task":0} {"seq":1000}`) || !strings.Contains(out, `{"task":1} {"seq":7}`) {
		t.Errorf("after patch from stdin:\n%s", out)
	}
	var msg api.Message
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "patch", "offsets", "gen", "-f", file, "-o", "json")...)), &msg); err != nil || !strings.Contains(msg.Message, "altered") {
		t.Errorf("patch json: %+v %v", msg, err)
	}

	// Delete: none left.
	if out := mustKcctl(t, append(s, "delete", "offsets", "gen")...); !strings.HasPrefix(out, "offsets/gen deleted: The Connect framework-managed offsets for this connector have been reset successfully.") {
		t.Errorf("delete: %q", out)
	}
	if out := mustKcctl(t, append(s, "get", "offsets", "gen")...); out != "no offsets\n" {
		t.Errorf("after delete: %q", out)
	}
	if out := mustKcctl(t, append(s, "get", "offsets", "gen", "-o", "json")...); strings.Join(strings.Fields(out), "") != `{"offsets":[]}` {
		t.Errorf("json after delete: %q", out)
	}

	// Errors: not found 3, usage 2, a running connector 1 saying to stop it.
	for _, args := range [][]string{
		{"get", "offsets", "nope"},
		{"patch", "offsets", "nope", "-f", file},
		{"delete", "offsets", "nope"},
	} {
		code, _, errOut := kcctl(t, append(s, args...)...)
		if code != exitNotFound || !strings.Contains(errOut, `connector "nope" not found`) || !strings.Contains(errOut, "kcctl get connectors") {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	for _, args := range [][]string{
		{"get", "offsets"},
		{"get", "offsets", "gen", "-e", "g"},
		{"delete", "offsets", "-e", "("},
		{"patch", "offsets", "gen"},
		{"delete", "offsets"},
		{"get", "offsets", "gen", "-o", "xml"},
	} {
		if code, _, errOut := kcctl(t, append(s, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, %q", args, code, errOut)
		}
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"offsets": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := kcctl(t, append(s, "patch", "offsets", "gen", "-f", bad)...); code != exitError || !strings.Contains(errOut, "no offsets") {
		t.Errorf("patch with no offsets: exit %d, %q", code, errOut)
	}
	mustKcctl(t, append(s, "resume", "connector", "gen")...)
	waitState(t, url, "gen", "RUNNING")
	for _, args := range [][]string{{"patch", "offsets", "gen", "-f", file}, {"delete", "offsets", "gen"}} {
		code, _, errOut := kcctl(t, append(s, args...)...)
		if code != exitError || !strings.Contains(errOut, "'kcctl stop connector gen' first") {
			t.Errorf("%v of a running connector: exit %d, %q", args, code, errOut)
		}
	}
}

func TestGetWorkersAndMembers(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}

	// get workers is worker list (the session's start may move between the
	// two calls).
	workers := func(args ...string) []restapi.WorkerView {
		t.Helper()
		var ws []restapi.WorkerView
		if err := json.Unmarshal([]byte(mustKcctl(t, append(s, args...)...)), &ws); err != nil {
			t.Fatal(err)
		}
		for i := range ws {
			ws[i].Since = time.Time{}
		}
		return ws
	}
	// The node's worker registers a moment after the node answers.
	waitUntil(t, func() (bool, string) {
		ws := workers("worker", "list", "-o", "json")
		return len(ws) == 1, fmt.Sprintf("workers %+v", ws)
	})
	if got, want := workers("get", "workers", "-o", "json"), workers("worker", "list", "-o", "json"); len(got) != 1 || !reflect.DeepEqual(got, want) {
		t.Errorf("get workers -o json: %+v, worker list: %+v", got, want)
	}
	var ym []map[string]any
	if err := yaml.Unmarshal([]byte(mustKcctl(t, append(s, "get", "workers", "-o", "yaml")...)), &ym); err != nil || len(ym) != 1 || ym[0]["state"] != "alive" {
		t.Errorf("get workers -o yaml: %v %v", ym, err)
	}
	if got, want := mustKcctl(t, append(s, "get", "workers", "-o", "name")...), mustKcctl(t, append(s, "worker", "list", "-o", "name")...); got != want || !strings.HasPrefix(got, "worker/") {
		t.Errorf("get workers -o name: %q, worker list: %q", got, want)
	}
	out := mustKcctl(t, append(s, "get", "workers", "-o", "wide")...)
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 2 ||
		strings.Join(strings.Fields(lines[0]), " ") != "ID STATE NODE WEIGHT DRAINING CONNECTORS TASKS AGE REST-URL GONE" ||
		!strings.Contains(lines[1], "alive") {
		t.Errorf("get workers -o wide:\n%s", out)
	}

	// get members is the members table of cluster status.
	out = mustKcctl(t, append(s, "get", "members")...)
	status := mustKcctl(t, append(s, "cluster", "status")...)
	_, table, ok := strings.Cut(status, "\n\n")
	if !ok || out != table || !strings.HasPrefix(out, "ID ") || strings.Count(out, "\n") != 2 {
		t.Errorf("get members:\n%s\ncluster status:\n%s", out, status)
	}
	if out := mustKcctl(t, append(s, "get", "members", "-o", "wide")...); !strings.Contains(out, "LAST-CONTACT") {
		t.Errorf("get members -o wide:\n%s", out)
	}
	var ms []restapi.MemberInfo
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "get", "members", "-o", "json")...)), &ms); err != nil {
		t.Fatal(err)
	}
	if len(ms) != 1 || ms[0].ID == 0 || ms[0].Raft == "" {
		t.Errorf("get members json: %+v", ms)
	}
	if err := yaml.Unmarshal([]byte(mustKcctl(t, append(s, "get", "members", "-o", "yaml")...)), &ms); err != nil || len(ms) != 1 {
		t.Errorf("get members yaml: %+v %v", ms, err)
	}
	if got, want := mustKcctl(t, append(s, "get", "members", "-o", "name")...), mustKcctl(t, append(s, "cluster", "status", "-o", "name")...); got != want || !strings.HasPrefix(got, "member/") {
		t.Errorf("get members -o name: %q, cluster status: %q", got, want)
	}
	// Neither takes arguments: completion offers no file names.
	for _, what := range []string{"members", "workers"} {
		if out := mustKcctl(t, append(s, "__complete", "get", what, "")...); !strings.HasPrefix(out, ":4\n") {
			t.Errorf("completion of get %s: %q", what, out)
		}
	}
	if code, _, _ := kcctl(t, append(s, "get", "members", "x")...); code != exitUsage {
		t.Errorf("get members x: exit %d", code)
	}
}
