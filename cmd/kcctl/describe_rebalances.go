package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kcd-project/kcd/daemon/client"
	"github.com/kcd-project/kcd/tui/printer"
)

// maxDescribedRebalances is how many rebalances describe connector shows.
const maxDescribedRebalances = 5

// connectorRebalance is one rebalance of the journal that moved a
// connector's units: only those moves.
type connectorRebalance struct {
	Generation string          `json:"generation"`
	At         time.Time       `json:"at"`
	Triggers   []string        `json:"triggers"`
	Moves      []connectorMove `json:"moves"`
}

// connectorMove is one unit moved: "orders/connector" or "orders/0", from
// a worker ("" when it had none) to another.
type connectorMove struct {
	Unit   string `json:"unit"`
	From   string `json:"from"`
	To     string `json:"to"`
	Revoke bool   `json:"revoke,omitempty"`
}

// rebalancesOf reads the journal and keeps the latest rebalances that
// moved connector name or its tasks; the string says why it could not.
func rebalancesOf(ctx context.Context, c *client.Client, name string) ([]connectorRebalance, string) {
	all, err := c.Rebalances(ctx, 0) // the journal is bounded (100 by default)
	var apiErr *client.APIError
	if errors.As(err, &apiErr) && apiErr.Status == http.StatusNotFound {
		return nil, "the server keeps no rebalance journal: it is not kcd"
	}
	if err != nil {
		return nil, err.Error()
	}
	out := []connectorRebalance{}
	for _, rb := range all { // newest first
		var moves []connectorMove
		for _, m := range rb.Moves {
			if unitOf(m.Unit, name) {
				moves = append(moves, connectorMove{Unit: m.Unit, From: m.From, To: m.To, Revoke: m.Revoke})
			}
		}
		if len(moves) == 0 {
			continue
		}
		out = append(out, connectorRebalance{Generation: rb.Epoch.String(), At: rb.At, Triggers: rb.Triggers, Moves: moves})
		if len(out) == maxDescribedRebalances {
			break
		}
	}
	return out, ""
}

// unitOf tells whether unit (connector/connector or connector/N) is one of
// connector name's.
func unitOf(unit, name string) bool {
	rest, ok := strings.CutPrefix(unit, name+"/")
	if !ok {
		return false
	}
	if rest == "connector" {
		return true
	}
	_, err := strconv.Atoi(rest)
	return err == nil
}

// describeRebalances writes d's rebalances: a row per move, newest first.
func describeRebalances(w io.Writer, d connectorDetail, wide bool, now time.Time) error {
	fmt.Fprintln(w, "Rebalances:")
	switch {
	case d.RebalancesError != "":
		_, err := fmt.Fprintf(w, "  <unknown: %s>\n", d.RebalancesError)
		return err
	case len(d.Rebalances) == 0:
		_, err := fmt.Fprintln(w, "  <none in the journal>")
		return err
	}
	// TRIGGER last: it holds spaces ("connector created: orders").
	t := printer.Table{Header: []string{"  AGE", "UNIT", "FROM", "TO", "TRIGGER"}}
	if wide {
		t.Header = []string{"  AGE", "AT", "GENERATION", "UNIT", "FROM", "TO", "TRIGGER"}
	}
	for _, rb := range d.Rebalances {
		trigger := orNone(strings.Join(rb.Triggers, "; "))
		for _, m := range rb.Moves {
			to := m.To
			if m.Revoke {
				to += "(once-stopped)"
			}
			row := []string{"  " + printer.Age(now.Sub(rb.At)), m.Unit, orNone(m.From), to, trigger}
			if wide {
				row = []string{row[0], rb.At.UTC().Format(time.RFC3339), rb.Generation, m.Unit, orNone(m.From), to, trigger}
			}
			t.Rows = append(t.Rows, row)
		}
	}
	return printer.Print(w, "table", printer.Printable{Table: t})
}
