package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/daemon/client"
)

// -e REGEX on the verbs that took one connector: describe and patch
// connector, and the offsets verbs; a bad regex is a usage error (2), one matching nothing is
// not found (3), on every bulk verb.
func TestBulkRegexOnPatchAndOffsets(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	c := client.New(url)
	datagen(t, url, "orders-a")
	datagen(t, url, "orders-b")
	datagen(t, url, "other")

	out := mustKcctl(t, append(s, "patch", "connector", "-e", "^orders-", "-s", "rate=7")...)
	if out != "connector/orders-a patched\nconnector/orders-b patched\n" {
		t.Errorf("patch -e: %q", out)
	}
	for name, want := range map[string]string{"orders-a": "7", "orders-b": "7", "other": "5"} {
		cfg, err := c.ConnectorConfig(t.Context(), name)
		if err != nil || cfg["rate"] != want {
			t.Errorf("%s: rate %q, want %s (%v)", name, cfg["rate"], want, err)
		}
	}
	// Several connectors in JSON: each result with its new config.
	var res []actionResult
	out = mustKcctl(t, append(s, "patch", "connector", "orders-a", "other", "-r", "rate", "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 2 || res[1].Connector != "other" || res[1].Result != "patched" || res[1].Data == nil {
		t.Errorf("patch two -o json: %v\n%s", err, out)
	}

	// describe -e: each connector in turn; JSON, a list.
	out = mustKcctl(t, append(s, "describe", "connector", "-e", "^orders-")...)
	if strings.Count(out, "\nName:") != 1 || !strings.HasPrefix(out, "Name:    orders-a\n") || !strings.Contains(out, "\n\nName:    orders-b\n") || strings.Contains(out, "other") {
		t.Errorf("describe -e:\n%s", out)
	}
	var ds []connectorDetail
	out = mustKcctl(t, append(s, "describe", "connector", "orders-b", "other", "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &ds); err != nil || len(ds) != 2 || ds[0].Name != "orders-b" || ds[1].Config["rate"] != "" {
		t.Errorf("describe two -o json: %v\n%s", err, out)
	}

	mustKcctl(t, append(s, "stop", "connector", "-e", "^orders-")...)
	waitOffsetsChangeable(t, url, "orders-a")
	waitOffsetsChangeable(t, url, "orders-b")

	file := filepath.Join(t.TempDir(), "offsets.json")
	if err := os.WriteFile(file, []byte(`{"offsets": [{"partition": {"task": 0}, "offset": {"seq": 42}}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	out = mustKcctl(t, append(s, "patch", "offsets", "-e", "^orders-", "-f", file)...)
	if !regexp.MustCompile(`^offsets/orders-a patched: .*altered successfully\..*\noffsets/orders-b patched: .*altered successfully\..*\n$`).MatchString(out) {
		t.Errorf("patch offsets -e: %q", out)
	}
	out = mustKcctl(t, append(s, "get", "offsets", "-e", "^orders-")...)
	if !regexp.MustCompile(`^CONNECTOR\s+PARTITION\s+OFFSET\n`).MatchString(out) || strings.Contains(out, "other") ||
		!regexp.MustCompile(`(?m)^orders-a\s+\{"task":0\}\s+\{"seq":42\}$`).MatchString(out) ||
		!regexp.MustCompile(`(?m)^orders-b\s+\{"task":0\}\s+\{"seq":42\}$`).MatchString(out) {
		t.Errorf("get offsets -e:\n%s", out)
	}
	var all map[string]api.ConnectorOffsets
	out = mustKcctl(t, append(s, "get", "offsets", "orders-a", "orders-b", "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &all); err != nil || len(all) != 2 || len(all["orders-b"].Offsets) == 0 || !strings.Contains(out, `"seq": 42`) {
		t.Errorf("get offsets of two -o json: %v\n%s", err, out)
	}
	out = mustKcctl(t, append(s, "delete", "offsets", "-e", "^orders-", "-o", "name")...)
	if out != "offsets/orders-a\noffsets/orders-b\n" {
		t.Errorf("delete offsets -e -o name: %q", out)
	}
	waitUntil(t, func() (bool, string) {
		offs, err := c.ConnectorOffsets(t.Context(), "orders-b")
		return err == nil && len(offs.Offsets) == 0, "orders-b's offsets are still there"
	})

	for _, verb := range [][]string{
		{"describe", "connector"},
		{"patch", "connector", "-s", "a=b"},
		{"get", "offsets"},
		{"patch", "offsets", "-f", file},
		{"delete", "offsets"},
		{"pause", "connector"},
		{"resume", "connector"},
		{"stop", "connector"},
		{"restart", "connector"},
		{"delete", "connector"},
	} {
		code, out, errOut := kcctl(t, append(append(s, verb...), "-e", "^nothing-")...)
		if code != exitNotFound || out != "" || !strings.Contains(errOut, `no connector matches -e "^nothing-": 'kcctl get connectors' lists them`) {
			t.Errorf("%v -e matching none: exit %d, %q, %q", verb, code, out, errOut)
		}
		code, _, errOut = kcctl(t, append(append(s, verb...), "-e", "(orders")...)
		if code != exitUsage || !strings.Contains(errOut, `-e "(orders" is not a regular expression`) {
			t.Errorf("%v -e with a bad regex: exit %d, %q", verb, code, errOut)
		}
	}
}
