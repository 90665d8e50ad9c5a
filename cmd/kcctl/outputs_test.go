package main

import (
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kcd-project/kcd/daemon/client"
)

// nameLine is one line of -o name: kind/name.
var nameLine = regexp.MustCompile(`^[a-z-]+/\S+$`)

// Every command that prints takes -o: its wide form differs from its
// table, and its name form prints kind/name lines. The read commands are
// run here; the others are named with the test that checks them, so that
// a new command with -o fails this test until it is checked somewhere.
func TestEveryOutputFormatIsDistinct(t *testing.T) {
	t.Setenv("KCCTL_CONFIG", filepath.Join(t.TempDir(), "config.yaml"))
	url := startNode(t)
	c := client.New(url)
	// A source with offsets, so that get offsets has rows.
	cfg := map[string]string{"connector.class": "Datagen", "topic": "gen", "tasks.max": "2", "rate": "20", "offset.flush.interval.ms": "100"}
	if _, err := c.PutConnectorConfig(t.Context(), "gen", cfg); err != nil {
		t.Fatal(err)
	}
	waitOffsets(t, c, "gen", 2)
	mustKcctl(t, "config", "set-context", "local", "--server", url)

	run := map[string][]string{
		"kcctl get connectors":      {"get", "connectors"},
		"kcctl get tasks":           {"get", "tasks"},
		"kcctl get plugins":         {"get", "plugins"},
		"kcctl get offsets":         {"get", "offsets", "gen"},
		"kcctl get workers":         {"get", "workers"},
		"kcctl get members":         {"get", "members"},
		"kcctl get loggers":         {"get", "loggers"},
		"kcctl describe connector":  {"describe", "connector", "gen"},
		"kcctl cluster status":      {"cluster", "status"},
		"kcctl version":             {"version"},
		"kcctl assignments":         {"assignments"},
		"kcctl rebalance history":   {"rebalance", "history"},
		"kcctl rebalance plan":      {"rebalance", "plan"},
		"kcctl worker list":         {"worker", "list"},
		"kcctl store status":        {"store", "status"},
		"kcctl config get-contexts": {"config", "get-contexts"},
	}
	elsewhere := map[string]string{
		"kcctl apply":                   "TestWideAndNameOfChangeCommands",
		"kcctl delete connector":        "TestWideAndNameOfChangeCommands",
		"kcctl pause connector":         "TestWideAndNameOfChangeCommands",
		"kcctl resume connector":        "TestWideAndNameOfChangeCommands",
		"kcctl restart connector":       "TestWideAndNameOfChangeCommands",
		"kcctl restart task":            "TestWideAndNameOfChangeCommands",
		"kcctl patch connector":         "TestWideAndNameOfChangeCommands",
		"kcctl set logger":              "TestWideAndNameOfChangeCommands",
		"kcctl worker weight":           "TestWideAndNameOfChangeCommands",
		"kcctl worker drain":            "TestWideAndNameOfChangeCommands",
		"kcctl worker undrain":          "TestWideAndNameOfChangeCommands",
		"kcctl stop connector":          "TestBulkRegexOnPatchAndOffsets (the same bulk printer as pause)",
		"kcctl patch offsets":           "TestBulkRegexOnPatchAndOffsets, TestOffsetsVerbs",
		"kcctl delete offsets":          "TestBulkRegexOnPatchAndOffsets, TestOffsetsVerbs",
		"kcctl cluster remove":          "TestClusterChangesWide",
		"kcctl cluster transfer-leader": "TestClusterChangesWide",
		"kcctl cluster add":             "TestClusterChangesWide",
		"kcctl store switch":            "TestStoreSwitchWide",
		"kcctl migrate from-kafka":      "the migrate integration tests (wide adds CLASS, MISSING)",
		"kcctl migrate to-kafka":        "TestWriteTable (tui/migrateview: wide adds GROUP)",
	}

	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Flags().Lookup("output") != nil {
			path := c.CommandPath()
			args, ok := run[path]
			if _, other := elsewhere[path]; !ok && !other {
				t.Errorf("%s takes -o but no test checks its formats: add it here", path)
			}
			if ok {
				checkFormats(t, url, path, args)
			}
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(newRootCmd(io.Discard, io.Discard))
}

func checkFormats(t *testing.T, url, path string, args []string) {
	t.Helper()
	table := ok(t, url, args...)
	wide := ok(t, url, append(args, "-o", "wide")...)
	if wide == table {
		t.Errorf("%s: -o wide equals the table:\n%s", path, table)
	}
	names := ok(t, url, append(args, "-o", "name")...)
	lines := strings.Split(strings.TrimSuffix(names, "\n"), "\n")
	for _, l := range lines {
		if !nameLine.MatchString(l) {
			t.Errorf("%s -o name: %q is not kind/name:\n%s", path, l, names)
		}
	}
}
