package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/internal/testenv"
)

func TestGetAndSetLoggers(t *testing.T) {
	url := startNode(t)
	k := func(args ...string) (int, string, string) {
		t.Helper()
		return kcctl(t, append([]string{"--server", url}, args...)...)
	}

	code, out, errOut := k("get", "loggers")
	if code != 0 {
		t.Fatalf("get loggers: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if !regexp.MustCompile(`^NAME\s+LEVEL\s+MODIFIED$`).MatchString(lines[0]) ||
		!regexp.MustCompile(`^root\s+INFO\s+<never>$`).MatchString(lines[1]) ||
		!regexp.MustCompile(`(?m)^coordinator\s+INFO\s+<never>$`).MatchString(out) {
		t.Errorf("get loggers table:\n%s", out)
	}
	code, out, _ = k("get", "loggers", "-o", "json")
	var all map[string]api.LoggerLevel
	if err := json.Unmarshal([]byte(out), &all); code != 0 || err != nil || all["rest"].Level != "INFO" || all["raft"].Level != "INFO" {
		t.Errorf("get loggers -o json: exit %d, %v\n%s", code, err, out)
	}

	// Worker scope: the node called changes, and says which loggers.
	code, out, errOut = k("set", "logger", "rest", "debug")
	if code != 0 || out != "logger/rest set to DEBUG on this node\n" {
		t.Fatalf("set logger: exit %d, %q %s", code, out, errOut)
	}
	code, out, _ = k("get", "logger", "rest", "-o", "yaml")
	if code != 0 || !strings.Contains(out, "rest:\n  last_modified: ") || !strings.Contains(out, "level: DEBUG") {
		t.Errorf("get logger -o yaml: exit %d\n%s", code, out)
	}
	code, out, _ = k("get", "logger", "rest", "-o", "wide")
	if code != 0 || !regexp.MustCompile(`(?m)^rest\s+DEBUG\s+\d+s\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`).MatchString(out) {
		t.Errorf("get logger -o wide: exit %d\n%s", code, out)
	}
	code, out, _ = k("get", "logger", "rest", "-o", "name")
	if code != 0 || out != "logger/rest\n" {
		t.Errorf("get logger -o name: exit %d %q", code, out)
	}

	// Root sets every logger.
	code, out, _ = k("set", "logger", "root", "WARN", "-o", "name")
	if code != 0 || !strings.HasPrefix(out, "logger/activestore\n") || !strings.Contains(out, "logger/root\n") || !strings.Contains(out, "logger/rest\n") {
		t.Errorf("set logger root -o name: exit %d\n%s", code, out)
	}
	code, out, _ = k("get", "loggers", "-o", "json")
	if err := json.Unmarshal([]byte(out), &all); code != 0 || err != nil || all["rest"].Level != "WARN" || all["herder"].Level != "WARN" {
		t.Errorf("after root=WARN: exit %d\n%s", code, out)
	}

	// Cluster scope: stored, applied here too before the answer.
	code, out, errOut = k("set", "logger", "rest", "ERROR", "--scope", "cluster", "-o", "json")
	var res loggerSet
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Scope != "cluster" || res.Level != "ERROR" {
		t.Fatalf("set --scope cluster: exit %d, %v %s %s", code, err, out, errOut)
	}
	code, out, _ = k("set", "logger", "rest", "ERROR", "--scope", "cluster", "-o", "wide")
	if code != 0 || !regexp.MustCompile(`^logger/rest set to ERROR on every node\nNAME\s+LEVEL\s+MODIFIED\s+MODIFIED-AT\nrest\s+ERROR\s+\d+s\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n$`).MatchString(out) {
		t.Errorf("set -o wide: exit %d\n%s", code, out)
	}
	if code, out, _ = k("get", "logger", "rest", "-o", "json"); !strings.Contains(out, `"level": "ERROR"`) {
		t.Errorf("rest after the cluster's level: exit %d %s", code, out)
	}

	// Completion: the server's logger names, then the levels.
	if _, out, _ := k("__complete", "set", "logger", ""); !strings.HasPrefix(out, "root\n") || !strings.Contains(out, "\ncoordinator\n") {
		t.Errorf("complete set logger NAME:\n%s", out)
	}
	if _, out, _ := k("__complete", "set", "logger", "rest", ""); !strings.HasPrefix(out, "TRACE\nDEBUG\nINFO\n") {
		t.Errorf("complete set logger rest LEVEL:\n%s", out)
	}
	if _, out, _ := k("__complete", "get", "loggers", "coo"); !strings.Contains(out, "coordinator\n") {
		t.Errorf("complete get loggers:\n%s", out)
	}

	// Mistakes: usage (2), not found (3).
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"set", "logger", "rest", "LOUD"}, exitUsage, `invalid log level "LOUD": use one of TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF`},
		{[]string{"set", "logger", "rest", "INFO", "--scope", "planet"}, exitUsage, `--scope "planet": use worker or cluster`},
		{[]string{"set", "logger", "rest"}, exitUsage, "accepts 2 arg(s)"},
		{[]string{"set", "logger", "nope", "DEBUG"}, exitNotFound, `logger "nope" not found: 'kcctl get loggers' lists them`},
		{[]string{"get", "logger", "nope"}, exitNotFound, `logger "nope" not found`},
	} {
		code, _, errOut := k(tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
}

// The same verbs against a real Kafka Connect, whose API kcd's mirrors.
func TestIntegrationLoggersOnKafkaConnect(t *testing.T) {
	url := testenv.Require(t, testenv.ConnectURL)
	code, out, errOut := kcctl(t, "--server", url, "get", "logger", "root", "-o", "json")
	var ls map[string]api.LoggerLevel
	if err := json.Unmarshal([]byte(out), &ls); code != 0 || err != nil || ls["root"].Level == "" {
		t.Fatalf("get logger root: exit %d, %v %s %s", code, err, out, errOut)
	}
	// A name of its own: the shared Kafka Connect keeps levels set by
	// earlier runs, and a level set again to the same value keeps its time.
	name := fmt.Sprintf("org.example.kcdtest.Loggers%x", rand.Uint32())
	code, out, errOut = kcctl(t, "--server", url, "set", "logger", name, "debug")
	if code != 0 || out != "logger/"+name+" set to DEBUG on this node\n" {
		t.Fatalf("set logger: exit %d %q %s", code, out, errOut)
	}
	code, out, _ = kcctl(t, "--server", url, "get", "loggers")
	if code != 0 || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s+DEBUG\s+\d+s$`).MatchString(out) {
		t.Errorf("get loggers: exit %d\n%s", code, out)
	}
}
