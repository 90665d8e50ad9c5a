package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

func TestUnitOf(t *testing.T) {
	for unit, want := range map[string]bool{
		"orders/connector": true, "orders/0": true, "orders/12": true,
		"orders-a/0": false, "orders/x": false, "other/connector": false, "orders": false,
	} {
		if unitOf(unit, "orders") != want {
			t.Errorf("unitOf(%q, orders) = %v", unit, !want)
		}
	}
}

// describe connector shows the rebalances that moved the connector or its
// tasks, and only those.
func TestDescribeConnectorRebalances(t *testing.T) {
	url := startNode(t)
	s := []string{"--server", url}
	datagen(t, url, "orders")
	datagen(t, url, "orders-b")
	worker := waitState(t, url, "orders", "RUNNING").Connector.WorkerID

	out := mustKcctl(t, append(s, "describe", "connector", "orders")...)
	_, section, ok := strings.Cut(out, "Rebalances:\n")
	if !ok {
		t.Fatalf("no Rebalances section:\n%s", out)
	}
	if !regexp.MustCompile(`^\s+AGE\s+UNIT\s+FROM\s+TO\s+TRIGGER\n`).MatchString(section) {
		t.Errorf("header:\n%s", section)
	}
	for _, unit := range []string{"orders/connector", "orders/0", "orders/1"} {
		row := regexp.MustCompile(`(?m)^\s+\d+s\s+` + regexp.QuoteMeta(unit) + `\s+<none>\s+` + regexp.QuoteMeta(worker) + `\s+(connector created|tasks changed): orders$`)
		if !row.MatchString(section) {
			t.Errorf("no row placing %s on %s:\n%s", unit, worker, section)
		}
	}
	if strings.Contains(section, "orders-b/") {
		t.Errorf("another connector's moves:\n%s", section)
	}

	out = mustKcctl(t, append(s, "describe", "connector", "orders", "-o", "wide")...)
	_, section, _ = strings.Cut(out, "Rebalances:\n")
	if !regexp.MustCompile(`(?m)^\s+AGE\s+AT\s+GENERATION\s+UNIT\s+FROM\s+TO\s+TRIGGER\n`).MatchString(section) ||
		!regexp.MustCompile(`(?m)^\s+\d+s\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\s+\d+\.\d+\s+orders/0\s+<none>\s+\S+\s+tasks changed: orders$`).MatchString(section) {
		t.Errorf("wide:\n%s", section)
	}

	var d connectorDetail
	out = mustKcctl(t, append(s, "describe", "connector", "orders", "-o", "json")...)
	if err := json.Unmarshal([]byte(out), &d); err != nil || len(d.Rebalances) == 0 || d.RebalancesError != "" {
		t.Fatalf("json: %v\n%s", err, out)
	}
	for _, rb := range d.Rebalances {
		if rb.At.IsZero() || len(rb.Triggers) == 0 || rb.Generation == "" {
			t.Errorf("rebalance without time, trigger or generation: %+v", rb)
		}
		for _, m := range rb.Moves {
			if !unitOf(m.Unit, "orders") {
				t.Errorf("move of another connector: %+v", m)
			}
		}
	}
}
