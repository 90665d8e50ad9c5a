package migrateview

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kcd-project/kcd/api"
	"github.com/kcd-project/kcd/migrate"
	"github.com/kcd-project/kcd/tui/printer"
)

func testPlan() *migrate.Plan {
	return &migrate.Plan{
		Connectors: []migrate.PlanConnector{
			{Name: "src", Class: "FileStreamSource", Type: "source", From: "STARTED", Target: "STARTED", Tasks: 1, SourceOffsets: 3, Action: api.ImportCreate},
			{Name: "dbz", Class: "io.debezium.X", Type: "source", From: "PAUSED", Target: "STOPPED", Action: api.ImportExists, Reason: "another config",
				Missing: []string{"connector io.debezium.X"}, Notes: []string{"imported STOPPED: kcd lacks connector io.debezium.X"}},
		},
		Problems: []migrate.Problem{{Topic: "connect-configs", Partition: 0, Offset: 7, Key: "bogus", Reason: "unknown key"}, {Topic: "connect-offsets", Partition: -1, Offset: -1, Reason: "not compacted"}},
		Orphans:  map[string]int{"gone": 2, "old": 1},
	}
}

func TestPlanTable(t *testing.T) {
	var b bytes.Buffer
	if err := printer.Print(&b, "table", PlanPrintable(testPlan())); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"NAME", "src", "STARTED", "create", "dbz", "exists: another config", "imported STOPPED: kcd lacks connector io.debezium.X"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "MISSING") {
		t.Errorf("the table shows wide columns:\n%s", out)
	}
	b.Reset()
	if err := printer.Print(&b, "wide", PlanPrintable(testPlan())); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "MISSING") || !strings.Contains(b.String(), "io.debezium.X") {
		t.Errorf("wide lacks the missing plugins:\n%s", b.String())
	}
	b.Reset()
	if err := printer.Print(&b, "name", PlanPrintable(testPlan())); err != nil || b.String() != "connector/src\nconnector/dbz\n" {
		t.Errorf("names: %q %v", b.String(), err)
	}
}

func TestProblemsAndSummary(t *testing.T) {
	var b bytes.Buffer
	p := testPlan()
	Problems(&b, p.Problems, p.Orphans, 0)
	out := b.String()
	for _, want := range []string{`connect-configs[0]@7 key "bogus": unknown key`, "connect-offsets: not compacted", "3 offset(s) of 2 deleted connector(s) not carried over: gone, old"} {
		if !strings.Contains(out, want) {
			t.Errorf("problems lack %q:\n%s", want, out)
		}
	}
	if s := Summary(p); s != "2 connector(s): 1 create, 1 exists; 3 offset(s) to write" {
		t.Errorf("Summary = %q", s)
	}
}

// A problem of a partition without a record (truncated) names the
// partition; one of the topic names only the topic; the problems a read
// did not keep are counted.
func TestProblemWhere(t *testing.T) {
	for _, c := range []struct {
		pr   migrate.Problem
		want string
	}{
		{migrate.Problem{Topic: "connect-offsets", Partition: 3, Offset: -1, Reason: "truncated"}, "connect-offsets[3]: truncated"},
		{migrate.Problem{Topic: "connect-offsets", Partition: 0, Offset: -1, Reason: "truncated"}, "connect-offsets[0]: truncated"},
		{migrate.Problem{Topic: "connect-offsets", Partition: -1, Offset: -1, Reason: "not compacted"}, "connect-offsets: not compacted"},
		{migrate.Problem{Topic: "connect-status", Partition: 2, Offset: 9, Connector: "a", Reason: "bad"}, "connect-status[2]@9 (connector a): bad"},
	} {
		if got := Problem(c.pr); got != c.want {
			t.Errorf("Problem(%+v) = %q, want %q", c.pr, got, c.want)
		}
	}
	var b bytes.Buffer
	Problems(&b, []migrate.Problem{{Topic: "connect-configs", Partition: 0, Offset: 1, Reason: "bad"}}, nil, 41)
	if want := "\n42 problem(s):\n  connect-configs[0]@1: bad\n  and 41 more about single records, not listed (a read keeps the first 1000)\n"; b.String() != want {
		t.Errorf("problems:\n%q\nwant\n%q", b.String(), want)
	}
}

func TestLines(t *testing.T) {
	var b bytes.Buffer
	l := &Lines{W: &b, Every: time.Hour}
	l.Report(migrate.Progress{Topic: "connect-configs", Read: 0, Total: 10})
	l.Report(migrate.Progress{Topic: "connect-configs", Read: 5, Total: 10}) // within Every: quiet
	l.Report(migrate.Progress{Topic: "connect-configs", Read: 10, Total: 10})
	l.Report(migrate.Progress{Topic: "connect-offsets", Read: 1, Total: 2})
	want := "reading connect-configs: 0/10 records\nreading connect-configs: 10/10 records\nreading connect-offsets: 1/2 records\n"
	if b.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestBarRender(t *testing.T) {
	m := Bar{p: migrate.Progress{Topic: "connect-offsets", Read: 50, Total: 100}}
	if f := Fraction(m.p); f != 0.5 {
		t.Errorf("Fraction = %v", f)
	}
	if r := m.Render(); !strings.Contains(r, "reading connect-offsets") || !strings.Contains(r, "50/100 records") {
		t.Errorf("Render = %q", r)
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	res := migrate.WriteResult{Items: []migrate.WriteItem{{Name: "a", Action: migrate.ActionCreate}, {Name: "b", Action: migrate.ActionExists, Reason: "config differs"}}}
	if err := printer.Print(&b, "table", WritePrintable(res)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"NAME", "a", "create", "b", "exists", "config differs"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "GROUP") {
		t.Errorf("table has the wide column:\n%s", b.String())
	}
	// -o wide names the group of a sink's offsets.
	b.Reset()
	res.Items[0].Group = "connect-a"
	if err := printer.Print(&b, "wide", WritePrintable(res)); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^NAME\s+ACTION\s+REASON\s+GROUP\na\s+create\s+-\s+connect-a\nb\s+exists\s+config differs\s+-$`).MatchString(b.String()) {
		t.Errorf("wide:\n%s", b.String())
	}
}

func TestProblemsCapOrphanNames(t *testing.T) {
	orphans := map[string]int{}
	for i := range 25 {
		orphans[fmt.Sprintf("c%02d", i)] = 1
	}
	var b bytes.Buffer
	Problems(&b, nil, orphans, 0)
	if !strings.Contains(b.String(), "25 offset(s) of 25 deleted connector(s)") || !strings.Contains(b.String(), "c09 and 15 more") || strings.Contains(b.String(), "c10") {
		t.Errorf("orphans:\n%s", b.String())
	}
	if s := Summary(&migrate.Plan{}); s != "no connectors to import" {
		t.Errorf("Summary of nothing = %q", s)
	}
}
