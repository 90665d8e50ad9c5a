// Package migrateview prints kcctl's migrate commands: the plan of an
// import or export, its problems, and a read or import as it runs (a
// progress bar on a terminal, plain lines otherwise).
package migrateview

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/kcd-project/kcd/migrate"
	"github.com/kcd-project/kcd/tui/printer"
)

// PlanPrintable is a plan for every -o format: json and yaml are the whole
// plan, name the connectors, table one row per connector.
func PlanPrintable(p *migrate.Plan) printer.Printable {
	t := printer.Table{
		Header:     []string{"NAME", "TYPE", "KAFKA CONNECT", "KCD", "TASKS", "OFFSETS", "ACTION", "NOTES"},
		WideHeader: []string{"CLASS", "MISSING"},
	}
	var names []string
	for _, c := range p.Connectors {
		names = append(names, "connector/"+c.Name)
		action := orDash(c.Action)
		if c.Reason != "" {
			action += ": " + c.Reason
		}
		t.Rows = append(t.Rows, []string{c.Name, c.Type, c.From, c.Target, strconv.Itoa(c.Tasks),
			strconv.Itoa(c.SourceOffsets + c.SinkOffsets), action, orDash(strings.Join(c.Notes, "; "))})
		t.WideRows = append(t.WideRows, []string{c.Class, orDash(strings.Join(c.Missing, ", "))})
	}
	return printer.Printable{Data: p, Table: t, Names: names}
}

// Problems writes what a read noticed, for people: records it skipped or
// could not use (leftOut more that it did not keep), and offsets of
// connectors that no longer exist.
func Problems(w io.Writer, problems []migrate.Problem, orphans map[string]int, leftOut int) {
	if len(problems)+leftOut > 0 {
		fmt.Fprintf(w, "\n%d problem(s):\n", len(problems)+leftOut)
		for _, pr := range problems {
			fmt.Fprintf(w, "  %s\n", Problem(pr))
		}
		if leftOut > 0 {
			fmt.Fprintf(w, "  and %d more about single records, not listed (a read keeps the first %d)\n", leftOut, migrate.MaxProblems)
		}
	}
	if len(orphans) > 0 {
		names := slices.Sorted(maps.Keys(orphans))
		n := 0
		for _, c := range orphans {
			n += c
		}
		more := ""
		if len(names) > maxOrphanNames {
			more = fmt.Sprintf(" and %d more (-o json lists them)", len(names)-maxOrphanNames)
			names = names[:maxOrphanNames]
		}
		fmt.Fprintf(w, "\n%d offset(s) of %d deleted connector(s) not carried over: %s%s\n", n, len(orphans), strings.Join(names, ", "), more)
	}
}

// maxOrphanNames bounds the deleted connectors named on one line.
const maxOrphanNames = 10

// Problem is one problem on one line: where, then why.
func Problem(pr migrate.Problem) string {
	where := pr.Topic
	if pr.Partition >= 0 {
		where = fmt.Sprintf("%s[%d]", pr.Topic, pr.Partition)
	}
	if pr.Offset >= 0 {
		where += fmt.Sprintf("@%d", pr.Offset)
	}
	if pr.Key != "" {
		where += " key " + strconv.Quote(pr.Key)
	}
	if pr.Connector != "" {
		where += " (connector " + pr.Connector + ")"
	}
	return where + ": " + pr.Reason
}

// Summary counts a plan's connectors by action, for the line after it.
func Summary(p *migrate.Plan) string {
	count := map[string]int{}
	offsets := 0
	for _, c := range p.Connectors {
		count[orDash(c.Action)]++
		if c.Imported() {
			offsets += c.SourceOffsets + c.SinkOffsets
		}
	}
	if len(p.Connectors) == 0 {
		return "no connectors to import"
	}
	var parts []string
	for _, a := range slices.Sorted(maps.Keys(count)) {
		parts = append(parts, fmt.Sprintf("%d %s", count[a], a))
	}
	return fmt.Sprintf("%d connector(s): %s; %d offset(s) to write", len(p.Connectors), strings.Join(parts, ", "), offsets)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// WritePrintable is what an export wrote (or would write) into Kafka
// Connect's topics, for every -o format.
func WritePrintable(res migrate.WriteResult) printer.Printable {
	// -o wide: the consumer group that holds a sink's offsets.
	t := printer.Table{Header: []string{"NAME", "ACTION", "REASON"}, WideHeader: []string{"GROUP"}}
	var names []string
	for _, it := range res.Items {
		names = append(names, "connector/"+it.Name)
		t.Rows = append(t.Rows, []string{it.Name, it.Action, orDash(it.Reason)})
		t.WideRows = append(t.WideRows, []string{orDash(it.Group)})
	}
	return printer.Printable{Data: res, Table: t, Names: names}
}
