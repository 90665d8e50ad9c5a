package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
)

func TestParseConnectorSpecs(t *testing.T) {
	for _, tc := range []struct {
		in    string
		names []string
		cfg0  map[string]string
		err   string
	}{
		{in: `{"name": "a", "config": {"connector.class": "Datagen", "tasks.max": 2, "x": true}}`, names: []string{"a"},
			cfg0: map[string]string{"name": "a", "connector.class": "Datagen", "tasks.max": "2", "x": "true"}},
		{in: "name: b\nconnector.class: Datagen\nrate: 1.0\n---\nname: c\nconnector.class: Datagen\n", names: []string{"b", "c"},
			cfg0: map[string]string{"name": "b", "connector.class": "Datagen", "rate": "1.0"}},
		{in: `[{"name": "d", "config": {"k": "v"}}, {"name": "e", "k": "v"}]`, names: []string{"d", "e"},
			cfg0: map[string]string{"name": "d", "k": "v"}},
		{in: `{"config": {"name": "f", "k": "v"}}`, names: []string{"f"}, cfg0: map[string]string{"name": "f", "k": "v"}},
		{in: `{"k": "v"}`, err: "no name"},
		{in: `{"name": "g", "config": {"name": "h"}}`, err: "differ"},
		{in: "name: i\nk: [1, 2]\n", err: `setting "k"`},
		{in: "name: i\nk: null\n", err: "null"},
		{in: "", err: "no connector"},
		{in: "name: [", err: "document 1"},
	} {
		specs, err := parseConnectorSpecs([]byte(tc.in))
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
		var names []string
		for _, s := range specs {
			names = append(names, s.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.names, ",") {
			t.Errorf("%q: names %v", tc.in, names)
		}
		got, _ := json.Marshal(specs[0].Config)
		want, _ := json.Marshal(tc.cfg0)
		if !bytes.Equal(got, want) {
			t.Errorf("%q: config %s, want %s", tc.in, got, want)
		}
	}
}

func TestApplyAndPatch(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	c := client.New(url)
	dir := t.TempDir()
	file := filepath.Join(dir, "gen.yaml")
	write := func(body string) {
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("name: gen-1\nconnector.class: Datagen\ntopic: gen-1\ntasks.max: 1\n---\nname: gen-2\nconfig:\n  connector.class: Datagen\n  topic: gen-2\n  tasks.max: 1\n")

	// Dry run: valid, nothing written.
	if out := mustKcctl(t, append(s, "apply", "-f", file, "--dry-run")...); out != "connector/gen-1 created (dry run)\nconnector/gen-2 created (dry run)\n" {
		t.Errorf("dry run: %q", out)
	}
	if names, _ := c.ConnectorNames(t.Context()); len(names) != 0 {
		t.Fatalf("dry run created %v", names)
	}
	if out := mustKcctl(t, append(s, "apply", "-f", file)...); out != "connector/gen-1 created\nconnector/gen-2 created\n" {
		t.Errorf("apply: %q", out)
	}
	waitState(t, url, "gen-2", "RUNNING")
	if cfg, _ := c.ConnectorConfig(t.Context(), "gen-2"); cfg["tasks.max"] != "1" || cfg["topic"] != "gen-2" {
		t.Errorf("gen-2's config: %v", cfg)
	}

	// Again, and with a change, from stdin as JSON.
	var res []actionResult
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "apply", "-f", file, "-o", "json")...)), &res); err != nil ||
		len(res) != 2 || res[0].Result != "unchanged" {
		t.Errorf("re-apply: %+v %v", res, err)
	}
	var out, errOut bytes.Buffer
	root, _ := newRoot(&out, &errOut)
	root.SetIn(strings.NewReader(`[{"name": "gen-1", "config": {"connector.class": "Datagen", "topic": "gen-1", "tasks.max": "2"}}]`))
	root.SetArgs(append(s, "apply", "-f", "-"))
	if err := root.ExecuteContext(context.Background()); err != nil || out.String() != "connector/gen-1 configured\n" {
		t.Errorf("apply from stdin: %v %q %q", err, out.String(), errOut.String())
	}
	if cfg, _ := c.ConnectorConfig(t.Context(), "gen-1"); cfg["tasks.max"] != "2" {
		t.Errorf("gen-1 not updated: %v", cfg)
	}

	// Dry run of an invalid config: the plugin's errors, exit 1, nothing written.
	write(`{"name": "gen-1", "connector.class": "Datagen", "topic": "gen-1", "tasks.max": "-3"}`)
	code, stdout, stderr := kcctl(t, append(s, "apply", "-f", file, "--dry-run")...)
	if code != exitError || !strings.Contains(stdout, "connector/gen-1 invalid") || !strings.Contains(stderr, "connector/gen-1: tasks.max:") {
		t.Errorf("invalid dry run: exit %d, %q, %q", code, stdout, stderr)
	}
	if cfg, _ := c.ConnectorConfig(t.Context(), "gen-1"); cfg["tasks.max"] != "2" {
		t.Errorf("dry run changed gen-1: %v", cfg)
	}
	// A connector the server refuses is reported; the others are applied.
	write("name: gen-3\nconnector.class: NoSuchPlugin\n---\nname: gen-4\nconnector.class: Datagen\ntopic: gen-4\n")
	code, stdout, stderr = kcctl(t, append(s, "apply", "-f", file)...)
	if code != exitError || stdout != "connector/gen-4 created\n" || !strings.Contains(stderr, "Error: connector/gen-3: ") ||
		!strings.Contains(stderr, "1 of 2 connectors not applied") {
		t.Errorf("apply with a refused connector: exit %d, %q, %q", code, stdout, stderr)
	}
	if _, err := c.ConnectorConfig(t.Context(), "gen-4"); err != nil {
		t.Errorf("gen-4 not created after gen-3 was refused: %v", err)
	}
	for _, args := range [][]string{{"apply"}, {"apply", "-f", file, "extra"}} {
		if code, _, _ := kcctl(t, append(s, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d", args, code)
		}
	}
	if code, _, stderr := kcctl(t, append(s, "apply", "-f", filepath.Join(dir, "none.yaml"))...); code != exitError || !strings.Contains(stderr, "none.yaml") {
		t.Errorf("missing file: exit %d, %q", code, stderr)
	}

	// Patch: set and remove, keep the rest.
	if out := mustKcctl(t, append(s, "patch", "connector", "gen-1", "-s", "rate=7", "-s", "tasks.max=1", "-r", "topic.ignored")...); out != "connector/gen-1 patched\n" {
		t.Errorf("patch: %q", out)
	}
	var info api.ConnectorInfo
	if err := json.Unmarshal([]byte(mustKcctl(t, append(s, "patch", "connector", "gen-1", "-r", "rate", "-o", "json")...)), &info); err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Config["rate"]; ok || info.Config["tasks.max"] != "1" || info.Config["topic"] != "gen-1" {
		t.Errorf("after patch: %v", info.Config)
	}
	if code, _, stderr := kcctl(t, append(s, "patch", "connector", "nope", "-s", "a=b")...); code != exitNotFound || !strings.Contains(stderr, "kcctl get connectors") {
		t.Errorf("patch unknown: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{{"patch", "connector", "gen-1"}, {"patch", "connector", "gen-1", "-s", "novalue"}, {"patch", "connector", "gen-1", "-s", "a=1", "-r", "a"}} {
		if code, _, _ := kcctl(t, append(s, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d", args, code)
		}
	}
}
